/**
 * @module `get`, `post`, `patch` of function code (SPEC §4.8 rule 2): calls to the app's own API over
 * loopback HTTP that carry the caller's `Authorization` and `Cookie` headers (never `Origin`), so access
 * rules, policies and result shapes are exactly those of an HTTP client. Runs inside the function worker.
 */
import type { FunctionContext, FunctionJob, GetParams } from './context.js';

/** A non-2xx answer of the app's own API to `get`, `post` or `patch`: its status and parsed body. */
export class FunctionApiError extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(method: string, path: string, status: number, body: unknown) {
    const reason = typeof body === 'object' && body !== null && 'error' in body ? `: ${String((body as { error: unknown }).error)}` : '';
    super(`${method} /api${path} answered ${status}${reason}`);
    this.name = 'FunctionApiError';
    this.status = status;
    this.body = body;
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
 * Builds `get`, `post`, `patch` for one invocation.
 * @param platformFetch - the real `fetch` (captured before the global is replaced when fetch is not allowed)
 * @throws (from the helpers) FunctionApiError for a non-2xx answer; FunctionUsageError for a name that is not
 *   a collection, view or query (SPEC §4.8 rule 5: a function does not call another function)
 */
export function collectionClient(job: FunctionJob, platformFetch: typeof fetch): Pick<FunctionContext, 'get' | 'post' | 'patch'> {
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const headers: Record<string, string> = { ...job.loopback.headers, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const reply = await platformFetch(job.loopback.baseUrl + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await reply.text();
    let parsed: unknown = text;
    try { parsed = text ? JSON.parse(text) : null; } catch { /* keep the text */ }
    if (!reply.ok) throw new FunctionApiError(method, path, reply.status, parsed);
    return parsed;
  };
  const named = (name: unknown, allowed: string[], what: string): string => {
    if (typeof name !== 'string' || !allowed.includes(name)) {
      throw new FunctionUsageError(`${what}: ${JSON.stringify(name)} is not a ${what === 'get' ? 'collection, view or query' : 'collection or view'} of this app`);
    }
    return encodeURIComponent(name);
  };
  return {
    get: async <T>(collection: string, params: GetParams = {}): Promise<T> => {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, String(v));
      const qs = query.size > 0 ? `?${query}` : '';
      return call('GET', `/${named(collection, job.readable, 'get')}${qs}`) as Promise<T>;
    },
    post: async <T>(collection: string, body: unknown): Promise<T> => call('POST', `/${named(collection, job.writable, 'post')}`, body) as Promise<T>,
    patch: async <T>(collection: string, id: string, body: unknown): Promise<T> => {
      if (typeof id !== 'string' || id === '') throw new FunctionUsageError('patch: the id must be a non-empty string');
      return call('PATCH', `/${named(collection, job.writable, 'patch')}/${encodeURIComponent(id)}`, body) as Promise<T>;
    },
  };
}
