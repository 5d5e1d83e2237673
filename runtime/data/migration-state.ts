/**
 * @module Which migrations of a folder a database has not applied yet, read from Prisma's
 * `_prisma_migrations` table over a short-lived connection. `svc serve`, `svc migrate` and the identity
 * commands skip the migration engine when nothing is pending (the engine locks the database, which a
 * running SQLite server in WAL mode would refuse), and `/api/_ready` reports pending migrations.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import type { DatabaseProvider } from '../manifest.js';

interface AppliedRow {
  migration_name: string;
  checksum: string;
}

async function appliedRows(provider: DatabaseProvider, url: string): Promise<AppliedRow[]> {
  const sql = 'SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL';
  if (provider === 'sqlite') {
    const file = url.replace(/^file:/, '').replace(/\?.*$/, '');
    if (!existsSync(file)) return [];
    const db = new Sqlite(file, { readonly: true, fileMustExist: true });
    try {
      const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'").get();
      return table ? (db.prepare(sql).all() as AppliedRow[]) : [];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    const table = await client.query("SELECT to_regclass('_prisma_migrations') AS t");
    return table.rows[0].t ? ((await client.query(sql)).rows as AppliedRow[]) : [];
  } finally {
    await client.end();
  }
}

/**
 * The migrations of `migrationsDir` not applied to the database (in name order), counting one whose
 * `migration.sql` changed since it was applied as pending (the engine then reports the edit).
 * @throws the driver's error when the database cannot be read
 */
export async function pendingMigrations(provider: DatabaseProvider, url: string, migrationsDir: string): Promise<string[]> {
  if (!existsSync(migrationsDir)) return [];
  const names = readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(migrationsDir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort();
  if (names.length === 0) return [];
  const applied = new Map((await appliedRows(provider, url)).map((r) => [r.migration_name, r.checksum]));
  return names.filter((name) => {
    const checksum = createHash('sha256')
      .update(readFileSync(join(migrationsDir, name, 'migration.sql')))
      .digest('hex');
    return applied.get(name) !== checksum;
  });
}
