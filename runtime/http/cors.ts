/**
 * @module CORS for browser pages on other origins (svc.json `cors`, docs/deploy.md "Calling the API
 * from a front end on another origin"). The headers are written by the `cors` package; this module
 * only turns the setting into its options and decides which requests it sees: every request under
 * `/api` (data, functions, `_auth`, `_token`, `_signup`, blobs and tus, `_rt`, agent), applied once in
 * the `node:http` handler (runtime/server.ts) after the Host check, so that routes served outside
 * Express get the same headers. Without `cors` in svc.json nothing is applied: same origin only.
 */
import cors from 'cors';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsSettings } from '../contract/index.js';

/** Response headers a page on another origin may read: request ids, conditional requests, back-off, tus. */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'ETag',
  'Retry-After',
  'WWW-Authenticate',
  'Location',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Expires',
  'Tus-Resumable',
];

/** Methods of the API a preflight allows. */
const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A `node:http` request handler that answers, or hands on to `next`. */
export type CorsLayer = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * The CORS layer of one `cors` setting: on `/api` paths, a preflight (OPTIONS with `Origin` and
 * `Access-Control-Request-Method`) is answered 204 here — with `Access-Control-Allow-Origin` only for
 * a listed origin, so the browser refuses every other — and other requests get the
 * `Access-Control-*` headers before `next` serves them. Request headers asked for in a preflight are
 * allowed as asked (`Authorization`, `Content-Type`, `If-Match`, tus's `Upload-*`, `Tus-Resumable`,
 * `X-HTTP-Method-Override`, …). Other paths, and everything when `settings` is undefined, go
 * straight to `next`.
 */
export function corsLayer(settings: CorsSettings | undefined): CorsLayer {
  if (!settings || settings.origins.length === 0) return (_req, _res, next) => next();
  const any = settings.origins.includes('*') && !settings.credentials;
  const middleware = cors({
    origin: any ? '*' : [...settings.origins],
    credentials: settings.credentials,
    methods: CORS_METHODS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: settings.maxAgeSeconds,
    optionsSuccessStatus: 204,
  });
  return (req, res, next) => {
    if (!isApiPath(req.url)) return next();
    // A plain OPTIONS (no preflight, e.g. tus's capability discovery) is the route's to answer.
    if (req.method === 'OPTIONS' && !(req.headers.origin && req.headers['access-control-request-method'])) return next();
    middleware(req, res, () => next());
  };
}

function isApiPath(url: string | undefined): boolean {
  const path = (url ?? '').split('?')[0];
  return path === '/api' || path.startsWith('/api/');
}
