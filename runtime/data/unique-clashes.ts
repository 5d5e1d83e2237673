/**
 * @module Rows that would break a new unique index (DESIGN §11 "unique", issue 22 item 4): before
 * `svc generate` writes a migration that makes an existing column unique, the CLI asks the app's
 * configured database which values that column holds more than once, so the refusal can name them
 * instead of the migration failing when it is applied. Reads only; nulls never clash.
 */
import { existsSync } from 'node:fs';
import type { AppManifest } from '../manifest.js';
import { ident, sql } from '../query/sql.js';
import { openDatabase, providerOf, resolveDatabaseUrl, type Database } from './database.js';

/** A property about to become unique: `collection` is its table, `property` its column. */
export interface UniqueColumn {
  collection: string;
  property: string;
}

/** Values a column holds more than once: the first `values` (most repeated first), with the total. */
export interface UniqueClash extends UniqueColumn {
  /** How many distinct values are repeated. */
  repeated: number;
  /** The most repeated values (at most 5): the value as text, its row count and up to 3 row ids. */
  values: { value: string; count: number; ids: string[] }[];
}

/** What `uniqueClashes` found: the clashes, and why a column could not be checked (no database, unreachable). */
export interface UniqueClashReport {
  clashes: UniqueClash[];
  /** Set when nothing could be read: the reason (the migration is then checked by the database when applied). */
  unchecked?: string;
}

const SHOWN_VALUES = 5;
const SHOWN_IDS = 3;

/** SQLite's "no such table/column", PostgreSQL's undefined_table (42P01) and undefined_column (42703). */
export const notMigratedYet = (err: unknown): boolean =>
  /no such (table|column)/i.test(String((err as Error).message)) || ['42P01', '42703'].includes(String((err as { code?: unknown }).code));

const text = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));

async function clashesOf(db: Database, c: UniqueColumn): Promise<UniqueClash | null> {
  const table = ident(c.collection);
  const column = ident(c.property);
  const repeated = sql`SELECT ${column} AS "value", COUNT(*) AS "n" FROM ${table} WHERE ${column} IS NOT NULL GROUP BY ${column} HAVING COUNT(*) > 1`;
  const [{ total }] = await db.query<{ total: unknown }>(sql`SELECT COUNT(*) AS "total" FROM (${repeated}) AS "r"`);
  if (Number(total) === 0) return null;
  const top = await db.query<{ value: unknown; n: unknown }>(sql`${repeated} ORDER BY COUNT(*) DESC, ${column} LIMIT ${SHOWN_VALUES}`);
  const values = [];
  for (const row of top) {
    const ids = await db.query<{ id: unknown }>(sql`SELECT "id" FROM ${table} WHERE ${column} = ${row.value} ORDER BY "id" LIMIT ${SHOWN_IDS}`);
    values.push({ value: text(row.value), count: Number(row.n), ids: ids.map((r) => String(r.id)) });
  }
  return { ...c, repeated: Number(total), values };
}

/**
 * Reads which of `columns` hold a non-null value on more than one row in the database `manifest`
 * names for `appDir` (`DATABASE_URL` of `env` first, as `svc serve` does). A SQLite file that does not
 * exist is not created (nothing to clash); a database that cannot be reached, or a table or column not
 * migrated yet, is reported as `unchecked` / skipped rather than thrown.
 * @returns the clashes in the order of `columns`
 */
export async function uniqueClashes(options: {
  appDir: string;
  manifest: AppManifest;
  env: NodeJS.ProcessEnv;
  columns: UniqueColumn[];
}): Promise<UniqueClashReport> {
  if (options.columns.length === 0) return { clashes: [] };
  const read = await withAppDatabase(options, async (db) => {
    const clashes: UniqueClash[] = [];
    for (const c of options.columns) {
      // A table or column the database does not have yet (migrations pending) holds no rows to clash.
      const found = await clashesOf(db, c).catch((err: unknown) => {
        if (notMigratedYet(err)) return null;
        throw err;
      });
      if (found) clashes.push(found);
    }
    return clashes;
  });
  return 'unchecked' in read ? { clashes: [], unchecked: read.unchecked } : { clashes: read.value ?? [] };
}

/**
 * Runs `work` over the database `manifest` names for `appDir` (`DATABASE_URL` of `env` first, as `svc
 * serve` does), for the read-only checks of `svc generate`.
 * @returns `{ value }` from `work`; `{ value: undefined }` for a SQLite file that does not exist (it is not
 *   created: no rows); `{ unchecked: reason }` for a URL of another provider or a database not reachable
 */
export async function withAppDatabase<T>(
  options: { appDir: string; manifest: AppManifest; env: NodeJS.ProcessEnv },
  work: (db: Database) => Promise<T>,
): Promise<{ value: T | undefined } | { unchecked: string }> {
  const url = resolveDatabaseUrl(options.env.DATABASE_URL || options.manifest.settings.database, options.appDir);
  if (providerOf(url) !== options.manifest.provider) return { unchecked: `the database URL is not a ${options.manifest.provider} URL` };
  if (options.manifest.provider === 'sqlite' && !existsSync(url.slice('file:'.length))) return { value: undefined };
  const db = await openDatabase(options.manifest.provider, url);
  try {
    try {
      await db.ping();
    } catch (err) {
      return { unchecked: `the database cannot be reached (${(err as Error).message})` };
    }
    return { value: await work(db) };
  } finally {
    await db.close();
  }
}
