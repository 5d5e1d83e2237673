/**
 * @module The HTTP adapter of the data routes, on plain `node:http` (no framework on the hot path):
 * `/api/{collection|view|query}[/{id}]` is routed by a map lookup over the manifest's resources, the
 * caller is authenticated by the framework-free auth core, the body is read only after the operation
 * has admitted the caller, and the answer or the DESIGN §4 error body is written here. Every other
 * path is left to the Express application (auth endpoints, `/login`, functions, `_log`, `_openapi`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { HttpError, toErrorBody } from '../errors.js';
import type { AuthService } from '../auth/auth-service.js';
import { authenticateCredentials } from '../auth/authenticate.js';
import { mapInfrastructureError } from '../data/db-errors.js';
import type { AppRuntime } from '../core/context.js';
import { requestContext } from '../core/context.js';
import { runOperation, type ApiResponse } from '../core/operations.js';
import { readJsonBody } from './body.js';
import { MAX_BODY_BYTES, MAX_RESULT_BYTES } from '../contract/limits.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/** The request id: the caller's `x-request-id` (at most 64 characters) or a new UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return (typeof given === 'string' && given.slice(0, 64)) || randomUUID();
}

/** Writes a JSON answer (no body for 204 and HEAD). */
function send(req: IncomingMessage, res: ServerResponse, status: number, text: string | undefined, headers: Record<string, string> = {}): void {
  if (text === undefined || status === 204) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { ...JSON_HEADERS, ...headers, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** Writes the error body of any thrown value; 5xx causes are logged with the request id, never sent. */
export function sendError(app: AppRuntime, req: IncomingMessage, res: ServerResponse, reqId: string, thrown: unknown): void {
  const err = mapInfrastructureError(thrown);
  const { status, body } = toErrorBody(err);
  if (status >= 500) app.logger.error({ reqId, err: thrown }, 'request failed');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers = err instanceof HttpError && err.headers ? err.headers : {};
  // A refused body that is still arriving is discarded unparsed by node:http once the answer ends.
  send(req, res, status, JSON.stringify(body), headers);
}

function serialize(answer: ApiResponse): string | undefined {
  if (answer.body === undefined) return undefined;
  const text = JSON.stringify(answer.body);
  if (answer.limited && text.length > MAX_RESULT_BYTES / 4 && Buffer.byteLength(text) > MAX_RESULT_BYTES) {
    throw new HttpError('RESULT_TOO_LARGE', 'the result is larger than the 5 MiB limit; ask for less with lookups=id, a smaller pageSize or a narrower select');
  }
  return text;
}

/** Splits `/api/Name[/id][/]` into its decoded segments; null when the path is not one of those. */
function dataPath(pathname: string): { name: string; id?: string } | null {
  const parts = pathname.slice(5).split('/');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  if (parts.length === 0 || parts.length > 2) return null;
  return { name: decodeURIComponent(parts[0]), id: parts.length === 2 ? decodeURIComponent(parts[1]) : undefined };
}

/**
 * Builds the handler. It returns false for a request it does not serve (the caller passes it on).
 * Source: SPEC §4.1 (routes), §7 (status codes); DESIGN §4 (bodies, error body).
 */
export function apiHandler(app: AppRuntime, auth: AuthService): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith('/api/')) return false;
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    let target: { name: string; id?: string } | null;
    try {
      target = dataPath(pathname);
    } catch {
      target = { name: '' };
      void serve(app, auth, req, res, () => {
        throw new HttpError('INVALID_PARAMETER', 'the path is not valid percent-encoding');
      });
      return true;
    }
    const resource = target && app.resources.get(target.name);
    if (!target || !resource) return false;
    void serve(app, auth, req, res, async (reqId) => {
      const { caller } = await authenticateCredentials(auth, {
        method: req.method ?? 'GET',
        authorization: req.headers.authorization,
        cookie: req.headers.cookie,
        origin: req.headers.origin,
        referer: req.headers.referer,
        host: req.headers.host,
        scheme: (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http',
      });
      const ctx = requestContext(app, { caller, reqId });
      const query = q < 0 ? {} : parseQuery(url.slice(q + 1));
      const answer = await runOperation(ctx, resource, {
        method: req.method ?? 'GET',
        id: target.id,
        query,
        body: () => readJsonBody(req, MAX_BODY_BYTES),
      });
      return answer;
    });
    return true;
  };
}

/** Runs one request: request id, timing log line, the answer or the error body. */
async function serve(
  app: AppRuntime,
  _auth: AuthService,
  req: IncomingMessage,
  res: ServerResponse,
  run: (reqId: string) => Promise<ApiResponse> | never,
): Promise<void> {
  const started = process.hrtime.bigint();
  const reqId = requestIdOf(req);
  res.setHeader('x-request-id', reqId);
  res.on('finish', () => {
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
    app.logger.info({ reqId, method: req.method, url: req.url, status: res.statusCode, durationMs: Math.round(durationMs * 10) / 10 }, 'request');
  });
  try {
    const answer = await run(reqId);
    send(req, res, answer.status, serialize(answer));
  } catch (err) {
    sendError(app, req, res, reqId, err);
  }
}
