/**
 * @module `startServer`: loads the generated output of an app folder, applies pending migrations,
 * opens the database and serves HTTP. `close()` stops accepting, finishes in-flight requests, and
 * disconnects (SIGTERM handling lives in the CLI, which calls it).
 */
import { createServer, type Server } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { openDatabase, providerOf, resolveDatabaseUrl, type Database } from './data/database.js';
import { applyMigrationsSafely } from './data/migrate-safely.js';
import { appliedAt, appliedThrough, pendingMigrations } from './data/migration-state.js';
import { createApp } from './http/app.js';
import { functionInvoker, secretsFromEnv } from './http/function-routes.js';
import { AgentService } from './agent/service.js';
import { agentSettings } from './agent/settings.js';
import { resolveMcpServers } from './agent/mcp.js';
import type { Caller } from './auth/caller.js';
import type { ApiCall } from './core/api-client.js';
import type { AgentRequest } from './functions/call-api.js';
import { WorkerPool } from './functions/worker-pool.js';
import { apiHandler } from './http/api-handler.js';
import { apiClientFor } from './core/api-client.js';
import { buildResources } from './core/resources.js';
import type { AppRuntime } from './core/context.js';
import { compileInputChecker } from './data/input.js';
import type { CollectionWriter } from './data/children.js';
import { NO_CHANGE_SINK, type ChangeSink } from './data/changes.js';
import { createLogger, type Logger } from './log.js';
import { loadManifest, StartupError } from './load-manifest.js';
import type { AppManifest } from './manifest.js';
import { createAuthService } from './auth/auth-service.js';
import { checkPolicies } from './auth/authorize.js';
import { startRealtime, realtimeBackplane, realtimeHttpHandler, functionRealtime, type RealtimeService } from './realtime/index.js';
import { FailureLimiter, RedisFailureLimiter, type AttemptLimiter, type RedisCommands } from './auth/rate-limit.js';
import { openBlobService, storageSettings, type BlobService } from './blobs/service.js';
import { TusUploads } from './blobs/tus.js';
import { blobHandler } from './http/blob-handler.js';
import { resolveRefs } from './secret-refs.js';
import { createMailer } from './auth/mailer.js';
import { mailsSettled } from './auth/account-mail.js';
import { externalSources, type ExternalSource } from './external/forward.js';

export interface ServeOptions {
  appDir: string;
  /** TCP port; 0 picks a free one. Default: env `PORT`, then svc.json `port`. */
  port?: number;
  /** Interface to listen on. Default: env `HOST`, then `127.0.0.1`. */
  host?: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Also handed every committed change set (the real-time service always is). */
  sink?: ChangeSink;
  /** The clock of the agent's credit months (tests move it across month ends). Default: the system clock. */
  clock?: () => Date;
  /** How often agent sessions ping their MCP servers, ms (tests shorten it). Default: `MCP_PING_MS`, 15 s. */
  mcpPingMs?: number;
}

export interface RunningServer {
  /** Base URL of the API, e.g. `http://127.0.0.1:3000/api`. */
  url: string;
  port: number;
  manifest: AppManifest;
  /** The app's services: `apiClientFor(server.runtime, caller)` calls the API in-process. */
  runtime: AppRuntime;
  /** The real-time service of this instance (connections, channels, change feeds). */
  realtime: RealtimeService;
  /** The embedded agent (sessions, `ctx.agent`). */
  agent: AgentService;
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
 * `svc migrate`: applies pending migrations of the app's provider; a migration that fails is rolled back
 * whole (see `applyMigrationsSafely`).
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
  // Nothing pending: leave the engine (and its database lock) out of it.
  const pending = await pendingMigrations(appliedAt(manifest.provider, url), migrationsDir).catch(() => null);
  if (pending?.length === 0) return [];
  const { applied } = await applyMigrationsSafely({ provider: manifest.provider, url, migrationsDir });
  return applied;
}

/**
 * The app's long-lived services: resources from the manifest, one input checker per collection.
 * @throws StartupError for a view or query filter that does not parse
 */
export function createAppRuntime(options: {
  manifest: AppManifest;
  db: Database;
  logger: Logger;
  sink?: ChangeSink;
  blobs?: BlobService;
  externals?: ReadonlyMap<string, ExternalSource>;
}): AppRuntime {
  const writers = new Map<string, CollectionWriter>(options.manifest.collections.map((c) => [c.name, { collection: c, checker: compileInputChecker(c) }]));
  return {
    manifest: options.manifest,
    db: options.db,
    logger: options.logger,
    sink: options.sink ?? NO_CHANGE_SINK,
    resources: buildResources(options.manifest),
    writerOf: (name) => writers.get(name)!,
    blobs: options.blobs,
    externals: options.externals,
  };
}

/** The sign-in limiter shared by every instance through Redis; while Redis is down it counts in this process (logged at most every 10 s). */
function sharedLimiter(redis: RedisCommands, apiName: string, logger: Logger): AttemptLimiter {
  let loggedAt = 0;
  return new RedisFailureLimiter(redis, `svc:${apiName}:auth-fail`, new FailureLimiter(), (err) => {
    if (Date.now() - loggedAt < 10_000) return;
    loggedAt = Date.now();
    logger.warn({ err: err.message }, 'redis unavailable: failed sign-ins are counted in this process only');
  });
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
  // Secrets first: a missing storage secret stops the start before anything is opened.
  const storage = storageSettings(manifest.settings.storage, env, (v) => resolveRefs(v, env, 'storage.s3'));
  const externals = externalSources(manifest.externals ?? [], (v, where) => resolveRefs(v, env, where), logger);
  const mailer = createMailer(manifest.settings.mail, env, logger, manifest.name);
  const policyProblems = checkPolicies(manifest);
  if (policyProblems.length > 0) throw new StartupError(`invalid policy filters: ${policyProblems.join('; ')}`);
  const applied = await applyPending(appDir, manifest, url);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const statementTimeoutMs = env.SVC_STATEMENT_TIMEOUT_MS ? Number(env.SVC_STATEMENT_TIMEOUT_MS) : undefined;
  const db: Database = await openDatabase(manifest.provider, url, { statementTimeoutMs });
  const redisUrl = env.REDIS_URL || manifest.settings.realtime.redis || undefined;
  const backplane = await realtimeBackplane(manifest.name, logger, redisUrl);
  const mail = { mailer, origin: () => manifest.settings.mail?.baseUrl ?? baseUrl };
  const auth = await createAuthService(db, manifest, logger, undefined, backplane.redis && sharedLimiter(backplane.redis, manifest.name, logger), mail);
  if (auth.signup.enabled && !mailer.configured)
    logger.warn('sign-up is enabled but svc.json has no mail.smtp: verification and reset mails are written to the log, not sent (development only)');
  const realtime = await startRealtime({ manifest, auth, logger, backplane });
  const extra = options.sink;
  const sink: ChangeSink = extra
    ? {
        publish(changes, origin) {
          realtime.publish(changes);
          extra.publish(changes, origin);
        },
      }
    : realtime;
  const blobs = await openBlobService(appDir, storage, logger);
  const tus = new TusUploads(blobs, logger);
  const runtime = createAppRuntime({ manifest, db, logger, sink, blobs, externals });
  const pool = new WorkerPool({
    spareThreads: manifest.functions.some((f) => f.enabled) ? 2 : 0,
    maxMemoryMb: manifest.settings.functions.maxMemoryMb,
    logger,
  });
  let baseUrl = '';
  const functionOptions = {
    svcDir,
    secrets: secretsFromEnv(env),
    pool,
    // Function code's get/post/patch: the in-process API client, as the function's caller.
    callApi: (caller: Caller, request: ApiCall, signal: AbortSignal, reqId?: string) => apiClientFor(runtime, caller, { signal, reqId }).request(request),
    callRealtime: functionRealtime(realtime),
    callAgent: (request: AgentRequest) => agent.handle(request),
  };
  const invokeFunction = functionInvoker({ manifest, logger, ...functionOptions });
  const agent = new AgentService({
    app: runtime,
    auth,
    realtime,
    svcDir,
    invokeFunction,
    baseUrl: () => baseUrl,
    settings: agentSettings(manifest.settings.agent, env, logger),
    mcpServers: resolveMcpServers(manifest.settings.agent.mcpServers, env, appDir, logger),
    mcpPingMs: options.mcpPingMs,
    credits: manifest.settings.credits,
    clock: options.clock,
    logger,
  });
  await agent.start();
  const app = createApp({
    manifest,
    db,
    logger,
    auth,
    openapi: JSON.parse(readFileSync(join(svcDir, 'openapi.json'), 'utf8')),
    functions: functionOptions,
    invokeFunction,
    credits: agent.ledger,
    publicDir: existsSync(join(appDir, 'public')) ? join(appDir, 'public') : undefined,
    health: {
      ping: () => db.ping(),
      pendingMigrations: () => pendingMigrations(appliedThrough(db), join(appDir, 'migrations', manifest.provider)),
      redisUrl,
    },
  });
  const data = apiHandler(runtime, auth);
  const rt = realtimeHttpHandler(realtime, runtime);
  const blob = blobHandler(runtime, auth, blobs, tus);
  let inFlight = 0;
  let drainedHttp: (() => void) | undefined;
  const server: Server = createServer((req, res) => {
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drainedHttp?.();
    });
    if (!rt(req, res) && !blob(req, res) && !data(req, res)) app(req, res);
  });
  server.on('upgrade', (req, socket, head) => {
    if (!realtime.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  const port = options.port ?? (env.PORT ? Number(env.PORT) : manifest.settings.port);
  const host = options.host ?? env.HOST ?? '127.0.0.1';
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  const actual = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  baseUrl = `http://${shownHost}:${actual}`;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${actual}/api`,
    port: actual,
    manifest,
    runtime,
    realtime,
    agent,
    close(graceMs = 10_000) {
      closing ??= (async () => {
        const closed = new Promise<void>((ok) => server.close(() => ok()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        // HTTP first (in-flight requests finish), then the sockets get their close frame.
        if (inFlight > 0) await Promise.race([new Promise<void>((ok) => (drainedHttp = ok)), closed]);
        await agent.close();
        await realtime.close();
        await closed;
        clearTimeout(timer);
        await pool.close();
        tus.close();
        await blobs.close();
        await mailsSettled();
        mailer.close();
        await db.close();
        logger.info('server stopped');
      })();
      return closing;
    },
  };
}
