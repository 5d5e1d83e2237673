/**
 * @module Runs function invocations on a pool of warm worker threads, one invocation per thread at a
 * time (DESIGN §4 "Function details"). A thread imports each compiled module once and serves many calls;
 * `spareThreads` idle threads are kept booted, at most `maxThreads` run at once and later calls queue.
 * Of the running calls, at most `computeThreads` (the CPU count) may be computing: one whose thread
 * reported it `parked` (it yielded to its event loop unfinished: awaiting the reply of `get`, `post`,
 * `rt.*`…, a timer, `fetch`) and one started over `COMPUTE_MS` ago no longer count, so calls
 * that wait or run long never hold the queue back for more than `COMPUTE_MS`, while short calls stay
 * on as few threads as there are cores (eight isolates sharing two cores cost about half again as much
 * CPU per call as two: bench/README.md "The function path").
 *
 * Limits, each ending only its own call and thread:
 * - time: a call not done within its limit (queueing included) answers 504 FUNCTION_TIMEOUT; its thread
 *   is terminated (which also stops a synchronous loop) and its API calls are aborted;
 * - memory: the heap is capped by `resourceLimits`; heap + external (Buffers, ArrayBuffers) is reported
 *   by the thread every 25 ms and a call over `maxMemoryMb` is stopped; and while calls run the server's
 *   RSS is sampled, so a thread that stops reporting (busy in synchronous code) while RSS passes
 *   `baseline + running × maxMemoryMb + 128 MiB` is stopped too. Such a call fails with a logged reason;
 * - a thread that dies (uncaught error, heap exhausted) fails the call it was running.
 * A thread that leaves work running after its call (a timer, a socket, an unanswered `get`) or holds
 * over half the memory limit is retired instead of reused.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { HttpError } from '../errors.js';
import type { MailRequest } from './function-mail.js';
import type { Logger } from '../log.js';
import type { AgentRequest, ApiReply, ApiRequest, JobsRequest, RealtimeRequest } from './call-api.js';
import {
  KEPT_PARTS,
  MEMORY_REPORT_MS,
  type FromWorker,
  type FunctionJob,
  type FunctionOutcome,
  type ToWorker,
  type WireJob,
  type WorkerSettings,
} from './protocol.js';

export interface WorkerPoolOptions {
  /** Idle threads kept booted and waiting. Default 2. */
  spareThreads?: number;
  /** Invocations running at once (one per thread); the rest wait in line. Default 4 × CPU count, at least 8. */
  maxThreads?: number;
  /** Calls computing at once (see the module comment). Default: the CPU count (`availableParallelism`). */
  computeThreads?: number;
  /** Memory of one thread (heap + external), in MiB: `functions.maxMemoryMb`. Default 256. */
  maxMemoryMb?: number;
  /** Output (stdout/stderr) forwarded per call, in bytes. Default 2 MiB. */
  maxOutputBytes?: number;
  /** Idle threads beyond `spareThreads` stop after this many ms. Default 30000. */
  idleMs?: number;
  /** Where faults of a thread outside any call are logged. */
  logger?: Logger;
}

/** One call's hooks into the server. */
export interface InvocationOptions {
  /** The function's name, for messages. */
  name: string;
  /** Limit from the call until the outcome, waiting in line included, in ms. */
  timeoutMs: number;
  /**
   * Answers `get`/`post`/`patch` of the code; `signal` aborts when the call ends for any reason.
   * `asApp`: a call of `app.get/post/patch` (the app's rights): set only from the `asApp` flag of a
   * worker thread's `api` message for the call it is running, never from anything a client sends.
   */
  callApi(request: ApiRequest, signal: AbortSignal, asApp: boolean): Promise<ApiReply>;
  /** Answers `rt.join`/`rt.send` of the code. */
  callRealtime(request: RealtimeRequest): Promise<ApiReply>;
  /** Answers `agent.*` of the code; absent: 503 (no agent service). */
  callAgent?(request: AgentRequest): Promise<ApiReply>;
  /** Answers `jobs.enqueue` of the code; absent: 503 (this server runs no jobs). */
  callJobs?(request: JobsRequest): Promise<ApiReply>;
  /** Answers `ctx.mail.send` (`function-mail.ts`); absent: 503. */
  callMail?(request: MailRequest): Promise<ApiReply>;
  /** Receives the call's output as it comes; `capped` marks the note that the rest is dropped. */
  output?(stream: 'stdout' | 'stderr', text: string, capped: boolean): void;
}

interface Invocation {
  id: number;
  job: FunctionJob;
  options: InvocationOptions;
  /** Aborts the call's API calls when it ends; made by its first API call (most calls make none). */
  controller?: AbortController;
  thread?: Thread;
  /** When it started on its thread (`performance.now()`, ms). */
  startedAt: number;
  /** Its thread reported it waiting in the event loop (`parked`): not computing from then on. */
  parked: boolean;
  ended: boolean;
  finish(result: FunctionOutcome | HttpError): void;
}

interface Thread {
  worker: Worker;
  /** The pool's `generation` when the thread booted: an older thread is retired after its call. */
  generation: number;
  invocation?: Invocation;
  lastReport: number;
  idleSince: number;
  /** The kept parts (`KEPT_PARTS`) this thread holds: the objects last sent to it. */
  kept: Partial<Pick<FunctionJob, (typeof KEPT_PARTS)[number]>>;
}

const WORKER_URL = new URL('./worker.js', import.meta.url);
const NO_AGENT: ApiReply = { status: 503, body: { error: 'the agent service is not running in this server', code: 'SERVICE_UNAVAILABLE' } };
const NO_MAIL: ApiReply = { status: 503, body: { error: 'mail is not available in this server', code: 'SERVICE_UNAVAILABLE' } };
const NO_JOBS: ApiReply = { status: 503, body: { error: 'jobs are not available in this server', code: 'SERVICE_UNAVAILABLE' } };
const MiB = 1024 * 1024;
const RSS_SLACK = 128 * MiB;
const GUARD_MS = 20;
/** A call running longer than this (ms) no longer holds back the queue (see the module comment). */
const COMPUTE_MS = 50;

/** A pool of warm function worker threads; see the module comment. */
export class WorkerPool {
  private readonly threads: Thread[] = [];
  private readonly queue: Invocation[] = [];
  private seq = 0;
  private generation = 0;
  /** Modules recompiled since the threads booted (`refresh`), by path: their import version. */
  private readonly versions = new Map<string, number>();
  private closed = false;
  private guard?: NodeJS.Timeout;
  private baselineRss = 0;
  private readonly reaper: NodeJS.Timeout;
  private readonly spareThreads: number;
  private readonly maxThreads: number;
  private readonly computeThreads: number;
  /** A `pump` due when the oldest computing call passes `COMPUTE_MS` (set only while calls queue). */
  private recheck?: NodeJS.Timeout;
  private readonly maxMemoryMb: number;
  private readonly settings: WorkerSettings;
  private readonly idleMs: number;
  private readonly logger?: Logger;

  constructor(options: WorkerPoolOptions = {}) {
    this.spareThreads = options.spareThreads ?? 2;
    this.maxThreads = Math.max(1, options.maxThreads ?? Math.max(8, 4 * availableParallelism()));
    this.computeThreads = Math.max(1, options.computeThreads ?? availableParallelism());
    this.maxMemoryMb = options.maxMemoryMb ?? 256;
    this.settings = { maxOutputBytes: options.maxOutputBytes ?? 2 * MiB };
    this.idleMs = options.idleMs ?? 30_000;
    this.logger = options.logger;
    this.reaper = setInterval(() => this.reap(), Math.max(1000, this.idleMs / 2)).unref();
    this.refill();
  }

  /** Invocations that may run at once (one per thread): the default concurrency of the job runner. */
  get capacity(): number {
    return this.maxThreads;
  }

  /**
   * Runs one invocation.
   * @returns what the code answered, or a `threw` outcome (the code threw, its thread died, or it went over
   *   the memory limit: the message says which)
   * @throws HttpError FUNCTION_TIMEOUT (504) when the time limit passes first
   */
  run(job: FunctionJob, options: InvocationOptions): Promise<FunctionOutcome> {
    return new Promise((ok, fail) => {
      const inv: Invocation = {
        id: ++this.seq,
        job,
        options,
        startedAt: 0,
        parked: false,
        ended: false,
        finish: (result) => {
          if (inv.ended) return;
          inv.ended = true;
          clearTimeout(timer);
          inv.controller?.abort();
          const queued = this.queue.indexOf(inv);
          if (queued >= 0) this.queue.splice(queued, 1);
          if (result instanceof Error) fail(result);
          else ok(result);
        },
      };
      const timer = setTimeout(() => {
        const thread = inv.thread;
        inv.finish(new HttpError('FUNCTION_TIMEOUT', `function ${options.name} did not finish within ${options.timeoutMs} ms`));
        if (thread) this.retire(thread);
      }, options.timeoutMs);
      this.queue.push(inv);
      this.pump();
    });
  }

  /** Stops idle threads now and busy ones when their call ends; later calls are refused (they time out). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    clearTimeout(this.recheck);
    const idle = this.threads.filter((t) => !t.invocation);
    await Promise.all(
      idle.map((t) => {
        this.drop(t);
        return t.worker.terminate();
      }),
    );
  }

  /**
   * Replaces every thread, so the next calls import the compiled modules afresh (`svc dev`, DESIGN §10:
   * function code changed): idle threads stop now, busy ones when their call ends (on the old code), and
   * the spare threads boot again.
   */
  recycle(): void {
    this.generation += 1;
    this.versions.clear();
    for (const t of this.threads.filter((x) => !x.invocation)) this.retire(t);
    this.refill();
  }

  /**
   * Makes the next calls import these compiled modules afresh (`svc dev`: a function's own file was
   * recompiled) on the warm threads, without booting new ones. A module imported by them (a shared
   * module under `functions/<folder>/`) is not imported again this way: use `recycle` for those.
   * @param modulePaths - absolute paths of compiled modules
   */
  refresh(modulePaths: string[]): void {
    for (const path of modulePaths) this.versions.set(path, (this.versions.get(path) ?? 0) + 1);
  }

  /**
   * Starts queued calls on idle threads (the first idle one, so short calls stay on few threads), booting
   * new threads up to `maxThreads`, while fewer than `computeThreads` calls compute.
   */
  private pump(): void {
    const now = performance.now();
    let computing = 0;
    let oldest = Infinity;
    for (const t of this.threads) {
      const running = t.invocation;
      if (!running || running.parked || now - running.startedAt >= COMPUTE_MS) continue;
      computing += 1;
      oldest = Math.min(oldest, running.startedAt);
    }
    while (!this.closed && this.queue.length > 0 && computing < this.computeThreads) {
      const thread = this.threads.find((t) => !t.invocation) ?? (this.threads.length < this.maxThreads ? this.spawn() : undefined);
      if (!thread) break;
      const inv = this.queue.shift()!;
      inv.thread = thread;
      inv.startedAt = now;
      computing += 1;
      oldest = Math.min(oldest, now);
      thread.invocation = inv;
      thread.lastReport = Date.now();
      thread.worker.ref();
      this.post(thread, { type: 'run', id: inv.id, job: this.wireJob(thread, inv.job) });
      this.watchMemory();
    }
    // Calls wait because enough compute: look again when the oldest of those passes COMPUTE_MS.
    if (!this.closed && this.queue.length > 0 && computing >= this.computeThreads && !this.recheck) {
      this.recheck = setTimeout(
        () => {
          this.recheck = undefined;
          this.pump();
        },
        Math.max(1, oldest + COMPUTE_MS - now),
      );
    }
    this.refill();
  }

  /** The job as sent to `thread`: the module version of `refresh`, and only the kept parts it lacks. */
  private wireJob(thread: Thread, job: FunctionJob): WireJob {
    const version = this.versions.get(job.modulePath);
    const wire: WireJob = { modulePath: job.modulePath, req: job.req, me: job.me, api: job.api, allowFetch: job.allowFetch };
    if (job.run) wire.run = job.run;
    if (version) wire.moduleVersion = version;
    for (const part of KEPT_PARTS) {
      if (thread.kept[part] === job[part]) continue;
      (wire as Record<string, unknown>)[part] = job[part];
      (thread.kept as Record<string, unknown>)[part] = job[part];
    }
    return wire;
  }

  private refill(): void {
    let idle = 0;
    for (const t of this.threads) if (!t.invocation) idle += 1;
    for (; !this.closed && idle < this.spareThreads && this.threads.length < this.maxThreads; idle += 1) this.spawn();
  }

  private spawn(): Thread {
    const worker = new Worker(WORKER_URL, { workerData: this.settings, resourceLimits: { maxOldGenerationSizeMb: this.maxMemoryMb } });
    const thread: Thread = { worker, generation: this.generation, lastReport: Date.now(), idleSince: Date.now(), kept: {} };
    this.threads.push(thread);
    // An idle thread must not keep the process alive.
    worker.unref();
    worker.on('message', (m: FromWorker) => this.onMessage(thread, m));
    worker.on('error', (err: Error & { code?: string }) => {
      const message =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `its heap reached functions.maxMemoryMb (${this.maxMemoryMb} MiB); its thread was stopped`
          : `its thread failed: ${err.message}`;
      if (thread.invocation) this.fail(thread, `function ${thread.invocation.options.name} ${message}`, err.stack);
      else this.logger?.warn({ err }, 'a function thread failed between calls');
    });
    worker.once('exit', (code) => {
      this.drop(thread);
      if (thread.invocation) this.fail(thread, `the thread of function ${thread.invocation.options.name} exited (code ${code}) before answering`);
      this.pump();
    });
    return thread;
  }

  private onMessage(thread: Thread, m: FromWorker): void {
    const inv = thread.invocation;
    const mine = inv !== undefined && 'id' in m && m.id === inv.id && !inv.ended;
    switch (m.type) {
      case 'api':
      case 'rt':
      case 'agent':
      case 'jobs':
      case 'mail':
        if (!mine) {
          this.post(thread, { type: 'api-reply', call: m.call, error: 'this function call has ended; its API calls are refused' });
          return;
        }
        (m.type === 'api'
          ? inv.options.callApi(m.request, (inv.controller ??= new AbortController()).signal, m.asApp === true)
          : m.type === 'rt'
            ? inv.options.callRealtime(m.request)
            : m.type === 'agent'
              ? (inv.options.callAgent?.(m.request) ?? Promise.resolve(NO_AGENT))
              : m.type === 'jobs'
                ? (inv.options.callJobs?.(m.request) ?? Promise.resolve(NO_JOBS))
                : (inv.options.callMail?.(m.request) ?? Promise.resolve(NO_MAIL))
        ).then(
          (reply) => this.post(thread, { type: 'api-reply', call: m.call, reply }),
          (err: unknown) => this.post(thread, { type: 'api-reply', call: m.call, error: err instanceof Error ? err.message : String(err) }),
        );
        return;
      case 'output':
        if (mine) inv.options.output?.(m.stream, m.text, m.capped === true);
        return;
      case 'parked':
        if (!mine) return;
        inv.parked = true;
        if (this.queue.length > 0) this.pump();
        return;
      case 'memory':
        thread.lastReport = Date.now();
        if (m.bytes > this.maxMemoryMb * MiB && inv) {
          this.fail(
            thread,
            `function ${inv.options.name} used ${Math.round(m.bytes / MiB)} MiB of memory, over functions.maxMemoryMb (${this.maxMemoryMb} MiB); its thread was stopped`,
          );
        }
        return;
      case 'done':
        if (!mine) return;
        thread.invocation = undefined;
        inv.finish(m.outcome);
        if (m.clean && !this.closed && thread.generation === this.generation && m.bytes <= (this.maxMemoryMb * MiB) / 2) {
          thread.idleSince = Date.now();
          thread.worker.unref();
        } else {
          this.retire(thread);
        }
        this.pump();
    }
  }

  /** Ends the thread's call with a `threw` outcome (logged by the caller as a 500) and retires the thread. */
  private fail(thread: Thread, message: string, stack?: string): void {
    const inv = thread.invocation;
    thread.invocation = undefined;
    inv?.finish({ kind: 'threw', name: 'FunctionLimitError', message, stack: stack ?? message });
    this.retire(thread);
  }

  private retire(thread: Thread): void {
    thread.invocation = undefined;
    if (this.drop(thread)) void thread.worker.terminate();
    this.pump();
  }

  /** Removes a thread from the pool; false when it was already gone. */
  private drop(thread: Thread): boolean {
    const i = this.threads.indexOf(thread);
    if (i >= 0) this.threads.splice(i, 1);
    return i >= 0;
  }

  private post(thread: Thread, message: ToWorker): void {
    try {
      thread.worker.postMessage(message);
    } catch {
      /* the thread is gone; its exit ends the call */
    }
  }

  /** Samples RSS while calls run; see the module comment. */
  private watchMemory(): void {
    if (this.guard) return;
    this.baselineRss = process.memoryUsage.rss();
    this.guard = setInterval(() => {
      const busy = this.threads.filter((t) => t.invocation);
      if (busy.length === 0) {
        clearInterval(this.guard);
        this.guard = undefined;
        return;
      }
      const rss = process.memoryUsage.rss();
      if (rss <= this.baselineRss + busy.length * this.maxMemoryMb * MiB + RSS_SLACK) return;
      const now = Date.now();
      for (const t of busy.filter((b) => now - b.lastReport > 4 * MEMORY_REPORT_MS)) {
        this.fail(
          t,
          `function ${t.invocation!.options.name} stopped reporting its memory while the server's memory (${Math.round(rss / MiB)} MiB) ` +
            `passed the bound for functions.maxMemoryMb (${this.maxMemoryMb} MiB) per call; its thread was stopped`,
        );
      }
      // Memory of a stopped thread is freed a moment later; measure from here until the pool is idle again.
      this.baselineRss = Math.max(this.baselineRss, rss - busy.length * this.maxMemoryMb * MiB);
    }, GUARD_MS).unref();
  }

  private reap(): void {
    const now = Date.now();
    const idle = this.threads.filter((t) => !t.invocation).sort((a, b) => a.idleSince - b.idleSince);
    for (const t of idle.slice(0, Math.max(0, idle.length - this.spareThreads))) {
      if (now - t.idleSince > this.idleMs) this.retire(t);
    }
  }
}
