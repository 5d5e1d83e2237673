/**
 * @module What `svc migrate --status`, `--resolve <name>` and `--discard <name>` run (issue 21 §5, issue
 * 31 §4): the state of the app's migrations folder in its database, marking a failed migration rolled
 * back, and dropping a migration the database never applied. Plain
 * `svc migrate` is `migrateApp` (server.ts), which applies through `applyMigrationsSafely`.
 */
import { join, resolve } from 'node:path';
import type { DatabaseProvider } from './manifest.js';
import { discardMigration, migrationStatus, resolveFailedMigration, type MigrationStatus } from './data/migrate-safely.js';
import { squashMigrations, type SqlFor } from './data/squash-migrations.js';
import { loadManifest } from './load-manifest.js';
import { databaseUrlFor } from './server.js';

export type { MigrationStatus };

/** The provider, database URL and migrations folder of the app at `appDir`. */
function target(appDir: string, env: NodeJS.ProcessEnv) {
  const dir = resolve(appDir);
  const manifest = loadManifest(join(dir, '.svc'));
  return { provider: manifest.provider, url: databaseUrlFor(dir, manifest, env), migrationsDir: join(dir, 'migrations', manifest.provider) };
}

/**
 * `svc migrate --status`: `{ applied, pending, failed }`, migration folder names in order.
 * @throws StartupError for a missing `.svc/` or a wrong database URL; the driver's error when the database cannot be read
 */
export function migrationStatusInApp(appDir: string, env: NodeJS.ProcessEnv = process.env): Promise<MigrationStatus> {
  return migrationStatus(target(appDir, env));
}

/**
 * `svc migrate --resolve <name>`: marks the failed migration `name` rolled back, so that `svc migrate`
 * applies it again (after its cause is fixed and what it left behind is undone).
 * @throws Error when `name` is not a failed migration of the database
 */
export async function resolveMigrationInApp(appDir: string, name: string, env: NodeJS.ProcessEnv = process.env): Promise<{ resolved: string }> {
  await resolveFailedMigration({ ...target(appDir, env), name });
  return { resolved: name };
}

/**
 * `svc migrate --discard <name>`: deletes the migration folder `name`, which the database never applied
 * (pending, or failed and rolled back), and clears its failed records, so the next `svc generate`
 * writes a fresh migration from the one before it.
 * @throws Error naming the migration when it is applied, unknown, or has later migrations
 */
export async function discardMigrationInApp(appDir: string, name: string, env: NodeJS.ProcessEnv = process.env): Promise<{ discarded: string }> {
  await discardMigration({ ...target(appDir, env), name });
  return { discarded: name };
}

/**
 * `svc migrate --squash <name>`: folds the consecutive `_dev` migrations at the end of the app's
 * migrations folder into one migration named `name` with the same end schema, recorded as applied in
 * the local database when they were (see `squashMigrations`).
 * @param sqlFor - the migration SQL between two datamodels (the generator's `migrationSql`, with the provider and URL bound)
 * @throws Error, one line, when there is nothing to squash or the `_dev` migrations are partly applied
 */
export async function squashMigrationsInApp(
  appDir: string,
  name: string,
  sqlFor: (target: { provider: DatabaseProvider; url: string }, from: string | null, to: string) => Promise<string>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ squashed: string[]; into: string | null }> {
  const t = target(appDir, env);
  const bound: SqlFor = (from, to) => sqlFor(t, from, to);
  return squashMigrations({ ...t, name, sqlFor: bound });
}
