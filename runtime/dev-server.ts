/**
 * @module The server side of `svc dev` (DESIGN §10): a server started like `svc serve` whose app can be
 * replaced in-process. After the CLI's watcher has regenerated `.svc/`, `reload()` applies the new
 * migrations (on SQLite beside the open connections: data/migrate-live.ts) and swaps in a version built from the new output; the long-lived services stay, so open
 * WebSocket connections and agent sessions live on, and requests in flight finish on their version
 * (see app-version.ts). `reloadFunctions()` only replaces the function worker threads. `auth`, `mail`,
 * `cors`, `trustedProxies`, `allowedHosts` and `publicUrl` apply on the swap. Settings that shape the
 * long-lived services (api name, database, port, real-time, storage, agent, credits, identity
 * providers) take effect on the next start: `reload()` names them.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { buildAppVersion } from './app-version.js';
import { applyAuthSettings } from './auth/auth-service.js';
import { createMailer } from './auth/mailer.js';
import { applySqliteMigrationsLive } from './data/migrate-live.js';
import { scheduledFunctions } from './jobs/schedules.js';
import { installTriggers } from './jobs/capture.js';
import { ident, sql } from './query/sql.js';
import { loadManifest } from './load-manifest.js';
import type { AppManifest } from './manifest.js';
import { applyPending, databaseUrlFor, launchServer, type RunningServer, type ServeOptions } from './server.js';

/** A problem of the last edit, as `svc generate` reports it (file, JSON Pointer path, code, message). */
export interface DevProblem {
  file: string;
  path: string;
  code: string;
  message: string;
}

/** What `reload()` did. */
export interface DevReload {
  /** Migrations applied, by folder name. */
  applied: string[];
  /** svc.json keys whose change needs a restart of `svc dev` (they were not applied). */
  restart: string[];
  /** When the schedules changed: the scheduled functions now running (possibly none). */
  schedules?: string[];
  /** When the triggers changed: the triggers now installed (possibly none). */
  triggers?: string[];
}

export interface DevServer extends RunningServer {
  /**
   * The problems of the last edit that could not be served (empty once an edit is served again): the
   * console's banner shows them (DESIGN §9, §10). The CLI sets them.
   */
  problems: DevProblem[];
  /**
   * Serves the `.svc/` now on disk: loads its manifest, applies pending migrations, builds the new
   * version and swaps it in; real-time rules and the agent's tools follow.
   * @throws StartupError (stale or invalid `.svc/`, invalid policy filters, missing function module) or the
   *   migration's one-line error; the old version keeps serving then
   */
  reload(): Promise<DevReload>;
  /**
   * Makes the next function calls run the newly compiled code. When `written` (paths relative to
   * `.svc/`) holds only functions' own files that no other compiled file imports, the warm worker
   * threads import those afresh; otherwise every thread is replaced.
   */
  reloadFunctions(written?: string[]): void;
  /** Answers `public/` as it is now (a new version when the folder appeared or went away). @returns whether a new version was needed */
  reloadPublic(): boolean;
  /**
   * For each table or column a migration would drop (`DEF_DATA_LOSS`: `file` `collections/<Name>.json`,
   * `path` empty for the table or `/properties/<column>`), whether it holds data now (unknown → true).
   */
  holdsData(drops: { file: string; path: string }[]): Promise<boolean[]>;
  /**
   * Copies the SQLite database file to `file` (SQLite's online backup; folders are made).
   * @returns false on PostgreSQL (nothing is copied)
   */
  backupDatabase(file: string): Promise<boolean>;
}

/** svc.json keys read once at start, by the services that outlive versions. */
const RESTART_KEYS = ['port', 'realtime', 'storage', 'agent', 'credits'] as const;

/**
 * `svc dev`'s server: `startServer` with a seam to swap versions (see the module comment).
 * @throws as `startServer`
 * Source: DESIGN §10.
 */
export async function startDevServer(options: ServeOptions): Promise<DevServer> {
  const launched = await launchServer({ ...options, dev: true });
  const { services } = launched;
  const { appDir, svcDir, env, db, auth, realtime, pool } = services;
  const agent = services.agent!;
  const url = databaseUrlFor(appDir, launched.current().manifest, env);
  const started = launched.current().manifest;
  const sqliteFile = url.replace(/^file:/, '').replace(/\?.*$/, '');
  let installedTriggers = JSON.stringify(started.triggers ?? []);
  const swap = (manifest: AppManifest) => {
    const version = buildAppVersion(services, manifest);
    launched.swap(version);
    realtime.useManifest(manifest);
    if (JSON.stringify(manifest.settings.mail) !== JSON.stringify(auth.manifest.settings.mail)) {
      const previous = auth.mail.mailer as Partial<ReturnType<typeof createMailer>>;
      auth.mail.mailer = createMailer(manifest.settings.mail, env, services.logger, manifest.name);
      previous.close?.();
    }
    applyAuthSettings(auth, manifest);
    agent.reloadTools();
  };
  const server = launched.running as DevServer;
  server.problems = [];
  server.reload = async () => {
    const manifest = loadManifest(svcDir);
    const restart: string[] = [];
    if (manifest.name !== started.name) restart.push('name');
    if (databaseUrlFor(appDir, manifest, env) !== url) restart.push('database');
    for (const key of RESTART_KEYS) if (JSON.stringify(manifest.settings[key]) !== JSON.stringify(started.settings[key])) restart.push(key);
    if (JSON.stringify(manifest.settings.auth?.providers ?? {}) !== JSON.stringify(started.settings.auth?.providers ?? {})) restart.push('auth.providers');
    // Built first: a version that cannot be served leaves the database unmigrated.
    buildAppVersion(services, manifest);
    const applied =
      manifest.provider === 'sqlite'
        ? await applySqliteMigrationsLive(sqliteFile, join(appDir, 'migrations', 'sqlite'))
        : await applyPending(appDir, manifest, url);
    swap(manifest);
    // Capture triggers follow the definitions, and the schema: a migration may change the columns they
    // name (and on SQLite it dropped them). Otherwise they stand as installed (DESIGN §12).
    const triggers = JSON.stringify(manifest.triggers ?? []);
    const triggersChanged = triggers !== installedTriggers;
    if (triggersChanged || applied.length > 0) await installTriggers(db, manifest);
    installedTriggers = triggers;
    const changed = await services.scheduler?.reschedule(manifest.functions);
    const schedules = changed ? scheduledFunctions(manifest.functions).map((f) => f.name) : undefined;
    return {
      applied,
      restart,
      ...(schedules ? { schedules } : {}),
      ...(triggersChanged ? { triggers: (manifest.triggers ?? []).map((t) => t.name) } : {}),
    };
  };
  server.reloadFunctions = (written) => {
    if (written?.length === 0) return;
    // ES modules only: a CommonJS one is cached by its path, whatever the query.
    const own = written !== undefined && written.every((f) => /^functions\/[^/]+\.m?js$/.test(f) && !importedElsewhere(f));
    if (own) pool.refresh(written.map((f) => join(svcDir, f)));
    else pool.recycle();
  };
  /** Whether another compiled file names `file`'s base name in a string (an import of it; a false alarm only costs a recycle). */
  const importedElsewhere = (file: string) => {
    const name = `${basename(file)}"`;
    const dir = join(svcDir, 'functions');
    return readdirSync(dir, { recursive: true, encoding: 'utf8' }).some(
      (other) => `functions/${other}` !== file && /\.[cm]?js$/.test(other) && readFileSync(join(dir, other), 'utf8').includes(name),
    );
  };
  server.reloadPublic = () => {
    const current = launched.current();
    if (current.hasPublicDir === existsSync(join(appDir, 'public'))) return false;
    swap(current.manifest);
    return true;
  };
  server.holdsData = (drops) =>
    Promise.all(
      drops.map(async ({ file, path }) => {
        const table = /^collections\/(.+)\.json$/.exec(file)?.[1];
        const column = /^\/properties\/(.+)$/.exec(path)?.[1];
        if (!table) return true;
        try {
          const rows = await db.query(
            column ? sql`SELECT 1 AS x FROM ${ident(table)} WHERE ${ident(column)} IS NOT NULL LIMIT 1` : sql`SELECT 1 AS x FROM ${ident(table)} LIMIT 1`,
          );
          return rows.length > 0;
        } catch {
          return true;
        }
      }),
    );
  server.backupDatabase = async (file) => {
    if (db.provider !== 'sqlite') return false;
    mkdirSync(dirname(file), { recursive: true });
    const source = new Sqlite(sqliteFile, { fileMustExist: true, timeout: 5000 });
    try {
      await source.backup(file);
    } finally {
      source.close();
    }
    return true;
  };
  return server;
}
