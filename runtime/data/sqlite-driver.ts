/**
 * @module The SQLite `SqlDriver` (driver.ts). No statement runs on the main thread (issue 10): worker
 * threads own the better-sqlite3 connections (sqlite-worker.ts, sqlite-lane.ts).
 *
 * - One writer thread runs every transaction and every write. Transactions are serialized in the main
 *   thread (a queue): `BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` when `fn` throws or the signal aborts.
 * - `readers` reader threads run `query()` calls made outside a transaction, each on the first idle
 *   reader (calls wait in line when all are busy), so a long read does not hold up short ones. A
 *   statement a reader finds is not read-only (better-sqlite3's `stmt.readonly`) is sent to the writer;
 *   statements that plainly write (INSERT, UPDATE, DELETE, …) go to the writer directly.
 * - Connections: WAL journal, `busy_timeout` (5000 ms, better-sqlite3's and Prisma's default),
 *   `foreign_keys = ON` (as better-sqlite3 builds SQLite, so as under Prisma), `svc_lower` registered.
 * - Rows are plain objects (integers as numbers, blobs as Buffers). Values: driver.ts.
 * Errors: statement errors carry SQLite's `code` (`SQLITE_CONSTRAINT_FOREIGNKEY`, …); a statement past
 * `statementTimeoutMs` rejects with `code: 'STATEMENT_TIMEOUT'` and its thread is replaced; a lost
 * thread rejects with `unavailable`.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { untilAborted } from './abort.js';
import { unavailable, type SqlDriver, type SqlRow, type SqlTransaction, type TransactionOptions } from './driver.js';
import { FORWARD, SqliteLane } from './sqlite-lane.js';

/** Options of `createSqliteDriver`. */
export interface SqliteDriverOptions {
  /** Reader threads. Default 2. */
  readers?: number;
  /** Per-statement limit, in ms. Default 10000. */
  statementTimeoutMs?: number;
  /** How long a statement waits for a lock held by another connection (SQLite `busy_timeout`), in ms. Default 5000. */
  busyTimeoutMs?: number;
}

const PLAIN_WRITE = /^\s*(insert|update|delete|replace|create|drop|alter|begin|commit|rollback|savepoint|release|pragma|vacuum|reindex|analyze)\b/i;

/** A first-come, first-served lock whose waiters can give up when their signal aborts. */
class Queue {
  private held = false;
  private readonly waiters: (() => void)[] = [];

  acquire(signal?: AbortSignal): Promise<() => void> {
    return new Promise((ok, fail) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        let released = false;
        ok(() => {
          if (released) return;
          released = true;
          const next = this.waiters.shift();
          if (next) next();
          else this.held = false;
        });
      };
      const onAbort = () => {
        const at = this.waiters.indexOf(grant);
        if (at >= 0) this.waiters.splice(at, 1);
        fail(signal!.reason);
      };
      if (!this.held) {
        this.held = true;
        grant();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(grant);
    });
  }
}

interface ReadJob {
  text: string;
  values: readonly unknown[];
  resolve(rows: SqlRow[]): void;
  reject(err: unknown): void;
}

/**
 * Opens `path` (a file path or a `file:` URL; its folder is created) with one writer and `readers`
 * reader threads, and resolves once every connection is open. Rejects (unavailable) when the file
 * cannot be opened. Source: DESIGN §5, issue 10.
 */
export async function createSqliteDriver(path: string, options: SqliteDriverOptions = {}): Promise<SqlDriver> {
  const file = path.startsWith('file:') ? path.slice('file:'.length) : path;
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const timeoutMs = options.statementTimeoutMs ?? 10_000;
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const readQueue: ReadJob[] = [];
  const writeQueue = new Queue();
  let closed = false;

  // The writer first: it switches the file to WAL before the readers open it.
  const writer = new SqliteLane({ path: file, role: 'writer', busyTimeoutMs }, timeoutMs);
  const readers: SqliteLane[] = [];
  let pointReader: SqliteLane | undefined;
  const lanes = () => [writer, ...readers, ...(pointReader ? [pointReader] : [])];
  try {
    await writer.ready;
    // An in-memory database exists once per connection: everything then runs on the writer.
    const readerCount = file === ':memory:' ? 0 : (options.readers ?? 2);
    for (let k = 0; k < readerCount; k++) readers.push(new SqliteLane({ path: file, role: 'reader', busyTimeoutMs }, timeoutMs, () => pump()));
    // Point reads (rows by primary key) get a reader of their own, so they never wait behind a scan.
    if (readerCount > 0) pointReader = new SqliteLane({ path: file, role: 'reader', busyTimeoutMs }, timeoutMs);
    await Promise.all([...readers, ...(pointReader ? [pointReader] : [])].map((r) => r.ready));
  } catch (err) {
    await Promise.all(lanes().map((l) => l.close()));
    throw (err as { unavailable?: boolean }).unavailable ? err : unavailable(err);
  }

  /** A statement outside any transaction on the writer, in line with the transactions. */
  async function autocommitWrite(text: string, values: readonly unknown[]): Promise<SqlRow[]> {
    const release = await writeQueue.acquire();
    try {
      return (await writer.run(text, values)) as SqlRow[];
    } finally {
      release();
    }
  }

  /** Hands queued reads to idle readers. */
  function pump(): void {
    while (readQueue.length) {
      const lane = readers.find((r) => r.inFlight === 0 && r.isReady) ?? readers.find((r) => r.inFlight === 0);
      if (!lane) return;
      const job = readQueue.shift()!;
      lane
        .run(job.text, job.values)
        .then((rows) => (rows === FORWARD ? autocommitWrite(job.text, job.values) : rows))
        .then(job.resolve, job.reject);
    }
  }

  const driver: SqlDriver = {
    provider: 'sqlite',

    query(text, values, options) {
      if (closed) return Promise.reject(unavailable(new Error('closed'), 'the database is closed'));
      if (PLAIN_WRITE.test(text) || readers.length === 0) return autocommitWrite(text, values);
      if (options?.point && pointReader) {
        // The lane's worker runs its messages one after another; point reads are short.
        return pointReader.run(text, values).then((rows) => (rows === FORWARD ? autocommitWrite(text, values) : (rows as SqlRow[])));
      }
      return new Promise<SqlRow[]>((resolve, reject) => {
        readQueue.push({ text, values, resolve, reject });
        pump();
      });
    },

    async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
      const { signal } = opts;
      signal?.throwIfAborted();
      if (closed) throw unavailable(new Error('closed'), 'the database is closed');
      const release = await writeQueue.acquire(signal);
      let open = false;
      let generation = 0;
      try {
        await writer.run('BEGIN IMMEDIATE', []);
        open = true;
        generation = writer.generation;
        const tx: SqlTransaction = {
          query: async (text, values) => {
            if (!open) throw new Error('the transaction is over');
            signal?.throwIfAborted();
            return (await writer.run(text, values)) as SqlRow[];
          },
        };
        const result = await untilAborted(fn(tx), signal);
        signal?.throwIfAborted();
        open = false; // from here on, a late tx.query from fn is refused
        try {
          await writer.run('COMMIT', []);
        } catch (err) {
          // A failed COMMIT (a deferred constraint) leaves SQLite's transaction open.
          if (writer.generation === generation) await writer.run('ROLLBACK', []).catch(() => {});
          throw err;
        }
        return result;
      } catch (err) {
        if (open) {
          open = false;
          // A writer restarted since BEGIN (statement timeout) took the transaction with it.
          if (writer.generation === generation) await writer.run('ROLLBACK', []).catch(() => {});
        }
        throw err;
      } finally {
        release();
      }
    },

    async ping() {
      await driver.query('SELECT 1', []);
    },

    async close() {
      closed = true;
      for (const job of readQueue.splice(0)) job.reject(unavailable(new Error('closed'), 'the database is closed'));
      await Promise.all(lanes().map((l) => l.close()));
    },
  };
  return driver;
}
