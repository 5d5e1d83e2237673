/**
 * @module `svc migrate --squash <name>` (issue 31 §4): the consecutive `_dev` migrations at the end of
 * the migrations folder (one per `svc dev` edit) folded into one named migration with the same end
 * schema, so that what gets committed reads as one change. Its SQL is the diff from the migration
 * before them to the last one's `schema.prisma` (computed by the generator, injected as `sqlFor`). In the
 * local database, where the `_dev` migrations are applied, the new one is recorded as applied in their
 * place, so the database is not migrated again; `_dev` migrations that were never applied are simply
 * replaced.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseProvider } from '../manifest.js';
import { migrationChecksum, migrationRows, prismaTime } from './migration-state.js';
import { migrationStatus } from './migrate-safely.js';

/** Computes the SQL from datamodel `from` (null: empty database) to `to`, as `svc generate` writes it. */
export type SqlFor = (from: string | null, to: string) => Promise<string>;

/**
 * Folds the trailing `_dev` migrations of `migrationsDir` into `<stamp of the last>_<name>`.
 * @returns the folders folded and the one written (null when their changes cancel out: nothing is written)
 * @throws Error, one line, when there are no trailing `_dev` migrations, when some of them are applied
 *   and others not (apply or discard those first), or when `name` is not `[a-z0-9_]`
 */
export async function squashMigrations(opts: {
  provider: DatabaseProvider;
  url: string;
  migrationsDir: string;
  name: string;
  sqlFor: SqlFor;
}): Promise<{ squashed: string[]; into: string | null }> {
  if (!/^[a-z0-9_]{1,60}$/.test(opts.name) || opts.name === 'dev') {
    throw new Error(`--squash needs a migration name of a-z, 0-9 and _ (not "dev"), got ${JSON.stringify(opts.name)}`);
  }
  const dir = opts.migrationsDir;
  const folders = existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort()
    : [];
  let first = folders.length;
  while (first > 0 && folders[first - 1].endsWith('_dev')) first--;
  const devs = folders.slice(first);
  if (devs.length === 0) throw new Error(`there are no _dev migrations at the end of ${dir} to squash`);
  const status = await migrationStatus(opts);
  const applied = devs.filter((n) => status.applied.includes(n));
  if (applied.length > 0 && applied.length < devs.length) {
    const open = devs.filter((n) => !applied.includes(n));
    throw new Error(`some of the _dev migrations are applied and some not (${open.join(', ')}): run svc migrate, or discard those, then squash`);
  }
  const snapshot = (folder: string | undefined) =>
    folder && existsSync(join(dir, folder, 'schema.prisma')) ? readFileSync(join(dir, folder, 'schema.prisma'), 'utf8') : null;
  const end = snapshot(devs.at(-1));
  if (end === null) throw new Error(`${devs.at(-1)} has no schema.prisma beside its migration.sql: it was not written by svc`);
  const sql = await opts.sqlFor(snapshot(folders[first - 1]), end);
  const into = sql.trim() === '' ? null : `${devs.at(-1)!.slice(0, 14)}_${opts.name}`;
  const staging = join(dir, `.squash-${randomUUID()}`);
  if (into) {
    mkdirSync(staging);
    writeFileSync(join(staging, 'migration.sql'), sql);
    writeFileSync(join(staging, 'schema.prisma'), end);
  }
  for (const n of devs) rmSync(join(dir, n), { recursive: true, force: true });
  if (into) renameSync(staging, join(dir, into));
  // The local database already holds their changes: the squashed migration is recorded as applied instead.
  for (const n of devs) await migrationRows(opts.provider, opts.url, 'DELETE FROM _prisma_migrations WHERE migration_name = $1', [n]);
  if (into && applied.length > 0) {
    const now = prismaTime(new Date());
    await migrationRows(
      opts.provider,
      opts.url,
      'INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count) VALUES ($1, $2, $3, $4, NULL, NULL, $5, 1)',
      [randomUUID(), migrationChecksum(dir, into), now, into, now],
    );
  }
  return { squashed: devs, into };
}
