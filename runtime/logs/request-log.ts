/**
 * @module The request line of the log store (DESIGN §9): which identity a request was answered for.
 * The data, blob and real-time handlers authenticate outside Express, so they note the caller here
 * (`noteCaller`); Express routes keep it in `res.locals.caller`. `trackRequest` (http/api-handler.ts)
 * reads it when the answer is sent. And the request's id (`requestIdOf`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../auth/caller.js';
import type { TrustedPeer } from '../auth/client-address.js';

const callers = new WeakMap<ServerResponse, Caller>();

/** Notes who `res` answers (called once the request is authenticated). */
export function noteCaller(res: ServerResponse, caller: Caller): void {
  callers.set(res, caller);
}

/** The caller `res` answered, when known (noted here, or in Express's `res.locals.caller`). */
export function callerAnswered(res: ServerResponse): Caller | undefined {
  return callers.get(res) ?? ((res as { locals?: { caller?: Caller } }).locals?.caller as Caller | undefined);
}

/** Longest request id taken from a trusted proxy's `x-request-id`, characters. */
const MAX_REQUEST_ID = 64;

/**
 * The id of a request (DESIGN §9, the console's log search): the `x-request-id` header when the
 * request came straight from one of svc.json `trustedProxies` (at most 64 characters; empty or
 * absent: a new one), else always a new UUID, so no client can file its lines under another
 * request's id. What a client sent anyway is returned as `clientReqId` (at most 64 characters),
 * for the process log.
 * @param trusted - the trusted-proxy test (`AuthService.trustedPeer`); absent: no peer is trusted
 */
export function requestIdOf(req: IncomingMessage, trusted?: TrustedPeer): { reqId: string; clientReqId?: string } {
  const given = req.headers['x-request-id'];
  const value = typeof given === 'string' ? given.slice(0, MAX_REQUEST_ID) : '';
  if (value && trusted?.(req)) return { reqId: value };
  return value ? { reqId: randomUUID(), clientReqId: value } : { reqId: randomUUID() };
}
