/**
 * @module The seam between function code and the app's own API (SPEC §4.8 rule 2): `get`, `post` and
 * `patch` in a worker become an `ApiRequest` sent to the main thread, which answers it with `CallApi`
 * as the caller and sends back the `ApiReply`. The server injects `CallApi` (`FunctionRoutesOptions.callApi`).
 */
import type { Caller } from '../auth/caller.js';

/** One call of function code to the app's API, under `/api`. */
export interface ApiRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** `/Order` or `/Order/<id>` (segments URL-encoded), relative to `/api`. */
  path: string;
  /** List parameters of a GET (`filter`, `pageSize`, …), as strings. */
  query?: Record<string, string>;
  /** The JSON body of a POST, PATCH or PUT (already a plain JSON value). */
  body?: unknown;
}

/** The API's answer: its HTTP status and its parsed JSON body (the error body of DESIGN §4 for a non-2xx). */
export interface ApiReply {
  status: number;
  body: unknown;
}

/**
 * Answers one `ApiRequest` as `caller`, with the same authorization, validation, change sets and
 * error bodies as HTTP. `signal` aborts when the invocation ends (answered, timed out, stopped): work
 * not yet committed must then be abandoned (rolled back).
 * `reqId` is the function request's id, carried into the call's logs and change sets.
 * @returns the status and body; rejects only when the call could not be answered at all (then the
 *   function code sees a plain `Error`)
 */
export type CallApi = (caller: Caller, request: ApiRequest, signal: AbortSignal, reqId?: string) => Promise<ApiReply>;
