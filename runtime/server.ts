/**
 * @module `startServer`: loads the generated output of an app folder, applies pending migrations,
 * opens the database and serves HTTP. `close()` stops accepting, finishes in-flight requests, and
 * disconnects (SIGTERM handling lives in the CLI, which calls it).
 */
import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { openDatabase, providerOf, resolveDatabaseUrl, type Database } from './data/database.js';
import { applyMigrationsSafely } from './data/migrate-safely.js';
import { appliedAt, pendingMigrations } from './data/migration-state.js';
import { AgentService } from './agent/service.js';
import { agentSettings } from './agent/settings.js';
import { resolveMcpServers } from './agent/mcp.js';
import { WorkerPool } from './functions/worker-pool.js';
import type { AppRuntime } from './core/context.js';
import type { Change, ChangeSink } from './data/changes.js';
import { createLogger, type Logger } from './log.js';
import { loadManifest, StartupError } from './load-manifest.js';
import { corsCredentialsProblem } from './contract/index.js';
import type { AppManifest } from './manifest.js';
import { createAuthService } from './auth/auth-service.js';
import { checkPolicies } from './auth/authorize.js';
import { startRealtime, realtimeBackplane, type RealtimeService } from './realtime/index.js';
import { FailureLimiter, RedisFailureLimiter, type AttemptLimiter, type RedisCommands } from './auth/rate-limit.js';
import { openBlobService, storageSettings } from './blobs/service.js';
import { BlobUrlSigner } from './blobs/signed-url.js';
import { TusUploads } from './blobs/tus.js';
import { OrphanSweep, sweepTiming } from './blobs/orphan-sweep.js';
import { resolveRefs } from './secret-refs.js';
import { buildAppVersion, liveRuntime, type AppVersion, type ServerServices } from './app-version.js';

export { createAppRuntime } from './app-version.js';
import { createMailer, type Mailer } from './auth/mailer.js';
import { mailsSettled } from './auth/account-mail.js';
import { createProviders } from './auth/providers/registry.js';
import { LogStore } from './logs/log-store.js';
import { prepareLogStore } from './logs/log-batches.js';
import { Presence } from './http/admin/presence.js';
import { Metrics } from './metrics/metrics.js';
import { flushTracing, startTracing, traceRequest, tracingOn } from './tracing/tracing.js';
import { serveMetrics } from './metrics/metrics-server.js';
import { corsLayer, type CorsLayer } from './http/cors.js';
import { allowedHostsOf, allowedHostsWarning, hostChecker, hostNotAllowed, refuseHost } from './http/host-check.js';
import { refuseUpgrade } from './realtime/guard.js';
import { openJobEngine } from './jobs/index.js';
import { JobsService } from './jobs/service.js';
import { Scheduler } from './jobs/schedules.js';
import { installTriggers } from './jobs/capture.js';

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
  /**
   * Stops accepting, waits for in-flight requests (at most `graceMs`, default 10 s), disconnects.
   * With `drainMs` > 0 it first drains for that long (docs/deploy.md): `/api/_ready` answers 503 and
   * every response carries `Connection: close`, while requests are still served, so a load balancer's
   * health check takes the instance out before it stops listening.
   */
  close(graceMs?: number, drainMs?: number): Promise<void>;
}

/** The Redis URL in force for an app (the bus between instances): env `REDIS_URL`, else svc.json `realtime.redis`; none without either. */
export function redisUrlFor(manifest: AppManifest, env: NodeJS.ProcessEnv): string | undefined {
  return env.REDIS_URL || manifest.settings.realtime.redis || undefined;
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
export async function applyPending(appDir: string, manifest: AppManifest, url: string): Promise<string[]> {
  const migrationsDir = join(appDir, 'migrations', manifest.provider);
  if (!existsSync(migrationsDir)) return [];
  // Nothing pending: leave the engine (and its database lock) out of it.
  const pending = await pendingMigrations(appliedAt(manifest.provider, url), migrationsDir).catch(() => null);
  if (pending?.length === 0) return [];
  const { applied } = await applyMigrationsSafely({ provider: manifest.provider, url, migrationsDir });
  return applied;
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

/** What `launchServer` returns: the running server and the seam `svc dev` swaps versions through. */
export interface LaunchedServer {
  running: RunningServer;
  services: ServerServices;
  /** The version serving new requests. */
  current(): AppVersion;
  /** Serves `version` from the next request on (requests in flight finish on theirs). */
  swap(version: AppVersion): void;
}

/**
 * `svc serve`: applies pending migrations, then serves the app.
 * @throws StartupError for a missing/stale `.svc/` or a wrong database URL; Error from migrations
 * Source: DESIGN §3a (`svc serve`), issue "Runtime".
 */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  return (await launchServer(options)).running;
}

/**
 * Starts the server with its long-lived services and the first version of the app (see app-version.ts).
 * `dev`: `public/` is served with `Cache-Control: no-cache` (DESIGN §10).
 * @throws as `startServer`
 */
export async function launchServer(options: ServeOptions & { dev?: boolean }): Promise<LaunchedServer> {
  const env = options.env ?? process.env;
  const appDir = resolve(options.appDir);
  const svcDir = join(appDir, '.svc');
  const manifest = loadManifest(svcDir);
  const logger = options.logger ?? createLogger({ app: manifest.name });
  const url = databaseUrlFor(appDir, manifest, env);
  // Secrets first: a missing storage secret stops the start before anything is opened.
  const storage = storageSettings(manifest.settings.storage, env, (v) => resolveRefs(v, env, 'storage.s3'));
  const sweepMs = sweepTiming(env);
  const mailer = createMailer(manifest.settings.mail, env, logger, manifest.name);
  const providers = createProviders(manifest.settings.auth.providers ?? {}, env, (name, why) =>
    logger.warn(`identity provider "${name}" is not configured, its sign-in is off: ${why}`),
  );
  const policyProblems = checkPolicies(manifest);
  if (policyProblems.length > 0) throw new StartupError(`invalid policy filters: ${policyProblems.join('; ')}`);
  const corsProblem = corsCredentialsProblem(manifest.settings);
  if (corsProblem) throw new StartupError(corsProblem);
  const applied = await applyPending(appDir, manifest, url);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  await startTracing(env, manifest.name, logger);
  const statementTimeoutMs = env.SVC_STATEMENT_TIMEOUT_MS ? Number(env.SVC_STATEMENT_TIMEOUT_MS) : undefined;
  // Metrics (docs/operations.md): on unless svc.json says `metrics: false`.
  const metricsSettings = manifest.settings.metrics ?? {};
  const metrics = metricsSettings === false ? undefined : new Metrics();
  const db: Database = await openDatabase(manifest.provider, url, { statementTimeoutMs, observe: metrics?.statement });
  const redisUrl = redisUrlFor(manifest, env);
  const backplane = await realtimeBackplane(manifest.name, logger, redisUrl);
  // The current version's settings (`svc dev` swaps them): `auth` is set before any mail is sent.
  const mail = { mailer: mailer as Mailer, origin: () => auth.manifest.settings.mail?.baseUrl ?? auth.manifest.settings.publicUrl ?? baseUrl };
  const auth = await createAuthService(
    db,
    manifest,
    logger,
    undefined,
    backplane.redis && sharedLimiter(backplane.redis, manifest.name, logger),
    mail,
    providers,
  );
  if (auth.signup.enabled && !mailer.configured)
    logger.warn('sign-up is enabled but svc.json has no mail.smtp: verification and reset mails are written to the log, not sent (development only)');
  const realtime = await startRealtime({ manifest, auth, logger, backplane });
  const extra = options.sink;
  // After a commit: the real-time feed, a caller's own sink, and the job runners when a collection with
  // triggers changed (their SQL may just have added jobs; DESIGN §12).
  const sink: ChangeSink = {
    publish(changes, origin) {
      realtime.publish(changes);
      extra?.publish(changes, origin);
      wakeJobs(changes);
    },
  };
  const blobs = await openBlobService(appDir, storage, logger, new BlobUrlSigner(auth.keys.derive('blob-url'), storage.signedUrlSeconds));
  const sweep = new OrphanSweep({
    store: blobs.store,
    db,
    manifest: () => current().manifest,
    logger,
    ...sweepMs,
    gate: backplane.redis && { redis: backplane.redis, key: `svc:${manifest.name}:blob-sweep` },
  }).start();
  const { redis, newSubscriber } = backplane;
  const tus = new TusUploads(blobs, logger, redis && newSubscriber ? { redis, newSubscriber, apiName: manifest.name } : undefined);
  const pool = new WorkerPool({
    spareThreads: manifest.functions.some((f) => f.enabled) || options.dev ? 2 : 0,
    maxMemoryMb: manifest.settings.functions.maxMemoryMb,
    logger,
  });
  // Log lines need no write-ahead log (PostgreSQL) and readers want the view: a start goes on without them.
  await prepareLogStore(db).catch((err: unknown) =>
    logger.warn({ err: (err as Error).message }, 'could not prepare the log store (UNLOGGED batches, the _svc_logs view); log lines are still written'),
  );
  const logs = new LogStore(db, realtime.instanceId, manifest.settings.logs, logger).start();
  const presence = new Presence(realtime).start();
  let draining = false;
  const services: ServerServices = {
    appDir,
    svcDir,
    env,
    logger,
    db,
    auth,
    realtime,
    sink,
    blobs,
    tus,
    pool,
    redisUrl,
    draining: () => draining,
    dev: options.dev === true,
    logs,
    presence,
    metrics,
  };
  let version: AppVersion | undefined;
  const current = () => version!;
  let baseUrl = '';
  // Background jobs (DESIGN §12): the engine's storage is ready before the first version serves.
  const staleLockMs = env.SVC_JOBS_STALE_LOCK_MS ? Number(env.SVC_JOBS_STALE_LOCK_MS) : undefined;
  if (staleLockMs !== undefined && !(Number.isInteger(staleLockMs) && staleLockMs >= 100))
    throw new Error(`SVC_JOBS_STALE_LOCK_MS must be a whole number of milliseconds, at least 100 (got ${JSON.stringify(env.SVC_JOBS_STALE_LOCK_MS)})`);
  const engine = openJobEngine(db, { databaseUrl: url, staleLockMs }, { logger });
  await engine.prepare();
  // Capture (DESIGN §12): the SQL triggers that write trigger jobs, after the migrations and the engine.
  const installed = await installTriggers(db, manifest);
  if (installed.created > 0 || installed.dropped > 0) logger.debug(installed, 'capture triggers installed');
  const jobs =
    engine &&
    new JobsService({
      engine,
      manifest: () => current().manifest,
      invokeFunction: (name, call) => current().invokeFunction(name, call),
      baseUrl: () => `${baseUrl}/api`,
      logger,
      logs,
      metrics,
      env,
    });
  services.jobs = jobs;
  /** A commit that changed a collection with triggers may have added jobs: wake the runners. */
  function wakeJobs(changes: Change[]): void {
    const triggers = version?.manifest.triggers;
    if (triggers?.length && changes.some((c) => triggers.some((t) => t.collection === c.collection))) engine.wake();
  }
  // The agent outlives versions: it reaches the current one through a live runtime and invoker.
  const agent = new AgentService({
    app: liveRuntime(services, current),
    auth,
    realtime,
    svcDir,
    invokeFunction: (name, call) => current().invokeFunction(name, call),
    baseUrl: () => baseUrl,
    settings: agentSettings(manifest.settings.agent, env, logger),
    mcpServers: resolveMcpServers(manifest.settings.agent.mcpServers, env, appDir, logger),
    mcpPingMs: options.mcpPingMs,
    credits: manifest.settings.credits,
    clock: options.clock,
    logger,
  });
  services.agent = agent;
  if (metrics)
    metrics.sources = { pool: db.poolStats, realtime: () => realtime.stats(), agentSessions: () => agent.sessionCount, jobs: engine && (() => engine.stats()) };
  version = buildAppVersion(services, manifest);
  await agent.start();
  let inFlight = 0;
  let drainedHttp: (() => void) | undefined;
  const traced = tracingOn();
  const host = options.host ?? env.HOST ?? '127.0.0.1';
  // What the request's edge derives from the settings, built again only when a new version of the app
  // brings other settings: the Host check (DNS rebinding, docs/deploy.md "Allowed hosts"; one cached
  // lookup per request) and CORS (svc.json `cors`, runtime/http/cors.ts; here, so routes served outside
  // Express get it too).
  let edge: { settings: AppManifest['settings']; hostAllowed: (host: string | undefined) => boolean; cors: CorsLayer } | undefined;
  const edgeOf = () => {
    const settings = current().manifest.settings;
    if (edge?.settings !== settings) edge = { settings, hostAllowed: hostChecker(allowedHostsOf(settings, host)), cors: corsLayer(settings.cors) };
    return edge;
  };
  const server: Server = createServer((req, res) => {
    const { hostAllowed, cors } = edgeOf();
    if (!hostAllowed(req.headers.host)) {
      refuseHost(res, req.headers.host!);
      return;
    }
    inFlight += 1;
    // Draining: each keep-alive connection ends after its response, so none is idle when listening stops.
    if (draining) res.setHeader('connection', 'close');
    res.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drainedHttp?.();
    });
    cors(req, res, () => {
      if (traced) traceRequest(req, res, () => version!.handle(req, res));
      else version!.handle(req, res);
    });
  });
  server.on('upgrade', (req, socket, head) => {
    if (!edgeOf().hostAllowed(req.headers.host)) return refuseUpgrade(socket, hostNotAllowed(req.headers.host!));
    if (!realtime.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  const port = options.port ?? (env.PORT ? Number(env.PORT) : manifest.settings.port);
  const hostWarning = allowedHostsWarning(manifest.settings, host);
  if (hostWarning) logger.warn(hostWarning);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  const actual = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  baseUrl = `http://${shownHost}:${actual}`;
  jobs?.start(manifest.settings.jobs, pool.capacity);
  // Schedules (DESIGN §12): only where this instance runs jobs.
  const scheduler = engine && manifest.settings.jobs?.run !== false ? new Scheduler(db, engine, logger) : undefined;
  await scheduler?.start(manifest.functions);
  services.scheduler = scheduler;
  // A metrics port of their own (env `SVC_METRICS_PORT` overrides svc.json `metrics.port`, as `PORT` does `port`).
  const metricsPort = metricsSettings === false ? undefined : env.SVC_METRICS_PORT ? Number(env.SVC_METRICS_PORT) : metricsSettings.port;
  const metricsServer = metrics && metricsPort !== undefined ? await serveMetrics(metrics, metricsPort, host) : undefined;
  if (metricsServer) logger.info(`metrics at http://${shownHost}:${(metricsServer.address() as AddressInfo).port}/metrics`);
  let closing: Promise<void> | undefined;
  const running: RunningServer = {
    url: `http://${shownHost}:${actual}/api`,
    port: actual,
    get manifest() {
      return current().manifest;
    },
    get runtime() {
      return current().runtime;
    },
    realtime,
    agent,
    close(graceMs = 10_000, drainMs = 0) {
      closing ??= (async () => {
        if (drainMs > 0) {
          draining = true;
          logger.info({ drainMs }, 'draining: not ready, still serving');
          await new Promise((ok) => setTimeout(ok, drainMs));
        }
        const closed = new Promise<void>((ok) => server.close(() => ok()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        // HTTP first (in-flight requests finish), then the sockets get their close frame.
        if (inFlight > 0) await Promise.race([new Promise<void>((ok) => (drainedHttp = ok)), closed]);
        await agent.close();
        scheduler?.stop();
        await jobs?.engine.stop(graceMs);
        await realtime.close();
        await closed;
        clearTimeout(timer);
        metricsServer?.closeAllConnections();
        await new Promise<void>((ok) => (metricsServer ? metricsServer.close(() => ok()) : ok()));
        await pool.close();
        tus.close();
        await sweep.close();
        await blobs.close();
        await mailsSettled();
        mailer.close();
        if (auth.mail.mailer !== mailer) (auth.mail.mailer as Partial<typeof mailer>).close?.(); // svc dev swapped in another
        await logs.close();
        await flushTracing();
        await db.close();
        logger.info('server stopped');
      })();
      return closing;
    },
  };
  return {
    running,
    services,
    current,
    swap: (next) => {
      version = next;
    },
  };
}
