/**
 * @module The request line of the log store (DESIGN §9): which identity a request was answered for.
 * The data, blob and real-time handlers authenticate outside Express, so they note the caller here
 * (`noteCaller`); Express routes keep it in `res.locals.caller`. `trackRequest` (http/api-handler.ts)
 * reads it when the answer is sent.
 */
import type { ServerResponse } from 'node:http';
import type { Caller } from '../auth/caller.js';

const callers = new WeakMap<ServerResponse, Caller>();

/** Notes who `res` answers (called once the request is authenticated). */
export function noteCaller(res: ServerResponse, caller: Caller): void {
  callers.set(res, caller);
}

/** The caller `res` answered, when known (noted here, or in Express's `res.locals.caller`). */
export function callerAnswered(res: ServerResponse): Caller | undefined {
  return callers.get(res) ?? ((res as { locals?: { caller?: Caller } }).locals?.caller as Caller | undefined);
}
