/**
 * @module The app's database: a `SqlDriver` for its provider (PostgreSQL through our own pool,
 * SQLite in worker threads) running the SQL the runtime compiles, with values encoded per provider.
 * Transactions are units of work: see `unit-of-work.ts`.
 */
import { statementSpan, tracingOn } from '../tracing/tracing.js';
import { isAbsolute, resolve } from 'node:path';
import type { DatabaseProvider } from '../manifest.js';
import { renderSql, type Sql } from '../query/sql.js';
import type { QueryOptions, SqlDriver, SqlTransaction, TransactionOptions } from './driver.js';
import { encodeValues } from './values.js';
import { createSqliteDriver } from './sqlite-driver.js';

/** A transaction handle: statements run on the transaction's connection. */
export interface Tx {
  readonly sql: SqlTransaction;
}

export interface Database {
  provider: DatabaseProvider;
  /**
   * Runs a compiled statement, inside `tx` when given. Values are encoded for the provider. `point`:
   * it reads rows by primary key (see `SqlDriver.query`).
   */
  query<T = Record<string, unknown>>(statement: Sql, tx?: Tx, options?: QueryOptions): Promise<T[]>;
  /** Runs `fn` in one transaction (see `SqlDriver.transaction`). */
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the database answers. @throws an error with `unavailable: true` otherwise */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** PostgreSQL: the pool's connections (total, idle) and callers waiting for one; SQLite: absent. */
  poolStats?(): { total: number; idle: number; waiting: number };
}

/** The provider a database URL names, or null when it names none we serve. */
export function providerOf(url: string): DatabaseProvider | null {
  if (url.startsWith('file:')) return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgresql';
  return null;
}

/** `file:./data/x.db` relative to the app folder → `file:/abs/data/x.db`; other URLs unchanged. */
export function resolveDatabaseUrl(url: string, appDir: string): string {
  if (!url.startsWith('file:')) return url;
  const path = url.slice('file:'.length);
  return `file:${isAbsolute(path) ? path : resolve(appDir, path)}`;
}

/** Options of `openDatabase`. */
export interface DatabaseOptions {
  /** PostgreSQL `statement_timeout` and SQLite's statement limit, in ms. Default 10000. */
  statementTimeoutMs?: number;
  /** Told each statement's duration in seconds and whether it failed (the metrics of docs/operations.md). */
  observe?: (seconds: number, failed: boolean) => void;
}

/**
 * Opens the driver for `url` (already resolved). The generated Prisma client is not used at run
 * time: Prisma owns the schema and the migrations (DESIGN §5); requests run the SQL we compile.
 */
export async function openDatabase(provider: DatabaseProvider, url: string, options: DatabaseOptions = {}): Promise<Database> {
  const driver: SqlDriver & { pool?: { totalCount: number; idleCount: number; waitingCount: number } } =
    provider === 'sqlite'
      ? await createSqliteDriver(url.slice('file:'.length), { statementTimeoutMs: options.statementTimeoutMs })
      : (await import('./pg-driver.js')).createPgDriver(url, { statementTimeoutMs: options.statementTimeoutMs }); // pg loads only for PostgreSQL apps
  const { observe } = options;
  const pool = driver.pool;
  return {
    provider,
    query: async <T>(statement: Sql, tx?: Tx, queryOptions?: QueryOptions) => {
      const { text, values } = renderSql(statement, provider);
      const encoded = encodeValues(values, provider);
      if (!observe && !tracingOn()) return (await (tx ? tx.sql.query(text, encoded) : driver.query(text, encoded, queryOptions))) as T[];
      const end = statementSpan(provider, text);
      const started = performance.now();
      try {
        const rows = (await (tx ? tx.sql.query(text, encoded) : driver.query(text, encoded, queryOptions))) as T[];
        observe?.((performance.now() - started) / 1000, false);
        end?.();
        return rows;
      } catch (err) {
        observe?.((performance.now() - started) / 1000, true);
        end?.(err);
        throw err;
      }
    },
    poolStats: pool && (() => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount })),
    transaction: (fn, opts) => driver.transaction((sqlTx) => fn({ sql: sqlTx }), opts),
    ping: () => driver.ping(),
    close: () => driver.close(),
  };
}
