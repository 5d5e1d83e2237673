/**
 * @module STAND-IN for the in-process API client: answers `CallApi` over loopback HTTP to this same
 * server, forwarding the caller's `Authorization` and `Cookie` headers (never `Origin`) and the request
 * id, so access rules, validation and result shapes are those of an HTTP client. Aborting `signal`
 * aborts the fetch (the server may still finish a request it already received). Delete this file, and
 * its one use in runtime/http/function-routes.ts, once `FunctionRoutesOptions.callApi` is always given.
 */
import type { Request, Response } from 'express';
import type { CallApi } from './call-api.js';

/** A `CallApi` for the function call that `req`/`res` serve (the `caller` argument is implied by the headers). */
export function loopbackCallApi(req: Request, res: Response): CallApi {
  const baseUrl = loopbackUrl(req);
  const credentials = forwardedHeaders(req, res);
  return async (_caller, request, signal) => {
    const headers: Record<string, string> = { ...credentials, accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const qs = request.query && Object.keys(request.query).length > 0 ? `?${new URLSearchParams(request.query)}` : '';
    const reply = await fetch(baseUrl + request.path + qs, {
      method: request.method, headers, signal, body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
    const text = await reply.text();
    let body: unknown = text;
    try { body = text ? JSON.parse(text) : null; } catch { /* keep the text */ }
    return { status: reply.status, body };
  };
}

/** This server as reached from itself: the local address the request came in on (never through a proxy). */
function loopbackUrl(req: Request): string {
  let host = req.socket.localAddress ?? '127.0.0.1';
  if (host.startsWith('::ffff:')) host = host.slice('::ffff:'.length);
  if (host.includes(':')) host = `[${host}]`;
  return `http://${host}:${req.socket.localPort}/api`;
}

/** The caller's credentials (`Authorization`, `Cookie`; never `Origin`) and the request id. */
function forwardedHeaders(req: Request, res: Response): Record<string, string> {
  const out: Record<string, string> = { 'x-request-id': String(res.locals.reqId) };
  if (req.headers.authorization) out.authorization = req.headers.authorization;
  if (req.headers.cookie) out.cookie = req.headers.cookie;
  return out;
}
