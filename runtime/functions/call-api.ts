/**
 * @module The seam between function code and the app's own API (SPEC §4.8 rule 2): `get`, `post` and
 * `patch` in a worker become an `ApiRequest` sent to the main thread, which answers it with `CallApi`
 * as the caller and sends back the `ApiReply`. The server injects `CallApi` (`FunctionRoutesOptions.callApi`).
 */
import type { Caller } from '../auth/caller.js';
import type { ApiAnswer, ApiCall } from '../core/api-client.js';

/** One call of function code to the app's API, under `/api`: the in-process client's `ApiCall`. */
export type ApiRequest = ApiCall;

/** The API's answer (status and parsed body; the DESIGN §4 error body for a non-2xx): `ApiAnswer`. */
export type ApiReply = ApiAnswer;

/**
 * Answers one `ApiRequest` as `caller`, with the same authorization, validation, change sets and
 * error bodies as HTTP. `signal` aborts when the invocation ends (answered, timed out, stopped): work
 * not yet committed must then be abandoned (rolled back).
 * `reqId` is the function request's id, carried into the call's logs and change sets.
 * @returns the status and body; rejects only when the call could not be answered at all (then the
 *   function code sees a plain `Error`)
 */
export type CallApi = (caller: Caller, request: ApiRequest, signal: AbortSignal, reqId?: string) => Promise<ApiReply>;

/** One real-time call of function code (`rt.join`, `rt.send`), answered like an API call (`{ group }` or an error body). */
export type RealtimeRequest = { op: 'join'; connectionId: unknown; channel: unknown; readOnly?: unknown } | { op: 'send'; channel: unknown; body: unknown };

/**
 * Answers one `RealtimeRequest` with the privileges of function code (any connection, private channels).
 * @returns 200 `{ group }`, or the status and DESIGN §4 error body of the refusal
 */
export type CallRealtime = (request: RealtimeRequest) => Promise<ApiReply>;

/** The operations of `ctx.agent` (SPEC §4.11, DESIGN §7 "Function context"). */
export const AGENT_OPS = ['connect', 'wake', 'prompt', 'list', 'close', 'setCredits', 'ask'] as const;

/** One `ctx.agent.<op>(args)` call of function code. */
export interface AgentRequest {
  op: (typeof AGENT_OPS)[number];
  args: unknown;
}

/** `ctx.jobs.enqueue(function, payload, options)` of function code (DESIGN §12). */
export interface JobsRequest {
  function: string;
  payload: unknown;
  options: { runAt?: string; delaySeconds?: number; key?: string; maxAttempts?: number };
}

/** Answers one `JobsRequest`: 200 `{ id }`, or a 400/404 DESIGN §4 error body naming the problem. */
export type CallJobs = (request: JobsRequest) => Promise<ApiReply>;

/**
 * Answers one `AgentRequest` (the agent service).
 * @returns 200 and the operation's result, or the status and DESIGN §4 error body of the refusal
 */
export type CallAgent = (request: AgentRequest) => Promise<ApiReply>;
