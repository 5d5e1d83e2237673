/**
 * @module The HTTP adapter of blobs (SPEC §4.5, issue "blobs"), on plain `node:http`:
 * - `POST /api/{collection}/{id}/{field}`: multipart upload (part `file`), 200 with the metadata;
 * - `GET`/`HEAD` of the same path: the file, with `ETag`, `Last-Modified`, conditional 304, single
 *   byte ranges (206/416), `Content-Disposition` (RFC 6266) and `?thumb=WxH[f]` for images; with
 *   `&exp=…&sig=…` (the signed metadata url, DESIGN §11) without credentials, else under the GET rule;
 * - `DELETE`: removes the blob (as PATCH with null), 204;
 * - `…/{field}/tus[/{upload}]`: resumable uploads (`runtime/blobs/tus.ts`).
 * Any other path is left to the next handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { pipeline } from 'node:stream/promises';
import { create as contentDisposition } from 'content-disposition';
import parseRange from 'range-parser';
import { HttpError } from '../errors.js';
import type { AppRuntime, RequestContext } from '../core/context.js';
import { requestContext } from '../core/context.js';
import type { AuthService } from '../auth/auth-service.js';
import { authenticateCredentials, credentialInput } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import { admitUpload, blobTarget, clearBlob, commitBlob, newBlobPrefix, readBlob, type BlobTarget, type WrittenBlob } from '../core/blob-operations.js';
import { readUpload } from '../blobs/multipart.js';
import { originalKey, type StoredBlob } from '../blobs/metadata.js';
import { ensureThumbnail, parseThumbnail, thumbnailType } from '../blobs/thumbnails.js';
import type { BlobService } from '../blobs/service.js';
import { isMediaType, type TusUploads } from '../blobs/tus.js';
import { sendError, trackRequest } from './api-handler.js';
import type { RouteSeries } from '../metrics/metrics.js';
import { noteCaller } from '../logs/request-log.js';

/** Who reads a blob through a valid signed URL: the signature is the permission, so no rule applies. */
const SIGNED_URL_READER: Caller = Object.freeze({ kind: 'serviceAccount', id: null, username: null, roles: [], admin: true }) as Caller;

/** Types a browser may show inline: no scripts run in them. Anything else downloads as an attachment. */
const INLINE = /^(image\/(png|jpeg|gif|webp|avif|bmp)|audio\/[\w.+-]+|video\/[\w.+-]+|application\/pdf|text\/plain)$/i;

/**
 * Types a browser runs as code or as a document that can run code (issue 30 item 12): JavaScript and
 * its aliases, HTML and XHTML, XML of any kind (SVG, XSLT: browsers run their scripts), CSS and
 * WebAssembly. A stored file of such a type is served as `application/octet-stream`, so that
 * `<script src>`, `<link rel=stylesheet>` or a visit to its URL never treat it as code; its metadata
 * keeps the declared type.
 */
const ACTIVE = /(javascript|ecmascript|jscript|livescript|html|xml|xsl|^text\/css$|^application\/wasm$)/i;

/** The type a stored file is served with: its declared one, or bytes for an `ACTIVE` (or unusable) one. */
export function servedBlobType(declared: string): string {
  if (!isMediaType(declared)) return 'application/octet-stream';
  const essence = declared.split(';')[0].trim();
  return ACTIVE.test(essence) ? 'application/octet-stream' : declared;
}

/**
 * The CSP of every blob download, signed URLs' too: opened as a page, a file gets a unique origin with
 * no scripts, forms, plug-ins or pop-ups, and cannot reach the app's cookies. A PDF goes without it:
 * browsers' PDF viewers do not open in a sandboxed document.
 */
const BLOB_CSP = 'sandbox';

/** `/api/{name}/{id}/{field}[/tus[/{upload}]]` → its decoded segments, or null for another shape. */
function blobPath(url: string): { name: string; id: string; field: string; tus: boolean; upload?: string } | null {
  const q = url.indexOf('?');
  const parts = (q < 0 ? url : url.slice(0, q)).slice('/api/'.length).split('/');
  if (parts.length < 3 || parts.length > 5 || parts.some((p) => p === '')) return null;
  if (parts.length >= 4 && parts[3] !== 'tus') return null;
  try {
    const [name, id, field, , upload] = parts.map(decodeURIComponent);
    return { name, id, field, tus: parts.length >= 4, upload };
  } catch {
    return null;
  }
}

/** One entity tag matched against an `If-None-Match` / `If-Range` list (weak comparison, `*`). */
function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** True when the validators of the request say the client's copy is current (RFC 9110 §13.1.2–3). */
function notModified(req: IncomingMessage, etag: string, lastModified: Date): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) return etagMatches(inm, etag);
  const ims = req.headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return !Number.isNaN(since) && Math.floor(lastModified.getTime() / 1000) <= Math.floor(since / 1000);
}

/** Streams a stored blob (or a thumbnail of it), honouring validators and one byte range. */
async function download(
  ctx: RequestContext,
  blobs: BlobService,
  t: BlobTarget,
  req: IncomingMessage,
  res: ServerResponse,
  query: Record<string, unknown>,
  signed: boolean,
) {
  const stored: StoredBlob = await readBlob(ctx, t);
  // A signature admits the version it names only: a replaced file's URL does not reach the new one.
  if (signed && !stored.prefix.endsWith(`/${String(query.v)}/`))
    throw new HttpError('NOT_FOUND', `${t.resource.name} ${JSON.stringify(t.id)} has another ${t.field.name} now`);
  let key = originalKey(stored.prefix);
  let size = stored.size;
  // A type stored before uploads were checked may not be a header value, and a script or page type
  // would run: both are served as bytes.
  let type = servedBlobType(stored.contentType);
  let etag = `"${stored.sha256}"`;
  let name = stored.name;
  if (query.thumb !== undefined) {
    const spec = parseThumbnail(String(query.thumb), blobs.settings.thumbnails);
    ({ key, size } = await ensureThumbnail(blobs.store, stored, spec));
    type = thumbnailType(stored.contentType);
    etag = `"${stored.sha256}-${spec.text}"`;
    name = `${spec.text}-${stored.name}`;
  }
  const lastModified = new Date(stored.uploadedAt);
  const current = query.v !== undefined && stored.prefix.endsWith(`/${String(query.v)}/`);
  const headers: Record<string, string | number> = {
    etag,
    'last-modified': lastModified.toUTCString(),
    // `?v=` naming the current version never changes: cache it; otherwise revalidate with the ETag.
    'cache-control': current ? 'private, max-age=31536000, immutable' : 'private, no-cache',
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
  };
  if (notModified(req, etag, lastModified)) {
    res.writeHead(304, headers).end();
    return;
  }
  headers['content-type'] = type;
  if (!/^application\/pdf\b/i.test(type)) headers['content-security-policy'] = BLOB_CSP;
  headers['content-disposition'] = contentDisposition(name, { type: INLINE.test(type) ? 'inline' : 'attachment' });
  let range: { start: number; end: number } | undefined;
  const asked = req.headers.range;
  const ifRange = req.headers['if-range'];
  const rangeApplies = asked !== undefined && (ifRange === undefined || ifRange === etag || ifRange === lastModified.toUTCString());
  if (rangeApplies && size > 0) {
    const ranges = parseRange(size, asked, { combine: true });
    if (ranges === -1) {
      throw new HttpError('RANGE_NOT_SATISFIABLE', `the range ${JSON.stringify(asked)} is outside the file's ${size} bytes`, {
        headers: { 'content-range': `bytes */${size}` },
      });
    }
    // Several ranges: answered whole (a server may ignore Range); malformed (-2): ignored.
    if (Array.isArray(ranges) && ranges.type === 'bytes' && ranges.length === 1) range = ranges[0];
  }
  if (range) {
    headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`;
    headers['content-length'] = range.end - range.start + 1;
  } else {
    headers['content-length'] = size;
  }
  if (req.method === 'HEAD') {
    res.writeHead(range ? 206 : 200, headers).end();
    return;
  }
  const body = await blobs.store.get(key, range);
  res.writeHead(range ? 206 : 200, headers);
  await pipeline(body, res).catch(() => undefined);
}

/** Reads the multipart body into a new version, then commits it. */
async function upload(ctx: RequestContext, blobs: BlobService, t: BlobTarget, req: IncomingMessage) {
  await admitUpload(ctx, t);
  const prefix = newBlobPrefix(t);
  const written = await readUpload<WrittenBlob>(
    req,
    blobs.settings.maxBytes,
    async (file) => {
      await blobs.store.put(originalKey(prefix), file.stream, file.contentType);
      return { prefix, name: file.name, contentType: file.contentType, ...file.digest() };
    },
    (w) => blobs.store.deletePrefix(w.prefix),
  );
  return commitBlob(ctx, t, written);
}

/**
 * Builds the handler; it returns false for a request it does not serve.
 * Source: SPEC §4.5; DESIGN §4 "Blob details"; issue "blobs".
 */
export function blobHandler(app: AppRuntime, auth: AuthService, blobs: BlobService, tus: TusUploads): (req: IncomingMessage, res: ServerResponse) => boolean {
  // One route series per collection (names come from the manifest).
  const routes = new Map<string, RouteSeries>();
  const seriesOf = (name: string): RouteSeries | undefined => {
    if (!app.metrics) return undefined;
    let s = routes.get(name);
    if (!s) routes.set(name, (s = app.metrics.route(`/api/${name}/{id}/{blob}`)));
    return s;
  };
  return (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith('/api/')) return false;
    const path = blobPath(url);
    const resource = path && app.resources.get(path.name);
    if (!path || !resource || resource.kind !== 'collection') return false;
    const reqId = trackRequest(app.logger, req, res, app.logs, seriesOf(resource.name), auth.trustedPeer);
    void (async () => {
      try {
        const q = url.indexOf('?');
        const query = q < 0 ? {} : parseQuery(url.slice(q + 1));
        const reading = req.method === 'GET' || req.method === 'HEAD';
        // A signed URL (valid, or 403) stands instead of credentials; without exp and sig, the usual auth applies.
        const signed = reading && !path.tus && blobs.signer !== undefined && blobs.signer.verify(q < 0 ? url : url.slice(0, q), query);
        const caller = signed ? SIGNED_URL_READER : (await authenticateCredentials(auth, credentialInput(req, auth))).caller;
        noteCaller(res, caller);
        const ctx = requestContext(app, { caller, reqId });
        const t = blobTarget(resource, path.id, path.field);
        if (path.tus) {
          await tus.handle(ctx, t, path.upload, req, res);
          return;
        }
        switch (req.method) {
          case 'GET':
          case 'HEAD':
            await download(ctx, blobs, t, req, res, query, signed);
            return;
          case 'POST': {
            const body = JSON.stringify(await upload(ctx, blobs, t, req));
            res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
            return;
          }
          case 'DELETE':
            await clearBlob(ctx, t);
            res.writeHead(204).end();
            return;
        }
        throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on a blob; use GET, HEAD, POST (multipart upload) or DELETE`);
      } catch (err) {
        sendError(app, req, res, reqId, err);
      }
    })();
    return true;
  };
}
