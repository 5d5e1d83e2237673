/**
 * @module The function routes on plain `node:http`, beside `api-handler.ts` (SPEC §4.8, DESIGN §4
 * "Function details"): `/api/<name>` (type 1, GET and POST) and `/api/_invoke/<name>` (GET and POST;
 * PUT and DELETE for type 2) are served here without the Express application, as the same steps in the
 * same order as `function-routes.ts` behind Express: request id and log line, authentication, the JSON
 * body (the same `body-parser` middleware and limit), access per method, any other body as text, the
 * shared `FunctionInvoker`, and the answer written as Express writes it (`Content-Type`,
 * `Content-Length`, a weak `ETag` of the body, the DESIGN §4 error body).
 *
 * What is left to Express, which answers it as before: any other path spelling (a trailing slash,
 * other letter case, percent-escapes), a method the function does not serve (405), an unknown or
 * disabled function (404), and conditional requests (`If-None-Match`, `If-Modified-Since`), whose
 * freshness check Express does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { RequestHandler } from 'express';
import type { AuthService } from '../auth/auth-service.js';
import { authenticateCredentials, credentialInput } from '../auth/authenticate.js';
import type { Logger } from '../log.js';
import type { AppManifest, FunctionDefinition } from '../manifest.js';
import { trackRequest } from './api-handler.js';
import { send, sendError } from './express-answer.js';
import { noteCaller } from '../logs/request-log.js';
import type { LogStore } from '../logs/log-store.js';
import type { Metrics, RouteSeries } from '../metrics/metrics.js';
import { checkFunctionAccess, functionJsonBody, functionTextBody, visibleHeaders, type FunctionInvoker } from './function-routes.js';

const HTTP_METHODS = ['GET', 'POST'];
const INVOKE_METHODS = ['GET', 'POST', 'PUT', 'DELETE'];

/** A request as the body parsers leave it. */
type ParsedRequest = IncomingMessage & { body?: unknown; rawBody?: Buffer };

/** Runs one Express-style middleware (the body parsers) on a plain request. */
function runMiddleware(mw: RequestHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  return new Promise((ok, fail) => {
    void mw(req as never, res as never, (err?: unknown) => (err ? fail(err) : ok()));
  });
}

/**
 * Builds the handler of the function routes of one app version. It returns false for a request it does
 * not serve (see the module comment); the caller passes that on to the Express application.
 * @param invoke - the version's `FunctionInvoker` (the one the Express routes and the agent's tools use)
 * @param logs - the log store of DESIGN §9, which gets each request's line (as from the Express routes)
 * Source: SPEC §4.8, §7; DESIGN §4 (error body, "Function details").
 */
export function functionHandler(
  manifest: AppManifest,
  logger: Logger,
  auth: AuthService,
  invoke: FunctionInvoker,
  logs?: LogStore,
  metrics?: Metrics,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Path (as sent, without the query) → the function, the methods served there and its route series.
  const routes = new Map<string, { f: FunctionDefinition; methods: string[]; series?: RouteSeries }>();
  for (const f of manifest.functions) {
    if (!f.enabled || encodeURIComponent(f.name) !== f.name) continue;
    if (f.functionTypeId === 1) routes.set(`/api/${f.name}`, { f, methods: HTTP_METHODS, series: metrics?.route(`/api/${f.name}`) });
    routes.set(`/api/_invoke/${f.name}`, {
      f,
      methods: f.functionTypeId === 1 ? HTTP_METHODS : INVOKE_METHODS,
      series: metrics?.route(`/api/_invoke/${f.name}`),
    });
  }
  return (req: ParsedRequest, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const route = routes.get(q < 0 ? url : url.slice(0, q));
    const method = req.method ?? 'GET';
    if (!route || !route.methods.includes(method)) return false;
    if (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) return false;
    const { f } = route;
    const reqId = trackRequest(logger, req, res, logs, route.series, auth.trustedPeer, { idHeader: false });
    void (async () => {
      try {
        const { caller } = await authenticateCredentials(auth, credentialInput(req, auth));
        noteCaller(res, caller);
        // The order of the Express routes: the JSON body, then access, then any other body. Without a
        // body (no Transfer-Encoding, no numeric Content-Length: `type-is`'s test) both parsers pass.
        const hasBody = req.headers['transfer-encoding'] !== undefined || !isNaN(req.headers['content-length'] as unknown as number);
        if (hasBody) await runMiddleware(functionJsonBody, req, res);
        checkFunctionAccess(f, method, caller);
        if (hasBody && !req.rawBody) await runMiddleware(functionTextBody, req, res);
        const isJson = req.rawBody !== undefined;
        const answer = await invoke(f.name, {
          method,
          caller,
          query: q < 0 ? {} : parseQuery(url.slice(q + 1)),
          bodyJson: isJson ? req.body : null,
          bodyRaw: isJson ? req.rawBody!.toString('utf8') : typeof req.body === 'string' ? req.body : '',
          headers: visibleHeaders(req),
          baseUrl: `${(req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}/api`,
          reqId,
        });
        send(res, answer.status, answer.bodyText, { 'x-request-id': reqId });
      } catch (err) {
        sendError(logger, res, reqId, err);
      }
    })();
    return true;
  };
}
