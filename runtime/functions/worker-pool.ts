/**
 * @module Runs function invocations in worker threads, one thread per invocation (DESIGN §4 "Function
 * details"). A few threads are started ahead of time so a call does not wait for a thread to boot; at most
 * `maxThreads` run at once and later calls queue. A call that is not done within its time limit gets its
 * thread terminated — which also stops a synchronous infinite loop — and rejects with 504 FUNCTION_TIMEOUT.
 * A thread that dies (a stray exception after the code returned, `process.exit`) only ends its own call.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { HttpError } from '../errors.js';
import type { FunctionJob, FunctionOutcome } from './context.js';

export interface WorkerPoolOptions {
  /** Threads kept booted and waiting. Default 2. */
  spareThreads?: number;
  /** Invocations running at once; the rest wait in line. Default 4 × CPU count, at least 8. */
  maxThreads?: number;
  /** Heap limit of one thread, in MiB. Default 256. */
  maxHeapMb?: number;
}

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** A pool of function worker threads; see the module comment. */
export class WorkerPool {
  private readonly spares: Worker[] = [];
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private closed = false;
  private readonly spareThreads: number;
  private readonly maxThreads: number;
  private readonly maxHeapMb: number;

  constructor(options: WorkerPoolOptions = {}) {
    this.spareThreads = options.spareThreads ?? 2;
    this.maxThreads = options.maxThreads ?? Math.max(8, 4 * availableParallelism());
    this.maxHeapMb = options.maxHeapMb ?? 256;
    this.refill();
  }

  /**
   * Runs one invocation.
   * @param timeoutMs - limit from the call until the outcome, waiting in line included
   * @returns what the worker answered (a `threw` outcome when the code threw or the thread died)
   * @throws HttpError FUNCTION_TIMEOUT (504) when the limit passes first
   */
  async run(job: FunctionJob, timeoutMs: number, name: string): Promise<FunctionOutcome> {
    let timer: NodeJS.Timeout | undefined;
    let worker: Worker | undefined;
    let timedOut = false;
    const timeout = new Promise<never>((_ok, fail) => {
      timer = setTimeout(() => {
        timedOut = true;
        fail(new HttpError('FUNCTION_TIMEOUT', `function ${name} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    const slot = this.acquire();
    try {
      await Promise.race([slot, timeout]);
      worker = this.take();
      return await Promise.race([this.invoke(worker, job), timeout]);
    } finally {
      clearTimeout(timer);
      if (worker) void worker.terminate();
      if (timedOut && !worker) void slot.then(() => this.release());
      else this.release();
    }
  }

  /** Terminates the spare threads; running invocations finish or time out on their own. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.spares.splice(0).map((w) => w.terminate()));
  }

  private invoke(worker: Worker, job: FunctionJob): Promise<FunctionOutcome> {
    return new Promise((ok) => {
      worker.once('message', (outcome: FunctionOutcome) => ok(outcome));
      worker.once('error', (err) => ok({ kind: 'threw', name: err.name, message: err.message, stack: err.stack }));
      worker.once('exit', (code) => ok({ kind: 'threw', name: 'Error', message: `the function's thread exited (code ${code}) before answering` }));
      worker.ref();
      worker.postMessage(job);
    });
  }

  private acquire(): Promise<void> {
    if (this.running < this.maxThreads) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((ok) => this.waiting.push(() => { this.running++; ok(); }));
  }

  private release(): void {
    this.running--;
    this.waiting.shift()?.();
  }

  private take(): Worker {
    const worker = this.spares.shift() ?? this.spawn();
    this.refill();
    return worker;
  }

  private refill(): void {
    while (!this.closed && this.spares.length < this.spareThreads) this.spares.push(this.spawn());
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb } });
    // A spare must not keep the process alive, nor crash it if it fails to boot.
    worker.unref();
    worker.on('error', () => {});
    worker.once('exit', () => {
      const i = this.spares.indexOf(worker);
      if (i >= 0) this.spares.splice(i, 1);
    });
    return worker;
  }
}
