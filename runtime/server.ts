/**
 * @module `startServer`: loads the generated output of an app folder, applies pending migrations,
 * opens the database and serves HTTP. `close()` stops accepting, finishes in-flight requests, and
 * disconnects (SIGTERM handling lives in the CLI, which calls it).
 */
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { openDatabase, providerOf, resolveDatabaseUrl, type Database } from './data/database.js';
import { applyMigrations } from './data/schema-engine.js';
import { createApp } from './http/app.js';
import { secretsFromEnv } from './http/function-routes.js';
import { WorkerPool } from './functions/worker-pool.js';
import type { RoutesDefinition } from './http/collection-routes.js';
import { createLogger, type Logger } from './log.js';
import { loadManifest, StartupError } from './load-manifest.js';
import type { AppManifest } from './manifest.js';
import { createAuthService } from './auth/auth-service.js';
import { checkPolicies } from './auth/authorize.js';

export interface ServeOptions {
  appDir: string;
  /** TCP port; 0 picks a free one. Default: env `PORT`, then svc.json `port`. */
  port?: number;
  /** Interface to listen on. Default: env `HOST`, then `127.0.0.1`. */
  host?: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

export interface RunningServer {
  /** Base URL of the API, e.g. `http://127.0.0.1:3000/api`. */
  url: string;
  port: number;
  manifest: AppManifest;
  /** Stops accepting, waits for in-flight requests (at most `graceMs`, default 10 s), disconnects. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The database URL in force for an app: env `DATABASE_URL`, else the manifest's, made absolute.
 * @throws StartupError when the URL names no supported database, or another provider than `.svc/` was generated for
 */
export function databaseUrlFor(appDir: string, manifest: AppManifest, env: NodeJS.ProcessEnv): string {
  const url = resolveDatabaseUrl(env.DATABASE_URL || manifest.settings.database, appDir);
  const provider = providerOf(url);
  if (!provider) throw new StartupError(`database URL must start with file:, postgres:// or postgresql:// (got ${JSON.stringify(url.split(':')[0] + ':')})`);
  if (provider !== manifest.provider) {
    throw new StartupError(`.svc/ was generated for ${manifest.provider} but the database URL is ${provider}: run \`svc generate\` with the same DATABASE_URL`);
  }
  return url;
}

/**
 * `svc migrate`: applies pending migrations of the app's provider.
 * @returns names of the migrations applied
 */
export async function migrateApp(appDir: string, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const dir = resolve(appDir);
  const manifest = loadManifest(join(dir, '.svc'));
  return applyPending(dir, manifest, databaseUrlFor(dir, manifest, env));
}

/** Applies the pending migrations of the manifest's provider to `url` (already resolved). */
async function applyPending(appDir: string, manifest: AppManifest, url: string): Promise<string[]> {
  const migrationsDir = join(appDir, 'migrations', manifest.provider);
  if (!existsSync(migrationsDir)) return [];
  const { applied } = await applyMigrations({ provider: manifest.provider, url, migrationsDir });
  return applied;
}

async function loadRoutes(svcDir: string): Promise<RoutesDefinition[]> {
  const dir = join(svcDir, 'routes');
  if (!existsSync(dir)) return [];
  const files = readdirSync(dir).filter((f) => f.endsWith('.js')).sort();
  return Promise.all(files.map(async (f) => (await import(pathToFileURL(join(dir, f)).href)).default as RoutesDefinition));
}

/**
 * `svc serve`: applies pending migrations, then serves the app.
 * @throws StartupError for a missing/stale `.svc/` or a wrong database URL; Error from migrations
 * Source: DESIGN §3a (`svc serve`), issue "Runtime".
 */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const env = options.env ?? process.env;
  const appDir = resolve(options.appDir);
  const svcDir = join(appDir, '.svc');
  const manifest = loadManifest(svcDir);
  const logger = options.logger ?? createLogger({ app: manifest.name });
  const url = databaseUrlFor(appDir, manifest, env);
  const policyProblems = checkPolicies(manifest);
  if (policyProblems.length > 0) throw new StartupError(`invalid policy filters: ${policyProblems.join('; ')}`);
  const applied = await applyPending(appDir, manifest, url);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const db: Database = await openDatabase(svcDir, manifest.provider, url);
  const pool = new WorkerPool({
    spareThreads: manifest.functions.some((f) => f.enabled) ? 2 : 0, maxMemoryMb: manifest.settings.functions.maxMemoryMb, logger,
  });
  const app = createApp({
    manifest, db, logger,
    auth: await createAuthService(db, manifest, logger),
    routes: await loadRoutes(svcDir),
    openapi: JSON.parse(readFileSync(join(svcDir, 'openapi.json'), 'utf8')),
    functions: { svcDir, secrets: secretsFromEnv(env), pool },
  });
  const server: Server = createServer(app);
  const port = options.port ?? (env.PORT ? Number(env.PORT) : manifest.settings.port);
  const host = options.host ?? env.HOST ?? '127.0.0.1';
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  const actual = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${actual}/api`,
    port: actual,
    manifest,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        const drained = new Promise<void>((ok) => server.close(() => ok()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        await drained;
        clearTimeout(timer);
        await pool.close();
        await db.close();
        logger.info('server stopped');
      })();
      return closing;
    },
  };
}
