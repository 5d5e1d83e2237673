/**
 * @module The app's database: a `SqlDriver` for its provider (PostgreSQL through our own pool,
 * SQLite in worker threads) running the SQL the runtime compiles, with values encoded per provider.
 * Transactions are units of work: see `unit-of-work.ts`.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DatabaseProvider } from '../manifest.js';
import { renderSql, type Sql } from '../query/sql.js';
import type { SqlDriver, SqlTransaction, TransactionOptions } from './driver.js';
import { encodeValues } from './values.js';
import { createPgDriver } from './pg-driver.js';
import { createSqliteDriver } from './sqlite-driver.js';

/** The part of a Prisma client the auth store still uses (system tables). */
export interface PrismaLike {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  [delegate: string]: unknown;
}

export interface PrismaClientLike extends PrismaLike {
  $disconnect(): Promise<void>;
}

/** A transaction handle: statements run on the transaction's connection. */
export interface Tx {
  readonly sql: SqlTransaction;
}

export interface Database {
  provider: DatabaseProvider;
  /** The generated Prisma client (system tables only; data paths use `query`). */
  client: PrismaClientLike;
  /** Runs a compiled statement, inside `tx` when given. Values are encoded for the provider. */
  query<T = Record<string, unknown>>(statement: Sql, tx?: Tx): Promise<T[]>;
  /** Runs `fn` in one transaction (see `SqlDriver.transaction`). */
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the database answers. @throws an error with `unavailable: true` otherwise */
  ping(): Promise<void>;
  close(): Promise<void>;
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
}

/**
 * Opens the driver for `url` (already resolved) and the generated Prisma client in `<svcDir>/client/`
 * (sharing the PostgreSQL pool).
 * Source: DESIGN §5 (Prisma 7 client with driver adapters).
 */
export async function openDatabase(svcDir: string, provider: DatabaseProvider, url: string, options: DatabaseOptions = {}): Promise<Database> {
  const { PrismaClient } = await import(pathToFileURL(resolve(svcDir, 'client', 'client.js')).href);
  let driver: SqlDriver;
  let adapter: unknown;
  if (provider === 'sqlite') {
    const path = url.slice('file:'.length);
    driver = await createSqliteDriver(path, { statementTimeoutMs: options.statementTimeoutMs });
    const { PrismaBetterSqlite3 } = await import('@prisma/adapter-better-sqlite3');
    adapter = new PrismaBetterSqlite3({ url });
  } else {
    const pg = createPgDriver(url, { statementTimeoutMs: options.statementTimeoutMs });
    driver = pg;
    const { PrismaPg } = await import('@prisma/adapter-pg');
    adapter = new PrismaPg(pg.pool as never);
  }
  const client = new PrismaClient({ adapter }) as PrismaClientLike;
  return {
    provider,
    client,
    query: async <T>(statement: Sql, tx?: Tx) => {
      const { text, values } = renderSql(statement, provider);
      return (await (tx ? tx.sql : driver).query(text, encodeValues(values, provider))) as T[];
    },
    transaction: (fn, opts) => driver.transaction((sqlTx) => fn({ sql: sqlTx }), opts),
    ping: () => driver.ping(),
    close: async () => {
      await client.$disconnect();
      await driver.close();
    },
  };
}
