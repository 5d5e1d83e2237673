/**
 * @module `get`, `post`, `patch` of function code (SPEC §4.8 rule 2): each builds an `ApiRequest` and
 * hands it to `send` (in a worker: a message to the main thread, which answers it as the caller with the
 * same access rules, policies, validation and result shapes as HTTP). Runs inside the function worker.
 */
import type { AgentRequest, ApiReply, ApiRequest, RealtimeRequest } from './call-api.js';
import type { FunctionAgent, FunctionApiClient, FunctionRealtime, GetParams } from './context.js';
import type { FunctionJob } from './protocol.js';

/** A non-2xx answer of the app's own API to `get`, `post` or `patch`: its status and parsed body. */
export class FunctionApiError extends Error {
  readonly status: number;
  readonly body: unknown;
  /**
   * Whose call was refused: `caller` (`get`/`post`/`patch`: uncaught, its 400/401/403/404/409 is the
   * answer), `app` (`app.*`) or `function` (`rt.*`, `agent.*`): uncaught, these are the code's fault (500).
   */
  readonly by: 'caller' | 'app' | 'function';

  constructor(method: string, path: string, status: number, body: unknown, by: 'caller' | 'app' | 'function' = 'function') {
    const reason = typeof body === 'object' && body !== null && 'error' in body ? `: ${String((body as { error: unknown }).error)}` : '';
    super(`${by === 'app' ? 'app: ' : ''}${method} /api${path} answered ${status}${reason}`);
    this.name = 'FunctionApiError';
    this.status = status;
    this.body = body;
    this.by = by;
  }
}

/** A usage error of the context helpers (wrong name or argument), thrown into function code. */
export class FunctionUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FunctionUsageError';
  }
}

/**
 * Builds `get`, `post`, `patch` for one invocation: the caller's (`ctx.get/post/patch`), or with `asApp`
 * the app's (`ctx.app.get/post/patch`: `send` then posts the `asApp` message, issue 31 §2).
 * @param send - answers one request (status and parsed body); a body is passed through JSON first, so it
 *   arrives exactly as an HTTP client would have sent it
 * @param asApp - marks the errors thrown (`FunctionApiError.by`) as refusals of an `app` call, not the caller's
 * @throws (from the helpers) FunctionApiError for a non-2xx answer; FunctionUsageError for a name that is not
 *   a collection, view or query (SPEC §4.8 rule 5: a function does not call another function)
 */
export function collectionClient(
  job: Pick<FunctionJob, 'readable' | 'writable'>,
  send: (request: ApiRequest) => Promise<ApiReply>,
  asApp = false,
): FunctionApiClient {
  const call = async (method: ApiRequest['method'], path: string, query?: Record<string, string>, body?: unknown): Promise<unknown> => {
    const request: ApiRequest = { method, path, ...(query && { query }), ...(body !== undefined && { body: JSON.parse(JSON.stringify(body)) as unknown }) };
    const reply = await send(request);
    if (reply.status < 200 || reply.status > 299) {
      const qs = query && Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : '';
      throw new FunctionApiError(method, path + qs, reply.status, reply.body, asApp ? 'app' : 'caller');
    }
    return reply.body;
  };
  const named = (name: unknown, allowed: string[], what: string): string => {
    if (typeof name !== 'string' || !allowed.includes(name)) {
      throw new FunctionUsageError(
        `${what}: ${JSON.stringify(name)} is not a ${what === 'get' ? 'collection, view or query' : 'collection or view'} of this app`,
      );
    }
    return encodeURIComponent(name);
  };
  return {
    get: async <T>(collection: string, params: GetParams = {}): Promise<T> => {
      const path = `/${named(collection, job.readable, 'get')}`;
      const query: Record<string, string> = {};
      for (const [k, v] of Object.entries(params)) if (v !== undefined) query[k] = String(v);
      return call('GET', path, query) as Promise<T>;
    },
    post: async <T>(collection: string, body: unknown): Promise<T> =>
      call('POST', `/${named(collection, job.writable, 'post')}`, undefined, body) as Promise<T>,
    patch: async <T>(collection: string, id: string, body: unknown): Promise<T> => {
      if (typeof id !== 'string' || id === '') throw new FunctionUsageError('patch: the id must be a non-empty string');
      return call('PATCH', `/${named(collection, job.writable, 'patch')}/${encodeURIComponent(id)}`, undefined, body) as Promise<T>;
    },
  };
}

/**
 * Builds `rt` for one invocation (DESIGN §4 "Real-time from functions").
 * @throws (from the helpers) FunctionApiError for a refusal: 404 unknown connection, 400 bad channel name or arguments
 */
export function realtimeClient(send: (request: RealtimeRequest) => Promise<ApiReply>): FunctionRealtime {
  const call = async (request: RealtimeRequest, path: string): Promise<{ group: string }> => {
    const reply = await send(JSON.parse(JSON.stringify(request)) as RealtimeRequest);
    if (reply.status < 200 || reply.status > 299) throw new FunctionApiError('POST', path, reply.status, reply.body);
    return reply.body as { group: string };
  };
  return {
    join: (args) => call({ op: 'join', connectionId: args?.connectionId, channel: args?.channel, readOnly: args?.readOnly }, '/_rt/join'),
    send: (args) => call({ op: 'send', channel: args?.channel, body: args?.body }, '/_rt/send'),
  };
}

/**
 * Builds `agent` for one invocation (SPEC §4.11, DESIGN §7 "Function context").
 * @throws (from the helpers) FunctionApiError for a refusal (400, 404, 503 …)
 */
export function agentClient(send: (request: AgentRequest) => Promise<ApiReply>): FunctionAgent {
  const call = async <T>(op: AgentRequest['op'], args: unknown): Promise<T> => {
    const reply = await send({ op, args: args === undefined ? undefined : (JSON.parse(JSON.stringify(args)) as unknown) });
    if (reply.status < 200 || reply.status > 299) throw new FunctionApiError('POST', `/_agent/${op}`, reply.status, reply.body);
    return reply.body as T;
  };
  return {
    connect: (options) => call('connect', options),
    wake: (options) => call('wake', options),
    prompt: (options) => call('prompt', options),
    list: () => call('list', {}),
    close: (options) => call('close', options),
    setCredits: (options) => call('setCredits', options),
    ask: (options) => call('ask', options),
  };
}
