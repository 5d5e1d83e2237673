/**
 * @module The in-process API client: "the app's API as identity X" (issue "runtime core"). It runs
 * the same operations as the HTTP adapter (`runOperation`): the same authorization, validation,
 * change sets and error bodies, without a loopback round trip. Function code's `get`/`post`/`patch`
 * use it, and the agent's tools will. A `meter` hook sees every call and its answer.
 */
import { randomUUID } from 'node:crypto';
import { answerError, HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import { requestContext, type AppRuntime } from './context.js';
import { runOperation } from './operations.js';
import { resourcePath } from './resources.js';

/** One call: the path under `/api` (`/Order`, `/Order/<id>`), query parameters and a JSON body. */
export interface ApiCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | string[]>;
  body?: unknown;
}

/** The answer, as HTTP would give it: status and parsed body (the DESIGN §4 error body on failure). */
export interface ApiAnswer {
  status: number;
  body: unknown;
}

/** Options of `apiClientFor`. */
export interface ApiClientOptions {
  /** Request id carried into logs and change sets (default: a new UUID per call). */
  reqId?: string;
  /** Aborted → the call's writes roll back (a function that timed out). */
  signal?: AbortSignal;
  /** Called after every call with what was asked and answered (credit metering, audit). */
  meter?(call: ApiCall, answer: ApiAnswer, durationMs: number): void;
}

/** The app's API as one identity. */
export interface ApiClient {
  /** Runs one call; never throws for an HTTP-level refusal (read `status`). */
  request(call: ApiCall): Promise<ApiAnswer>;
}

/**
 * The API client of `caller`.
 * Paths other than a collection, view or query (functions, auth endpoints) answer 404: a function
 * does not call another function (SPEC §4.8 rule 5).
 */
export function apiClientFor(app: AppRuntime, caller: Caller, options: ApiClientOptions = {}): ApiClient {
  return {
    async request(call) {
      const started = performance.now();
      const reqId = options.reqId ?? randomUUID();
      let answer: ApiAnswer;
      try {
        let target: ReturnType<typeof resourcePath>;
        try {
          target = resourcePath(call.path.replace(/^\/+/, ''));
        } catch {
          throw new HttpError('INVALID_PARAMETER', 'the path is not valid percent-encoding');
        }
        const resource = target && app.resources.get(target.name);
        if (!target || !resource) throw new HttpError('NOT_FOUND', `no collection, view or query is at ${call.path}`);
        const ctx = requestContext(app, { caller, reqId, signal: options.signal });
        // A structured clone, so the caller's object is never shared with what is stored or returned.
        const body = call.body === undefined ? undefined : structuredClone(call.body);
        const result = await runOperation(ctx, resource, { method: call.method, id: target.id, query: call.query ?? {}, body: async () => body });
        answer = { status: result.status, body: result.body ?? null };
      } catch (err) {
        const { status, body } = answerError(err);
        if (status >= 500) app.logger.error({ reqId, err }, 'in-process API call failed');
        answer = { status, body };
      }
      const durationMs = performance.now() - started;
      app.logger.info({ reqId, method: call.method, url: `/api${call.path}`, status: answer.status, durationMs: Math.round(durationMs * 10) / 10 }, 'api call');
      options.meter?.(call, answer, durationMs);
      return answer;
    },
  };
}
