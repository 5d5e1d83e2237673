/**
 * @module The HTTP adapter of the data routes, on plain `node:http` (no framework on the hot path):
 * `/api/{collection|view|query}[/{id}]` is routed by a map lookup over the manifest's resources, the
 * caller is authenticated by the framework-free auth core, the body is read only after the operation
 * has admitted the caller, and the answer or the DESIGN §4 error body is written here. Functions are
 * served beside it by `function-handler.ts`; every other path is left to the Express application
 * (auth endpoints, `/login`, other spellings of function paths, `_log`, `_openapi`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { answerError, HttpError } from '../errors.js';
import type { AuthService } from '../auth/auth-service.js';
import type { TrustedPeer } from '../auth/client-address.js';
import { authenticateCredentials, credentialInput } from '../auth/authenticate.js';
import type { AppRuntime } from '../core/context.js';
import { requestContext } from '../core/context.js';
import { runOperation, type ApiResponse } from '../core/operations.js';
import { resourcePath } from '../core/resources.js';
import type { Logger } from '../log.js';
import { readJsonBody } from './body.js';
import { MAX_BODY_BYTES, MAX_RESULT_BYTES } from '../contract/limits.js';
import type { LogStore } from '../logs/log-store.js';
import { redactPath } from '../logs/redact.js';
import { callerAnswered, noteCaller, requestIdOf } from '../logs/request-log.js';
import type { RouteSeries } from '../metrics/metrics.js';
import { nameRequestSpan, requestSpan } from '../tracing/tracing.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/**
 * Gives a request its id (`requestIdOf`: a trusted proxy's `x-request-id`, or a new UUID), sets the
 * `x-request-id` response header (unless `idHeader` is false), and writes one log line when the answer is sent, to the process log
 * and (when given) to the log store of DESIGN §9, both with the path redacted by `redactPath` (the
 * caller noted by `noteCaller`; a client's own `x-request-id` kept beside ours as `clientReqId` in the
 * process log), and counts it in its route's metrics series (docs/operations.md): one histogram observe.
 * Used by the data routes and the Express application alike.
 * @param route - the request's route series, or a resolver from the URL as received (Express)
 * @param trusted - whose `x-request-id` is kept (`AuthService.trustedPeer`); absent: nobody's
 * @param idHeader - false: the caller writes the `x-request-id` header with its answer (one `writeHead`
 *   with every header is cheaper than a `setHeader` before it: bench/README.md "Figures of 2026-11-28 (evening)")
 * @returns the request id
 */
export function trackRequest(
  logger: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  logs?: LogStore,
  route?: RouteSeries | ((url: string) => RouteSeries),
  trusted?: TrustedPeer,
  { idHeader = true }: { idHeader?: boolean } = {},
): string {
  const { reqId, clientReqId } = requestIdOf(req, trusted);
  if (idHeader) res.setHeader('x-request-id', reqId);
  // Traces (docs/operations.md): the request id is the request span's attribute, its route its name.
  const span = requestSpan();
  span?.setAttribute('svc.request_id', reqId);
  const info = logger.isLevelEnabled('info');
  // Below level info and without a log store the line would be dropped: no timing, no listener.
  if (!info && !logs && !route) return reqId;
  const started = process.hrtime.bigint();
  // Read now: routers rewrite `req.url` while they route.
  const { method, url } = req;
  res.on('finish', () => {
    const ns = Number(process.hrtime.bigint() - started);
    const durationMs = Math.round(ns / 1e5) / 10;
    if (route) {
      const series = typeof route === 'function' ? route(url ?? '/') : route;
      series.observe(method ?? 'GET', res.statusCode, ns / 1e9);
      if (span) nameRequestSpan(span, method ?? 'GET', series.route);
    }
    // One redaction for both outputs: stdout never keeps what the log store may not (redact.ts).
    const path = info || logs ? redactPath(url ?? '/') : '';
    if (info)
      logger.info(
        clientReqId === undefined
          ? { reqId, method, url: path, status: res.statusCode, durationMs }
          : { reqId, clientReqId, method, url: path, status: res.statusCode, durationMs },
        'request',
      );
    if (logs) {
      const caller = callerAnswered(res);
      logs.record({
        kind: 'request',
        reqId,
        method,
        path,
        status: res.statusCode,
        durationMs,
        identityId: caller?.id ?? null,
        identityKind: caller?.kind ?? null,
      });
    }
  });
  return reqId;
}

/** Writes a JSON answer with its request id, in one `writeHead` (no body for 204 and HEAD). */
function send(req: IncomingMessage, res: ServerResponse, reqId: string, status: number, text: string | undefined, headers: Record<string, string> = {}): void {
  if (text === undefined || status === 204) {
    res.writeHead(status, { 'x-request-id': reqId, ...headers }).end();
    return;
  }
  res.writeHead(status, { 'x-request-id': reqId, ...JSON_HEADERS, ...headers, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** Writes the error body of any thrown value; 5xx causes are logged with the request id, never sent. */
export function sendError(app: AppRuntime, req: IncomingMessage, res: ServerResponse, reqId: string, thrown: unknown): void {
  const { status, body, headers } = answerError(thrown);
  if (status >= 500) app.logger.error({ reqId, err: thrown }, 'request failed');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A refused body that is still arriving is discarded unparsed by node:http once the answer ends.
  send(req, res, reqId, status, JSON.stringify(body), headers);
}

function serialize(answer: ApiResponse): string | undefined {
  if (answer.body === undefined) return undefined;
  const text = JSON.stringify(answer.body);
  if (answer.limited && text.length > MAX_RESULT_BYTES / 4 && Buffer.byteLength(text) > MAX_RESULT_BYTES) {
    throw new HttpError('RESULT_TOO_LARGE', 'the result is larger than the 5 MiB limit; ask for less with lookups=id, a smaller pageSize or a narrower select');
  }
  return text;
}

/**
 * Builds the handler. It returns false for a request it does not serve (the caller passes it on; a
 * path that is not valid percent-encoding is answered 400 there).
 * Source: SPEC §4.1 (routes), §7 (status codes); DESIGN §4 (bodies, error body).
 */
export function apiHandler(app: AppRuntime, auth: AuthService): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Route series per resource: `/api/<name>` and `/api/<name>/{id}` (names come from the manifest).
  const { metrics } = app;
  const routes = new Map<string, [RouteSeries, RouteSeries]>();
  const series =
    metrics &&
    ((name: string, item: boolean): RouteSeries => {
      let pair = routes.get(name);
      if (!pair) routes.set(name, (pair = [metrics.route(`/api/${name}`), metrics.route(`/api/${name}/{id}`)]));
      return pair[item ? 1 : 0];
    });
  return (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith('/api/')) return false;
    const q = url.indexOf('?');
    let target: { name: string; id?: string } | null;
    try {
      target = resourcePath((q < 0 ? url : url.slice(0, q)).slice('/api/'.length));
    } catch {
      return false;
    }
    const resource = target && app.resources.get(target.name);
    if (!target || !resource) return false;
    const reqId = trackRequest(app.logger, req, res, app.logs, series?.(target.name, target.id !== undefined), auth.trustedPeer, { idHeader: false });
    void (async () => {
      try {
        const { caller } = await authenticateCredentials(auth, credentialInput(req, auth));
        noteCaller(res, caller);
        const ctx = requestContext(app, { caller, reqId });
        const answer = await runOperation(ctx, resource, {
          method: req.method ?? 'GET',
          id: target.id,
          query: q < 0 ? {} : parseQuery(url.slice(q + 1)),
          body: () => readJsonBody(req, MAX_BODY_BYTES),
        });
        send(req, res, reqId, answer.status, serialize(answer));
      } catch (err) {
        sendError(app, req, res, reqId, err);
      }
    })();
    return true;
  };
}
