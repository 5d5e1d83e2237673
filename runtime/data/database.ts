/**
 * @module Opens the app's generated Prisma client with the driver adapter for its provider, and runs
 * compiled, parameterised SQL through it (`$queryRawUnsafe` with bound values only).
 */
import { mkdirSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DatabaseProvider } from '../manifest.js';
import { renderSql, type Sql } from '../query/sql.js';
import { registerSqliteFunctions } from './sqlite-functions.js';
import type { Database as SqliteDatabase } from 'better-sqlite3';

/** The part of a Prisma client (or its interactive transaction) the runtime uses. */
export interface PrismaLike {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  [delegate: string]: unknown;
}

export interface PrismaClientLike extends PrismaLike {
  $transaction<T>(fn: (tx: PrismaLike) => Promise<T>, options?: { timeout?: number; maxWait?: number }): Promise<T>;
  $disconnect(): Promise<void>;
}

export interface Database {
  provider: DatabaseProvider;
  client: PrismaClientLike;
  /** Runs a compiled statement on the client or inside a transaction. */
  query<T = Record<string, unknown>>(statement: Sql, tx?: PrismaLike): Promise<T[]>;
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

/**
 * Opens the generated client in `<svcDir>/client/` for `url` (already resolved).
 * Source: DESIGN §5 (Prisma 7 client with driver adapters).
 */
export async function openDatabase(svcDir: string, provider: DatabaseProvider, url: string): Promise<Database> {
  const { PrismaClient } = await import(pathToFileURL(resolve(svcDir, 'client', 'client.js')).href);
  let adapter: unknown;
  if (provider === 'sqlite') {
    mkdirSync(dirname(url.slice('file:'.length)), { recursive: true });
    const { PrismaBetterSqlite3 } = await import('@prisma/adapter-better-sqlite3');
    const factory = new PrismaBetterSqlite3({ url });
    const connect = factory.connect.bind(factory);
    // The adapter opens the better-sqlite3 handle itself; register our functions on it as it connects.
    factory.connect = async () => {
      const connection = await connect();
      registerSqliteFunctions((connection as unknown as { client: SqliteDatabase }).client);
      return connection;
    };
    adapter = factory;
  } else {
    const { PrismaPg } = await import('@prisma/adapter-pg');
    adapter = new PrismaPg({ connectionString: url });
  }
  const client = new PrismaClient({ adapter }) as PrismaClientLike;
  return {
    provider,
    client,
    query: async <T>(statement: Sql, tx?: PrismaLike) => {
      const { text, values } = renderSql(statement, provider);
      return (tx ?? client).$queryRawUnsafe<T[]>(text, ...values);
    },
    close: () => client.$disconnect(),
  };
}
