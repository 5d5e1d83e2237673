/**
 * @module Applying migrations to a SQLite database that a running server holds open (`svc dev`, DESIGN
 * §10). Prisma's engine takes SQLite's exclusive locking mode, which a server's open connections in WAL
 * mode refuse ("database is locked"), so here each pending `migration.sql` runs on a connection of our
 * own, in one `BEGIN IMMEDIATE` transaction with foreign keys deferred and checked before the commit,
 * and is recorded in `_prisma_migrations` as the engine records it (sha256 checksum of the file,
 * started/finished times, one step). A script that fails is rolled back whole: the database is as it
 * was, and the migration is recorded as failed and rolled back (tried again next time, or discarded). The server's connections see the new schema on their next
 * statement. PostgreSQL needs none of this (the engine's advisory lock lives beside open connections).
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { APPLIED, pendingMigrations, prismaTime, RECORD_FAILED, type AppliedRow } from './migration-state.js';
import { registerSqliteFunctions } from './sqlite-functions.js';
import { dropSqliteCaptureTriggers } from './capture-context.js';

/** `_prisma_migrations` as Prisma's engine creates it (present once the server has started). */
const TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" ("id" TEXT PRIMARY KEY NOT NULL, "checksum" TEXT NOT NULL,
  "finished_at" DATETIME, "migration_name" TEXT NOT NULL, "logs" TEXT, "rolled_back_at" DATETIME,
  "started_at" DATETIME NOT NULL DEFAULT current_timestamp, "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0)`;

/**
 * Applies the pending migrations of `migrationsDir` to the SQLite file `file` beside open connections.
 * @returns the names applied, in order
 * @throws Error `migration <name> failed and was rolled back (…): <reason>`; the migrations before it stay
 *   applied, and the failure is recorded (failed, rolled back, with its reason)
 */
export async function applySqliteMigrationsLive(file: string, migrationsDir: string): Promise<string[]> {
  const db = new Sqlite(file, { fileMustExist: true, timeout: 5000 });
  try {
    db.exec(TABLE);
    // Prisma's scripts rebuild tables with foreign keys off; a connection can turn them off only outside a
    // transaction, and defer_foreign_keys makes the check at commit time cover the rebuilt tables.
    db.pragma('foreign_keys = OFF');
    registerSqliteFunctions(db);
    const pending = await pendingMigrations(() => Promise.resolve(db.prepare(APPLIED).all() as AppliedRow[]), migrationsDir);
    const applied: string[] = [];
    for (const name of pending) {
      const script = readFileSync(join(migrationsDir, name, 'migration.sql'));
      const startedAt = new Date();
      try {
        db.exec('BEGIN IMMEDIATE');
        // The server installs them again after the swap (a trigger naming a column stops DROP COLUMN).
        dropSqliteCaptureTriggers(db);
        db.exec(script.toString('utf8'));
        const broken = db.pragma('foreign_key_check') as unknown[];
        if (broken.length > 0) throw new Error(`it leaves ${broken.length} rows whose lookups point at no row`);
        db.prepare(
          'INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count) VALUES (?, ?, ?, ?, NULL, NULL, ?, 1)',
        ).run(randomUUID(), createHash('sha256').update(script).digest('hex'), prismaTime(new Date()), name, prismaTime(startedAt));
        db.exec('COMMIT');
      } catch (err) {
        if (db.inTransaction) db.exec('ROLLBACK');
        const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0];
        // Recorded (failed, rolled back), so `svc migrate --status` lists it and `--discard` clears it.
        db.prepare(RECORD_FAILED('sqlite').replace(/\$\d+/g, '?')).run(randomUUID(), createHash('sha256').update(script).digest('hex'), name, reason);
        throw new Error(`migration ${name} failed and was rolled back (the database is as it was before it): ${reason}`, { cause: err });
      }
      applied.push(name);
    }
    return applied;
  } finally {
    db.close();
  }
}
