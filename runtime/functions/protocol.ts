/**
 * @module The messages between the server (worker-pool.ts) and a function worker thread (worker.ts),
 * all structured-clone safe (DESIGN §4 "Function details"). A worker runs one invocation at a time.
 *
 * server → worker: `run` (an invocation), `api-reply` (the answer to one `api` request).
 * worker → server: `api` (get/post/patch; `asApp` for `app.get/post/patch`, see below), `rt` (rt.join/rt.send), `agent` (ctx.agent.*), `output` (console/stdout/stderr text, capped per call),
 * `memory` (heap + external bytes, every `MEMORY_REPORT_MS` while a call runs), `done` (the outcome).
 */
import type { ErrorDetail } from '../errors.js';
import type { AgentRequest, ApiReply, ApiRequest, JobsRequest, RealtimeRequest } from './call-api.js';
import type { MailRequest } from './function-mail.js';
import type { FunctionCaller, FunctionRequest } from './context.js';

/** How often a busy worker reports its memory, in ms. */
export const MEMORY_REPORT_MS = 25;

/** What the server sends the worker for one invocation. */
export interface FunctionJob {
  /** Absolute path of the compiled module. */
  modulePath: string;
  /** Set by the pool when `svc dev` recompiled the module (`WorkerPool.refresh`): imported afresh as `?v=<n>`. */
  moduleVersion?: number;
  req: FunctionRequest;
  me: FunctionCaller | null;
  api: { name: string; baseUrl: string };
  secrets: Record<string, string>;
  allowFetch: boolean;
  /** Names `get` may read (collections, views, queries) and `post`/`patch` may write (collections, views). */
  readable: string[];
  writable: string[];
  /** Set when the call runs as a background job (DESIGN §12): `ctx.job`, `ctx.event`, `ctx.schedule`. */
  run?: JobRunContext;
}

/** What a function run as a job sees besides the request (DESIGN §12). */
export interface JobRunContext {
  job: { id: string; task: string; attempt: number };
  /** A trigger's event (`svc_trigger` jobs). */
  event?: unknown;
  /** A scheduled run's tick (`svc_schedule` jobs). */
  schedule?: { tick: string };
}

/** What the worker answers: the response to send, or what the code threw. */
export type FunctionOutcome =
  | { kind: 'done'; status: number; bodyText?: string; validationErrors: ErrorDetail[] }
  | {
      kind: 'threw';
      name: string;
      message: string;
      stack?: string;
      /** Set when the code let through an infrastructure refusal of the API (503, 504 STATEMENT_TIMEOUT): its status and error body. */
      infrastructure?: { status: number; body: unknown };
      /**
       * Set when the code let through a refusal of one of its caller's own API calls (`get`/`post`/`patch`,
       * never `app.*`) with status 400, 401, 403, 404 or 409: answered with that status and error body.
       */
      refusal?: { status: number; body: unknown };
    };

/** Settings of every worker, given as `workerData`. */
export interface WorkerSettings {
  /** Output bytes (UTF-8) forwarded per invocation; the rest is dropped after one note. */
  maxOutputBytes: number;
}

/**
 * The parts of a job that are the same object for every call of an app version (`secrets`, `readable`,
 * `writable`): the pool sends each to a thread only when it differs from what that thread last got
 * (at its first call, and after `svc dev` swapped the app), and the thread keeps them.
 */
export const KEPT_PARTS = ['secrets', 'readable', 'writable'] as const;

/** A job as sent: a kept part that the thread already holds is left out. */
export type WireJob = Omit<FunctionJob, (typeof KEPT_PARTS)[number]> & Partial<Pick<FunctionJob, (typeof KEPT_PARTS)[number]>>;

export type ToWorker = { type: 'run'; id: number; job: WireJob } | ({ type: 'api-reply'; call: number } & ({ reply: ApiReply } | { error: string }));

export type FromWorker =
  /**
   * `asApp`: a call of `ctx.app` (the app's full rights, issue 31 §2, docs/functions.md). Only a worker
   * thread can post this message: the flag exists nowhere in HTTP, and the pool honours it only for
   * the function call (`id`) that is running on that thread.
   */
  | { type: 'api'; id: number; call: number; request: ApiRequest; asApp?: true }
  /** `rt.join` / `rt.send`, answered with an `api-reply`. */
  | { type: 'rt'; id: number; call: number; request: RealtimeRequest }
  /** `agent.connect` … `agent.ask`, answered with an `api-reply`. */
  | { type: 'agent'; id: number; call: number; request: AgentRequest }
  /** `jobs.enqueue`, answered with an `api-reply`. */
  | { type: 'jobs'; id: number; call: number; request: JobsRequest }
  /** `mail.send`, answered with an `api-reply`. */
  | { type: 'mail'; id: number; call: number; request: MailRequest }
  /** `capped`: this is the one note that the call's output passed `maxOutputBytes` and the rest is dropped. */
  | { type: 'output'; id: number; stream: 'stdout' | 'stderr'; text: string; capped?: true }
  | { type: 'memory'; bytes: number }
  /** The call yielded to the thread's event loop unfinished (it awaits an API reply, a timer, `fetch`…): it is not computing. */
  | { type: 'parked'; id: number }
  /** `clean`: no timer, socket or other handle is left running, so the thread may take another call. */
  | { type: 'done'; id: number; outcome: FunctionOutcome; clean: boolean; bytes: number };
