/**
 * @module What `svc migrate --status` and `svc migrate --resolve <name>` run (issue 21 §5): the state of
 * the app's migrations folder in its database, and marking a failed migration rolled back. Plain
 * `svc migrate` is `migrateApp` (server.ts), which applies through `applyMigrationsSafely`.
 */
import { join, resolve } from 'node:path';
import { migrationStatus, resolveFailedMigration, type MigrationStatus } from './data/migrate-safely.js';
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
