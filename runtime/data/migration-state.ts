/**
 * @module Which migrations of a folder a database has not applied yet, read from Prisma's
 * `_prisma_migrations` table: over a short-lived connection before the database is opened
 * (`appliedAt`), over the open one afterwards (`appliedThrough`). `svc serve`, `svc migrate` and the identity
 * commands skip the migration engine when nothing is pending (the engine locks the database, which a
 * running SQLite server in WAL mode would refuse), and `/api/_ready` reports pending migrations.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import type { DatabaseProvider } from '../manifest.js';
import { raw } from '../query/sql.js';
import type { Database } from './database.js';

/** One applied migration: its folder name and the sha256 of its `migration.sql`. */
export interface AppliedRow {
  migration_name: string;
  checksum: string;
}

/** The applied, finished and not rolled back migrations of `_prisma_migrations`. */
export const APPLIED = 'SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL';

/** The applied migrations, read over the open database (readiness checks); none when the table is missing. */
export function appliedThrough(db: Database): () => Promise<AppliedRow[]> {
  return async () => {
    try {
      return await db.query<AppliedRow>(raw(APPLIED));
    } catch (err) {
      const e = err as { code?: string; message?: string };
      if (e?.code === '42P01' || /no such table/i.test(e?.message ?? '')) return [];
      throw err;
    }
  };
}

/** The applied migrations, read over a short-lived connection to `url` (before the database is opened). */
export function appliedAt(provider: DatabaseProvider, url: string): () => Promise<AppliedRow[]> {
  return () => appliedRows(provider, url);
}

function appliedRows(provider: DatabaseProvider, url: string): Promise<AppliedRow[]> {
  return migrationRows<AppliedRow>(provider, url, APPLIED);
}

/**
 * Runs `sql` (with `$1`, `$2`… for its parameters) against Prisma's `_prisma_migrations` table over a
 * short-lived connection to `url` (`svc migrate`, `svc serve` before the database is opened).
 * @returns its rows; [] when the database or the table does not exist yet, and for statements that return none
 * @throws the driver's error when the database cannot be reached
 */
export async function migrationRows<T>(provider: DatabaseProvider, url: string, sql: string, params: string[] = []): Promise<T[]> {
  if (provider === 'sqlite') {
    const file = url.replace(/^file:/, '').replace(/\?.*$/, '');
    if (!existsSync(file)) return [];
    const db = new Sqlite(file, { fileMustExist: true, readonly: /^\s*select\b/i.test(sql), timeout: 5000 });
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'").get()) return [];
      const statement = db.prepare(sql.replace(/\$\d+/g, '?'));
      if (!statement.reader) {
        statement.run(...params);
        return [];
      }
      return statement.all(...params) as T[];
    } finally {
      db.close();
    }
  }
  const { default: pg } = await import('pg'); // loaded only for PostgreSQL apps
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    if (!(await client.query("SELECT to_regclass('_prisma_migrations') AS t")).rows[0].t) return [];
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * The migrations of `migrationsDir` not applied to the database (in name order), counting one whose
 * `migration.sql` changed since it was applied as pending (the engine then reports the edit).
 * @param applied - `appliedAt(provider, url)` or `appliedThrough(db)`
 * @throws the driver's error when the database cannot be read
 */
export async function pendingMigrations(applied: () => Promise<AppliedRow[]>, migrationsDir: string): Promise<string[]> {
  if (!existsSync(migrationsDir)) return [];
  const names = readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(migrationsDir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort();
  if (names.length === 0) return [];
  const done = new Map((await applied()).map((r) => [r.migration_name, r.checksum]));
  return names.filter((name) => {
    const checksum = createHash('sha256')
      .update(readFileSync(join(migrationsDir, name, 'migration.sql')))
      .digest('hex');
    return done.get(name) !== checksum;
  });
}

/** The sha256 of a migration folder's `migration.sql`, as Prisma records it. */
export const migrationChecksum = (migrationsDir: string, name: string): string =>
  createHash('sha256')
    .update(readFileSync(join(migrationsDir, name, 'migration.sql')))
    .digest('hex');

/** Prisma's timestamp text: `2026-11-25T23:24:52.386+00:00`. */
export const prismaTime = (d: Date): string => d.toISOString().replace('Z', '+00:00');

/**
 * The row that records migration `name` as failed and rolled back (issue 31 §4): `finished_at` null,
 * `rolled_back_at` set, the reason in `logs`. The engine then applies it again on the next run (as
 * after `prisma migrate resolve --rolled-back`), and `svc migrate --status` lists it as failed until it
 * applies or is discarded. Parameters `$1`…`$4`: id, checksum, name, reason (SQLite takes them in order).
 */
export const RECORD_FAILED = (provider: DatabaseProvider): string =>
  `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count) VALUES ($1, $2, NULL, $3, $4, ${
    provider === 'sqlite' ? `'${prismaTime(new Date())}'` : 'now()'
  }, ${provider === 'sqlite' ? `'${prismaTime(new Date())}'` : 'now()'}, 0)`;
