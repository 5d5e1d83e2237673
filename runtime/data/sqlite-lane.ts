/**
 * @module One SQLite worker thread seen from the main thread (a "lane"): posts statements to it,
 * matches the replies, enforces the statement time limit, and replaces the thread when it must.
 *
 * - A statement still running after `timeoutMs` rejects with `{ code: 'STATEMENT_TIMEOUT' }`, and a fresh
 *   thread is started at once. The old one is told to stop (`SqliteWorkerData.stop`: svc's SQL functions
 *   throw, so a statement calling `svc_lower` ends at its next row; statements queued behind it are
 *   refused unrun) and to close, and ends by itself when the statement returns, closing its connection
 *   (an open transaction is rolled back). It is never terminated while a statement runs: better-sqlite3
 *   aborts the whole process when a thread is terminated inside a statement (FATAL ERROR
 *   `v8::ToLocalChecked Empty MaybeLocal` from `Database::ThrowSqliteError`). A statement that never
 *   calls into JS runs to its end in the background, holding its connection (for the writer: the write
 *   lock, so writes meanwhile wait and may fail SQLITE_BUSY).
 * - A thread that dies by itself rejects its statements with `unavailable`; the next call starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { unavailable, type SqlRow } from './driver.js';
import type { SqliteReply, SqliteRequest, SqliteWorkerData } from './sqlite-worker.js';

const WORKER_URL = new URL('./sqlite-worker.js', import.meta.url);

/** The reader's answer "this statement writes; run it on the writer". */
export const FORWARD = Symbol('forward to the writer');

interface Pending {
  resolve(rows: SqlRow[] | typeof FORWARD): void;
  reject(err: unknown): void;
  timer?: NodeJS.Timeout;
}

/** A statement error from SQLite: `code` like `SQLITE_CONSTRAINT_FOREIGNKEY`. */
function sqliteError(e: { message: string; code?: string }): Error & { code?: string } {
  const err = new Error(e.message) as Error & { code?: string };
  err.name = 'SqliteError';
  if (e.code) err.code = e.code;
  return err;
}

/** The error of a statement that ran past the time limit. */
export function statementTimeout(ms: number): Error & { code: 'STATEMENT_TIMEOUT' } {
  return Object.assign(new Error(`the statement ran longer than ${ms} ms and was stopped`), { code: 'STATEMENT_TIMEOUT' as const });
}

/** Blobs cross the thread boundary as Uint8Array; callers get Buffers, as from better-sqlite3 itself. */
function restoreBuffers(rows: SqlRow[]): void {
  for (const row of rows) {
    for (const key in row) {
      const v = row[key];
      if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[key] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    }
  }
}

/** One worker thread and its statements in flight; see the module comment. */
export class SqliteLane {
  private worker: Worker | undefined;
  /** The current thread's stop flag (`SqliteWorkerData.stop`). */
  private stop!: Int32Array;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** Bumped each time a new thread (a new connection) is started. */
  generation = 0;
  /** Settles when the current thread has opened its connection. */
  ready: Promise<void> = Promise.resolve();
  /** The current thread has opened its connection (statement timers run from then on). */
  isReady = false;

  constructor(
    private readonly data: Omit<SqliteWorkerData, 'stop'>,
    private readonly timeoutMs: number,
    /** Called after each statement settles (the driver hands out queued reads). */
    private readonly onSettled: () => void = () => {},
  ) {
    this.spawn();
  }

  /** Statements posted and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  private spawn(): void {
    this.generation++;
    this.isReady = false;
    const stop = new SharedArrayBuffer(4);
    this.stop = new Int32Array(stop);
    const worker = new Worker(WORKER_URL, { workerData: { ...this.data, stop } satisfies SqliteWorkerData });
    worker.unref(); // an idle driver does not keep the process alive (`run` refs it while statements are out)
    this.worker = worker;
    this.ready = new Promise<void>((ok, fail) => {
      worker.on('message', (m: SqliteReply) => {
        if ('ready' in m) {
          this.isReady = true;
          ok();
        } else if ('fatal' in m) fail(unavailable(new Error(m.fatal), `cannot open the SQLite database: ${m.fatal}`));
        else this.settle(m);
      });
      worker.on('error', (err) => {
        fail(err);
        this.lost(worker, err);
      });
      worker.on('exit', (code) => {
        fail(new Error(`exited (${code})`));
        this.lost(worker, new Error(`the SQLite worker exited (${code})`));
      });
    });
    this.ready.catch(() => {});
  }

  private settle(m: Exclude<SqliteReply, { ready: true } | { fatal: string }>): void {
    const p = this.pending.get(m.i);
    if (!p) return;
    this.pending.delete(m.i);
    clearTimeout(p.timer);
    if (this.pending.size === 0) this.worker?.unref();
    if ('e' in m) p.reject(sqliteError(m.e));
    else if ('w' in m) p.resolve(FORWARD);
    else {
      if (m.b) restoreBuffers(m.r);
      p.resolve(m.r);
    }
    this.onSettled();
  }

  /** The thread died without being asked to: its statements fail as unavailable. */
  private lost(worker: Worker, cause: unknown): void {
    if (worker !== this.worker) return;
    this.worker = undefined;
    this.failAll(unavailable(cause, 'the SQLite connection was lost'));
  }

  private failAll(err: unknown, except?: number): void {
    for (const [id, p] of this.pending) {
      if (id === except) continue;
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    this.onSettled();
  }

  private timedOut(id: number): void {
    const p = this.pending.get(id);
    const worker = this.worker;
    if (!p || !worker) return;
    this.pending.delete(id);
    p.reject(statementTimeout(this.timeoutMs));
    this.worker = undefined;
    worker.removeAllListeners('message');
    worker.removeAllListeners('exit');
    worker.on('error', () => {});
    // Stopped and asked to close, never terminated (see the module comment); it ends on its own.
    Atomics.store(this.stop, 0, 1);
    worker.postMessage(null satisfies SqliteRequest);
    worker.unref();
    this.failAll(unavailable(new Error('the SQLite worker was restarted after a statement timeout')));
    if (!this.closed) this.spawn();
  }

  /** Runs one statement; resolves to its rows, or FORWARD when a reader was handed a write. */
  run(sql: string, values: readonly unknown[]): Promise<SqlRow[] | typeof FORWARD> {
    if (this.closed) return Promise.reject(unavailable(new Error('closed'), 'the database is closed'));
    if (!this.worker) this.spawn();
    const worker = this.worker!;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const entry: Pending = { resolve, reject };
      const startTimer = () => {
        if (this.pending.get(id) === entry) entry.timer = setTimeout(() => this.timedOut(id), this.timeoutMs);
      };
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, entry);
      worker.postMessage({ i: id, s: sql, v: values } satisfies SqliteRequest);
      // The limit counts from when the thread can run statements, not from its start-up.
      if (this.isReady) startTimer();
      else this.ready.then(startTimer, () => {});
    });
  }

  /** Asks the thread to close its connection (checkpointing the WAL); terminates it after 2 s. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(unavailable(new Error('closed'), 'the database is closed'));
    if (!worker) return;
    worker.removeAllListeners('exit');
    const exited = new Promise<void>((done) => worker.once('exit', () => done()));
    Atomics.store(this.stop, 0, 1); // a statement calling svc's functions ends now rather than at the 2 s below
    worker.postMessage(null satisfies SqliteRequest);
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }
}
