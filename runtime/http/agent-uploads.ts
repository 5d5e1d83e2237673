/**
 * @module The agent's upload endpoint (DESIGN §7a, issue 34 §3; docs/agent.md "Attachments"), mounted
 * at `/api/_agent` after authentication:
 * - `POST /uploads`: multipart (one part named `file`), signed-in callers only (anonymous → 401); the
 *   upload belongs to the caller's identity. 201 `{ uploadId, name, type, size }` with `type` sniffed
 *   from the bytes; 413 PAYLOAD_TOO_LARGE past `agent.attachments.maxBytes`, 415
 *   UNSUPPORTED_MEDIA_TYPE for bytes of a type not in `agent.attachments.types` (or a body that is
 *   not multipart), 400 VALIDATION_FAILED for a malformed body, 429 RATE_LIMITED for an identity that
 *   holds 50 uploads no message used yet.
 * - `GET`/`HEAD /uploads/{uploadId}`: the bytes, through the signed url `history` gives (`?v=…&exp=…&sig=…`,
 *   no credentials needed) or with the owner's credentials; anyone else's upload is 404 (401 anonymous).
 * - `DELETE /uploads/{uploadId}`: the owner removes an upload no message used yet (204); a used one
 *   goes with its thread (409).
 * - `/uploads/tus[/{upload}]`: the same upload, resumable (tus 1.0.0, runtime/blobs/tus.ts): signed-in
 *   callers only, an upload id bound to its identity (another's is 404); the last `PATCH` answers 200
 *   `{ uploadId, name, type, size }` (or 413/415 as above). The file name is `Upload-Metadata` `filename`.
 * Errors are the DESIGN §4 body.
 */
import { Router, type Request, type Response } from 'express';
import { create as contentDisposition } from 'content-disposition';
import { callerOf, type Caller } from '../auth/caller.js';
import { HttpError } from '../errors.js';
import type { BlobUrlSigner } from '../blobs/signed-url.js';
import type { TusUploads } from '../blobs/tus.js';
import { AgentUploads, type UploadRow } from '../agent/uploads.js';

/** The caller's identity id; anonymous callers are refused. */
function ownerOf(caller: Caller): string {
  if (caller.kind === 'anonymous' || caller.id === null) throw new HttpError('UNAUTHORIZED', 'agent uploads need a signed-in user or service account');
  return caller.id;
}

/** The router; mount it at `/api/_agent` after authentication, before any body parser. */
export function agentUploadsRouter(uploads: AgentUploads, signer: BlobUrlSigner | undefined, tus?: TusUploads): Router {
  const router = Router();
  const notFound = (id: string) => new HttpError('NOT_FOUND', `no upload ${JSON.stringify(id)}`);

  /** The upload of the path, readable by this request: a valid signature for it, or its owner's credentials. */
  async function readable(req: Request, res: Response): Promise<UploadRow> {
    const id = String(req.params.id);
    const query = req.query as Record<string, string | string[] | undefined>;
    const signed = signer !== undefined && signer.verify(AgentUploads.path(id), query);
    const row = await uploads.row(id);
    if (signed) {
      if (!row || query.v !== row.id) throw notFound(id);
      return row;
    }
    const owner = ownerOf(callerOf(res));
    if (!row || row.identityId !== owner) throw notFound(id);
    return row;
  }

  if (tus)
    router.all(['/uploads/tus', '/uploads/tus/:upload'], async (req: Request, res: Response) => {
      const owner = req.method === 'OPTIONS' ? '' : ownerOf(callerOf(res));
      await tus.serve(uploads.tusTarget(owner), req.params.upload as string | undefined, req, res, 'this identity');
    });

  router.post('/uploads', async (req: Request, res: Response) => {
    const owner = ownerOf(callerOf(res));
    res.status(201).json(await uploads.receive(owner, req));
  });

  router.get('/uploads/:id', async (req: Request, res: Response) => {
    const row = await readable(req, res);
    const headers: Record<string, string | number> = {
      'content-type': row.type,
      'content-length': row.size,
      'content-disposition': contentDisposition(row.name, { type: 'inline' }),
      'cache-control': 'private, max-age=3600',
      'x-content-type-options': 'nosniff',
    };
    // Opened as a page, a file gets a unique origin without scripts; browsers' PDF viewers do not open sandboxed.
    if (row.type !== 'application/pdf') headers['content-security-policy'] = 'sandbox';
    res.writeHead(200, headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    res.end(await uploads.bytes(row));
  });

  router.delete('/uploads/:id', async (req: Request, res: Response) => {
    const owner = ownerOf(callerOf(res));
    const row = await uploads.row(String(req.params.id));
    if (!row || row.identityId !== owner) throw notFound(String(req.params.id));
    if (row.threadId !== null) throw new HttpError('CONFLICT', 'this upload was sent in a message: it is deleted with its thread');
    await uploads.deleteUnused(row);
    res.status(204).end();
  });

  router.all(['/uploads', '/uploads/:id'], (req: Request) => {
    throw new HttpError(
      'METHOD_NOT_ALLOWED',
      `${req.method} is not supported here (POST /api/_agent/uploads; GET, HEAD, DELETE /api/_agent/uploads/{uploadId})`,
    );
  });
  return router;
}
