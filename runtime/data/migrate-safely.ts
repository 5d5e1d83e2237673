/**
 * @module Migrations that cannot strand a database (issue 21 §5, issue 31 §4). Prisma's engine records a
 * migration whose script fails as failed in `_prisma_migrations` and refuses every later run until
 * someone resolves it; on SQLite the statements before the failing one also stay applied (a half-built
 * `new_<Table>`). Here the pending migrations are applied one at a time, each on its own:
 * - SQLite: the database file is copied (SQLite's online backup) before each migration; when one fails,
 *   that copy is put back, so only the failing migration is undone and the ones before it stay applied.
 * - PostgreSQL: each migration script runs in one implicit transaction, so a failed one changed nothing;
 *   its failed record is marked rolled back, as `prisma migrate resolve --rolled-back` would.
 * Either way the failure is recorded (failed, rolled back, with its reason), so `svc migrate --status`
 * lists it as failed; the next run tries it again, and `svc migrate --discard <name>` drops it (folder
 * and record). Instances that start together migrate one after the other: a PostgreSQL advisory lock,
 * or on SQLite a lock directory beside the file (`<file>.migrate.lock`, `proper-lockfile`: a holder that
 * died leaves it stale after 10 s). `migrationStatus`, `resolveFailedMigration` and `discardMigration`
 * serve `svc migrate --status|--resolve|--discard`.
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { dropSqliteCaptureTriggers } from './capture-context.js';
import type { DatabaseProvider } from '../manifest.js';
import { appliedAt, migrationChecksum, migrationRows, pendingMigrations, RECORD_FAILED, type AppliedRow } from './migration-state.js';
import { applyMigrations } from './schema-engine-calls.js';

/** The migrations folder's state in a database, for `svc migrate --status`. */
export interface MigrationStatus {
  /** Applied and finished, in name order. */
  applied: string[];
  /** In the folder, not applied and not failed (a changed `migration.sql` counts as pending). */
  pending: string[];
  /**
   * Not applied, and recorded as failed: rolled back (the next run tries it again) or, left by an older
   * svc or by Prisma's CLI, never finished nor rolled back (`--resolve` first). In name order.
   */
  failed: string[];
  /** The reason each failed migration failed (the first line the database gave), by name. */
  errors: Record<string, string>;
}

/** Recorded as started and never finished nor rolled back: the engine refuses to run until it is resolved. */
const FAILED = 'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NULL AND rolled_back_at IS NULL ORDER BY migration_name';

/** Every unfinished record (failed, rolled back or not), oldest first. */
const UNFINISHED = 'SELECT migration_name, logs, rolled_back_at FROM _prisma_migrations WHERE finished_at IS NULL ORDER BY started_at';

/** Every row of `_prisma_migrations`, as far as the checks at start need them. */
const RECORDED = 'SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations';
interface RecordedRow extends AppliedRow {
  finished_at: unknown;
  rolled_back_at: unknown;
}

/** The SQLite file of a `file:` URL. */
const sqliteFile = (url: string) => url.replace(/^file:/, '').replace(/\?.*$/, '');

/** The migration names a query of `_prisma_migrations` answers. */
const names = async (rows: Promise<{ migration_name: string }[]>) => (await rows).map((r) => r.migration_name);

/** The first line of a recorded failure's `logs` that says something. */
const firstLine = (logs: unknown) =>
  String(logs ?? '')
    .split('\n')
    .map((l) => l.trim())
    .find(Boolean) ?? 'no reason recorded';

/**
 * Applied, pending and failed migrations of `migrationsDir` in the database at `url`.
 * @throws the driver's error when the database cannot be read
 */
export async function migrationStatus(opts: { provider: DatabaseProvider; url: string; migrationsDir: string }): Promise<MigrationStatus> {
  const unfinished = await migrationRows<{ migration_name: string; logs: unknown; rolled_back_at: unknown }>(opts.provider, opts.url, UNFINISHED);
  // One read of the applied rows serves both the list and the pending check.
  const rows = await appliedAt(opts.provider, opts.url)();
  const applied = rows.map((r) => r.migration_name).sort();
  const inFolder = await pendingMigrations(() => Promise.resolve(rows), opts.migrationsDir);
  const errors: Record<string, string> = {};
  for (const r of unfinished) {
    // A rolled-back failure counts while its folder is still pending; one never rolled back always does.
    if (applied.includes(r.migration_name) || (r.rolled_back_at !== null && !inFolder.includes(r.migration_name))) continue;
    errors[r.migration_name] = firstLine(r.logs);
  }
  const failed = Object.keys(errors).sort();
  return { applied, pending: inFolder.filter((n) => !failed.includes(n)), failed, errors };
}

/**
 * Drops the migration `name` that this database never applied (`svc migrate --discard <name>`): its
 * folder is deleted and its failed records cleared, so the next `svc generate` writes a fresh one from
 * the migration before it. Only the last migration folders can be dropped (a later one was written on
 * top of it).
 * @throws Error, one line, when `name` is applied to this database, is not a migration folder, has later
 *   folders, or is recorded as failed without being rolled back (`--resolve` it first)
 */
export async function discardMigration(opts: { provider: DatabaseProvider; url: string; migrationsDir: string; name: string }): Promise<void> {
  const status = await migrationStatus(opts);
  const folders = [...status.applied, ...status.pending, ...status.failed].filter((n) => existsSync(join(opts.migrationsDir, n, 'migration.sql')));
  if (status.applied.includes(opts.name)) {
    throw new Error(
      `migration ${opts.name} is applied to this database and cannot be discarded: write a new migration that undoes it (change the definitions and run svc generate)`,
    );
  }
  if (!folders.includes(opts.name)) {
    const open = [...status.pending, ...status.failed].sort();
    throw new Error(`there is no migration ${opts.name} in ${opts.migrationsDir} (pending or failed: ${open.length ? open.join(', ') : 'none'})`);
  }
  const later = [...new Set(folders)].filter((n) => n > opts.name).sort();
  if (later.length > 0) throw new Error(`migration ${opts.name} has later migrations written on top of it: discard them first (${later.reverse().join(', ')})`);
  const stranded = await names(migrationRows(opts.provider, opts.url, FAILED));
  if (stranded.includes(opts.name)) {
    throw new Error(
      `migration ${opts.name} is recorded as failed and not rolled back: undo what it left behind, run svc migrate --resolve ${opts.name}, then discard it`,
    );
  }
  rmSync(join(opts.migrationsDir, opts.name), { recursive: true, force: true });
  await migrationRows(opts.provider, opts.url, 'DELETE FROM _prisma_migrations WHERE migration_name = $1 AND finished_at IS NULL', [opts.name]);
}

/**
 * Marks the failed migration `name` rolled back (`svc migrate --resolve <name>`), so the next run applies
 * it again. It changes no table: undo by hand what the failed script left first (only SQLite databases
 * migrated by an older svc can hold such leftovers).
 * @throws Error when `name` is not a failed migration of this database
 */
export async function resolveFailedMigration(opts: { provider: DatabaseProvider; url: string; name: string }): Promise<void> {
  const failed = await names(migrationRows(opts.provider, opts.url, FAILED));
  if (!failed.includes(opts.name)) {
    throw new Error(`${JSON.stringify(opts.name)} is not a failed migration of this database (failed: ${failed.length ? failed.join(', ') : 'none'})`);
  }
  const now = opts.provider === 'sqlite' ? `strftime('%s','now') * 1000` : 'now()';
  await migrationRows(opts.provider, opts.url, `UPDATE _prisma_migrations SET rolled_back_at = ${now} WHERE migration_name = $1 AND finished_at IS NULL`, [
    opts.name,
  ]);
}

/** The engine's message when SQLite's file is locked by another process (it cannot map SQLITE_BUSY). */
const BUSY = /SocketTimeout|database is locked|SQLITE_BUSY/;

/**
 * Applies the pending migrations of `migrationsDir` to `url` so that a failing one leaves the database as
 * it was (see the module comment). On PostgreSQL the run holds an advisory lock, so instances that
 * start together migrate one after the other (the later ones find nothing pending).
 * @returns the names applied
 * @throws Error, one line: `migration <name> failed and was rolled back (…): <reason>`; a failed
 *   migration recorded earlier (`… run svc migrate --resolve <name>`); on SQLite, a file another process
 *   holds (`… a running svc serve? …`); or the engine's own reason
 */
export async function applyMigrationsSafely(opts: { provider: DatabaseProvider; url: string; migrationsDir: string }): Promise<{ applied: string[] }> {
  if (opts.provider === 'sqlite')
    return withSqliteLock(sqliteFile(opts.url), () => {
      dropCaptureTriggers(sqliteFile(opts.url));
      return applyUnlocked(opts);
    });
  // Instances starting together: one applies, the others wait and then find nothing pending. Without
  // the lock, a run reading `_prisma_migrations` while another is mid-migration took the started,
  // unfinished row for a failed one and refused to start.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: opts.url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
    return await applyUnlocked(opts);
  } finally {
    // Ending the session releases the lock too, should the unlock fail.
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

/**
 * Drops svc's capture triggers (DESIGN §12) from a SQLite file before its migrations run: a trigger that
 * names a column stops `DROP COLUMN`. The server installs them again once the migrations are applied.
 */
function dropCaptureTriggers(file: string): void {
  if (!existsSync(file)) return;
  const db = new Sqlite(file, { fileMustExist: true, timeout: 5000 });
  try {
    dropSqliteCaptureTriggers(db);
  } finally {
    db.close();
  }
}

/**
 * Runs `work` while holding `<file>.migrate.lock`, waiting up to about 60 s for another process's run.
 * Without it, two `svc serve` started together on a new file both ran the engine and the later one
 * failed with the file locked. The lock is kept fresh every 5 s while held, so one left by a killed
 * process is taken over after 10 s.
 * @throws Error naming the lock when it stays held, or when it cannot be made (a folder svc may not write)
 */
async function withSqliteLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  // Loaded here: PostgreSQL apps and `svc migrate --status` never need it.
  const { lock } = await import('proper-lockfile');
  mkdirSync(dirname(file), { recursive: true });
  const lockfile = `${file}.migrate.lock`;
  const release = await lock(file, {
    realpath: false,
    lockfilePath: lockfile,
    stale: 10_000,
    retries: { retries: 120, minTimeout: 100, maxTimeout: 500 },
    // Taken over as stale (this process stalled 10 s): the run goes on; the engine's own file lock is the last guard.
    onCompromised: () => undefined,
  }).catch((err: Error & { code?: string }) => {
    if (err.code !== 'ELOCKED') throw new Error(`cannot take the migration lock ${lockfile}: ${err.message}`, { cause: err });
    throw new Error(`another process has been migrating ${file} for over a minute (lock ${lockfile}); wait for it, or remove the lock if no svc runs`, {
      cause: err,
    });
  });
  try {
    return await work();
  } finally {
    await release().catch(() => undefined); // compromised (taken over as stale): nothing left to release
  }
}

/** The PostgreSQL advisory lock every svc instance takes around its migrations ("svcm" as an integer). */
const MIGRATE_LOCK = 0x7376636d;

/** `applyMigrationsSafely` once no other instance migrates the same database. */
async function applyUnlocked(opts: { provider: DatabaseProvider; url: string; migrationsDir: string }): Promise<{ applied: string[] }> {
  // One read of the table serves both the failed-migration check and the nothing-to-apply check.
  const recorded = await migrationRows<RecordedRow>(opts.provider, opts.url, RECORDED).catch(() => undefined);
  const stranded = (recorded ?? []).filter((r) => r.finished_at === null && r.rolled_back_at === null).map((r) => r.migration_name);
  if (stranded.length > 0) {
    throw new Error(
      `migration ${stranded[0]} failed in an earlier run and is recorded as failed: undo what it left behind, then run svc migrate --resolve ${stranded[0]} and migrate again`,
    );
  }
  const rows = (recorded ?? []).filter((r) => r.finished_at !== null && r.rolled_back_at === null);
  const pending = await pendingMigrations(() => Promise.resolve(rows), opts.migrationsDir);
  // Nothing to apply (the usual start): no backup copy, no schema engine (a third of a second to load).
  if (pending.length === 0) return { applied: [] };
  const file = opts.provider === 'sqlite' ? sqliteFile(opts.url) : undefined;
  const scratch = file ? mkdtempSync(join(tmpdir(), 'svc-migrate-')) : undefined;
  const applied: string[] = [];
  try {
    // One at a time: a migration that fails is undone alone, the ones before it stay applied.
    for (const name of pending) {
      const backup = file && scratch && existsSync(file) ? join(scratch, 'before.db') : undefined;
      if (file && backup) {
        const db = new Sqlite(file, { fileMustExist: true, timeout: 5000 });
        try {
          await db.backup(backup);
        } finally {
          db.close();
        }
      }
      try {
        applied.push(...(await applyMigrations({ ...opts, through: name })).applied);
      } catch (err) {
        throw await undoFailed(opts, err, backup, applied);
      }
    }
    return { applied };
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * After the engine failed: undoes the failed migration alone (SQLite: the copy taken before it is put
 * back; PostgreSQL: its script changed nothing, its record is marked rolled back), records the failure
 * with its reason, and returns the one-line error to throw.
 * @param backup - the copy of the SQLite file taken before the migration (none: there was no file)
 * @param applied - the migrations this run applied before it (they stay applied)
 */
async function undoFailed(
  opts: { provider: DatabaseProvider; url: string; migrationsDir: string },
  err: unknown,
  backup: string | undefined,
  applied: string[],
): Promise<Error> {
  const reason = err instanceof Error ? err.message : String(err);
  const file = opts.provider === 'sqlite' ? sqliteFile(opts.url) : undefined;
  if (file && BUSY.test(reason)) {
    return new Error(`the database file ${file} is locked by another process (a running svc serve?): stop it, then run svc migrate again`, { cause: err });
  }
  const failed = await names(migrationRows<{ migration_name: string }>(opts.provider, opts.url, FAILED).catch(() => []));
  if (failed.length === 0) return err instanceof Error ? err : new Error(reason); // nothing ran (unreachable, edited migration…): nothing to undo
  const name = failed[0];
  const what = reason.replace(/^(migration \S+ failed|applying migrations failed): /, '');
  if (file) {
    // Put the file back as it was before this migration: the copy, or no file at all when there was none.
    for (const side of ['-wal', '-shm', '-journal']) rmSync(file + side, { force: true });
    if (backup) copyFileSync(backup, file);
    else rmSync(file, { force: true });
    // The copy has no record of the failure: write one (a new file without the table keeps none).
    const record = [randomUUID(), migrationChecksum(opts.migrationsDir, name), name, what];
    await migrationRows(opts.provider, opts.url, RECORD_FAILED(opts.provider), record).catch(() => undefined);
  } else {
    // The engine's record says only "external connector error": keep the reason instead.
    await migrationRows(opts.provider, opts.url, 'UPDATE _prisma_migrations SET logs = $2 WHERE migration_name = $1 AND finished_at IS NULL', [name, what]);
    await resolveFailedMigration({ provider: opts.provider, url: opts.url, name });
  }
  const undone = file ? 'the database file is as it was before it' : 'its statements were rolled back';
  const kept = applied.length > 0 ? `; ${applied.join(', ')} stayed applied` : '';
  return new Error(
    `migration ${name} failed and was rolled back (${undone}${kept}); fix it and migrate again, or drop it with svc migrate --discard ${name}: ${what}`,
    { cause: err },
  );
}
