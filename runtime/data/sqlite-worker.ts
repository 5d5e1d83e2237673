/**
 * @module The body of one SQLite worker thread (see sqlite-driver.ts): it owns one better-sqlite3
 * connection and runs the statements the main thread posts, one message at a time.
 *
 * Protocol (kept small; everything crosses by structured clone):
 * - in:  `{ i: id, s: sql, v: values }` runs a statement; `null` closes the connection and ends the thread
 *        (an open transaction is rolled back). Once `workerData.stop` is set, statements are refused unrun.
 * - out: `{ ready: true }` once the connection is open, or `{ fatal: message }` when it cannot open;
 *        `{ i, r: rows }` (plus `b: 1` when a row holds a blob, which arrives as a Uint8Array);
 *        `{ i, w: 1 }` from a reader: the statement writes, send it to the writer instead;
 *        `{ i, e: { message, code } }` when the statement fails.
 * Connection settings: WAL (set by the writer), `busy_timeout`, `foreign_keys = ON`, svc's SQL functions
 * (the capture context they keep is cleared at every BEGIN IMMEDIATE, COMMIT and ROLLBACK).
 * Integers come back as JS numbers (no safeIntegers); booleans sent in are bound as 1/0.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database, { type Statement } from 'better-sqlite3';
import { registerSqliteFunctions, type SqliteSessionState } from './sqlite-functions.js';

/** What the main thread passes as `workerData`. */
export interface SqliteWorkerData {
  path: string;
  role: 'writer' | 'reader';
  busyTimeoutMs: number;
  /**
   * One Int32 the main thread sets to 1 to stop this thread's work (a statement past its time limit):
   * svc's SQL functions then throw, ending a statement that calls them, and statements still queued
   * are refused unrun. The thread itself ends when the close request (`null`) that follows is read.
   */
  stop: SharedArrayBuffer;
}

/** A message from the main thread: a statement, or null to close. */
export type SqliteRequest = { i: number; s: string; v: readonly unknown[] } | null;

/** A message to the main thread. */
export type SqliteReply =
  | { ready: true }
  | { fatal: string }
  | { i: number; r: Record<string, unknown>[]; b?: 1 }
  | { i: number; w: 1 }
  | { i: number; e: { message: string; code?: string } };

const CACHE_SIZE = 256;

function open(data: SqliteWorkerData, stopped: () => boolean): { db: Database.Database; session: SqliteSessionState } {
  const db = new Database(data.path, { timeout: data.busyTimeoutMs });
  if (data.role === 'writer') db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  return { db, session: registerSqliteFunctions(db, stopped) };
}

/** Statements that begin or end a transaction: the capture context (`capture-context.ts`) ends with them. */
const TX_BOUNDARY = new Set(['BEGIN IMMEDIATE', 'COMMIT', 'ROLLBACK']);

function hasBlob(rows: Record<string, unknown>[]): boolean {
  for (const row of rows) for (const key in row) if (row[key] instanceof Uint8Array) return true;
  return false;
}

function bindable(values: readonly unknown[]): unknown[] {
  const out = values as unknown[];
  for (let k = 0; k < out.length; k++) if (typeof out[k] === 'boolean') out[k] = out[k] ? 1 : 0;
  return out;
}

function main(): void {
  const port = parentPort!;
  const data = workerData as SqliteWorkerData;
  const flag = new Int32Array(data.stop);
  const stopped = () => Atomics.load(flag, 0) === 1;
  let db: Database.Database;
  let session: SqliteSessionState;
  try {
    ({ db, session } = open(data, stopped));
  } catch (err) {
    port.postMessage({ fatal: (err as Error).message } satisfies SqliteReply);
    return;
  }
  const cache = new Map<string, Statement>();
  const prepare = (sql: string): Statement => {
    let stmt = cache.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(sql, stmt);
    }
    return stmt;
  };
  port.on('message', (msg: SqliteRequest) => {
    if (msg === null) {
      db.close();
      port.close();
      return;
    }
    let reply: SqliteReply;
    if (stopped()) {
      // Queued behind a statement that ran out of time: its caller has been answered; never run it.
      port.postMessage({ i: msg.i, e: { message: 'the SQLite worker was stopped', code: 'STATEMENT_TIMEOUT' } } satisfies SqliteReply);
      return;
    }
    if (TX_BOUNDARY.has(msg.s)) session.clearContext();
    try {
      const stmt = prepare(msg.s);
      if (data.role === 'reader' && !stmt.readonly) {
        reply = { i: msg.i, w: 1 };
      } else if (stmt.reader) {
        const rows = stmt.all(bindable(msg.v)) as Record<string, unknown>[];
        reply = hasBlob(rows) ? { i: msg.i, r: rows, b: 1 } : { i: msg.i, r: rows };
      } else {
        stmt.run(bindable(msg.v));
        reply = { i: msg.i, r: [] };
      }
    } catch (err) {
      const e = err as { message?: string; code?: unknown };
      reply = { i: msg.i, e: { message: String(e?.message ?? err), code: typeof e?.code === 'string' ? e.code : undefined } };
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true } satisfies SqliteReply);
}

main();
