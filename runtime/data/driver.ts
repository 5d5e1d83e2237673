/**
 * @module The seam between the runtime and a database: a `SqlDriver` runs SQL text with positional
 * values (already rendered for its provider by `renderSql`) and runs transactions on one connection.
 * Implementations: `pg-driver.ts` (PostgreSQL through our own `pg.Pool`) and `sqlite-driver.ts`
 * (SQLite in worker threads that own the connections, so no statement runs on the event loop).
 *
 * Values handed to a driver are already encoded for storage (`encodeValue` in `values.ts`): strings,
 * numbers, booleans (SQLite: 0/1), null, bigint and Buffers only — never Date objects — so they cross a
 * worker boundary unchanged. Rows come back as plain objects keyed by column name.
 */
import type { DatabaseProvider } from '../manifest.js';

/** One result row, keyed by column name. */
export type SqlRow = Record<string, unknown>;

/** Runs one statement inside a transaction (same connection as the rest of it). */
export interface SqlTransaction {
  query(text: string, values: readonly unknown[]): Promise<SqlRow[]>;
}

/** Options of `SqlDriver.query`. */
export interface QueryOptions {
  point?: boolean;
  /**
   * The text is one of a bounded set of shapes (a read by primary key, a one-row insert), run again and
   * again: a driver may keep it prepared on each connection (PostgreSQL: a named statement, parsed and
   * planned once per connection instead of per call).
   */
  prepare?: boolean;
  /**
   * Date-time (`timestamptz`) columns may come back as the database's UTC text instead of a `Date`
   * (PostgreSQL; SQLite always answers text): for reads whose rows go through the row codec only.
   */
  timesAsText?: boolean;
}

/** Options of `SqlDriver.transaction`. */
export interface TransactionOptions {
  /** When aborted before the commit, the transaction rolls back and the call rejects with the reason. */
  signal?: AbortSignal;
}

/**
 * A database connection pool of one provider.
 * Errors: a statement error rejects with the driver's error (a PostgreSQL error carries `code`, the
 * SQLSTATE; SQLite's carries `code` like `SQLITE_CONSTRAINT_FOREIGNKEY`). A lost connection or an
 * unreachable server rejects with an error whose `unavailable` is true (mapped to 503); it never
 * crashes the process, and the next call tries a fresh connection.
 */
export interface SqlDriver {
  readonly provider: DatabaseProvider;
  /**
   * Runs one statement outside any transaction (autocommit). `point`: the statement reads a few rows
   * by primary key; a driver may run it apart from scans (SQLite gives it a reader of its own).
   */
  query(text: string, values: readonly unknown[], options?: QueryOptions): Promise<SqlRow[]>;
  /**
   * Runs `fn` between BEGIN and COMMIT on one connection; ROLLBACK when `fn` throws or the signal
   * aborts before the commit. Resolves with what `fn` returned, after the commit.
   */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the database answers `SELECT 1`; rejects (unavailable) otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Marks an error as "the database cannot be reached" (503 with Retry-After). */
export function unavailable(cause: unknown, message = 'the database is unavailable'): Error & { unavailable: true } {
  const err = new Error(message, { cause }) as Error & { unavailable: true };
  err.unavailable = true;
  return err;
}
