/**
 * @module One version of an app served by a running server: what is built from one `.svc/` (the
 * manifest, `openapi.json`, compiled function modules) over the server's long-lived services (database,
 * auth, real-time, blobs, the function worker pool, the agent). `startServer` serves one version for
 * its whole life; `svc dev` (DESIGN §10) builds a new one after each edit and swaps it in, while
 * requests in flight finish on the version they started on and the services (with their WebSocket
 * connections and agent sessions) stay.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { AgentService } from './agent/service.js';
import type { AuthService } from './auth/auth-service.js';
import { checkPolicies } from './auth/authorize.js';
import type { Caller } from './auth/caller.js';
import type { BlobService } from './blobs/service.js';
import { registerBlobUrlSigner } from './blobs/signed-url.js';
import type { TusUploads } from './blobs/tus.js';
import { apiClientFor, type ApiCall } from './core/api-client.js';
import type { AppRuntime } from './core/context.js';
import { buildResources } from './core/resources.js';
import { NO_CHANGE_SINK, type ChangeSink } from './data/changes.js';
import type { CollectionWriter } from './data/children.js';
import type { Database } from './data/database.js';
import { compileInputChecker } from './data/input.js';
import { appliedThrough, pendingMigrations } from './data/migration-state.js';
import { externalSources, type ExternalSource } from './external/forward.js';
import type { AgentRequest, JobsRequest } from './functions/call-api.js';
import { sendFunctionMail, type MailRequest } from './functions/function-mail.js';
import type { Scheduler } from './jobs/schedules.js';
import type { JobsService } from './jobs/service.js';
import type { WorkerPool } from './functions/worker-pool.js';
import { apiHandler } from './http/api-handler.js';
import { createApp } from './http/app.js';
import { blobHandler } from './http/blob-handler.js';
import { functionInvoker, secretsFromEnv, type FunctionInvoker } from './http/function-routes.js';
import { functionHandler } from './http/function-handler.js';
import { configHandler } from './http/config-handler.js';
import { StartupError } from './load-manifest.js';
import type { Logger } from './log.js';
import type { AppManifest } from './manifest.js';
import { functionRealtime, realtimeHttpHandler, type RealtimeService } from './realtime/index.js';
import { resolveRefs } from './secret-refs.js';
import type { LogStore } from './logs/log-store.js';
import type { Presence } from './http/admin/presence.js';
import type { Metrics } from './metrics/metrics.js';
import { inSpan, tracingOn } from './tracing/tracing.js';

/**
 * The app's long-lived services: built once at start, shared by every version.
 * @internal (runtime only; `startServer` and `startDevServer` build it)
 */
export interface ServerServices {
  appDir: string;
  svcDir: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  db: Database;
  auth: AuthService;
  realtime: RealtimeService;
  sink: ChangeSink;
  blobs: BlobService;
  tus: TusUploads;
  pool: WorkerPool;
  /** The agent (built before the first version; it reaches the current one through `liveRuntime`). */
  agent?: AgentService;
  redisUrl?: string;
  /** True once a drain began (`close(…, drainMs)`): readiness answers 503 so load balancers stop sending. */
  draining?: () => boolean;
  /** `svc dev`: files of `public/` are answered with `Cache-Control: no-cache`. */
  dev: boolean;
  /** The log store of DESIGN §9 (request lines, client `_log` entries, function output). */
  logs?: LogStore;
  /** Instances seen on the bus and their real-time (the admin endpoints read it). */
  presence?: Presence;
  /** The server's metrics (docs/operations.md); absent when svc.json says `metrics: false`. */
  metrics?: Metrics;
  /** Background jobs (DESIGN §12); absent where the database has no job engine yet. */
  jobs?: JobsService;
  /** Function schedules (DESIGN §12); absent where this instance runs no jobs. */
  scheduler?: Scheduler;
}

const NO_JOBS = { status: 503, body: { error: 'jobs are not available on this database yet', code: 'SERVICE_UNAVAILABLE' } };

/** One version: its manifest and services, and the HTTP handler that serves it. */
export interface AppVersion {
  manifest: AppManifest;
  runtime: AppRuntime;
  invokeFunction: FunctionInvoker;
  /** Whether `public/` existed when this version was built (a folder added later needs a new version). */
  hasPublicDir: boolean;
  /** Serves one HTTP request (every route of SPEC §4). */
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/**
 * The app's long-lived services: resources from the manifest, one input checker per collection; rows
 * of its collections read signed blob URLs when `blobs` has a signer.
 * @throws StartupError for a view or query filter that does not parse
 */
export function createAppRuntime(options: {
  manifest: AppManifest;
  db: Database;
  logger: Logger;
  sink?: ChangeSink;
  blobs?: BlobService;
  externals?: ReadonlyMap<string, ExternalSource>;
  logs?: LogStore;
  metrics?: Metrics;
}): AppRuntime {
  const writers = new Map<string, CollectionWriter>(options.manifest.collections.map((c) => [c.name, { collection: c, checker: compileInputChecker(c) }]));
  if (options.blobs?.signer) registerBlobUrlSigner(options.manifest.collections, options.blobs.signer);
  return {
    manifest: options.manifest,
    db: options.db,
    logger: options.logger,
    sink: options.sink ?? NO_CHANGE_SINK,
    resources: buildResources(options.manifest),
    writerOf: (name) => writers.get(name)!,
    blobs: options.blobs,
    externals: options.externals,
    logs: options.logs,
    metrics: options.metrics,
  };
}

/**
 * Builds the version of `manifest` (read from `services.svcDir`) over the server's services.
 * @throws StartupError for invalid policy filters, a missing compiled function module, an unresolved
 *   secret of an external collection, or a missing/invalid `openapi.json`
 */
export function buildAppVersion(services: ServerServices, manifest: AppManifest): AppVersion {
  const { appDir, svcDir, env, logger, db, auth, realtime } = services;
  const policyProblems = checkPolicies(manifest);
  if (policyProblems.length > 0) throw new StartupError(`invalid policy filters: ${policyProblems.join('; ')}`);
  const externals = externalSources(manifest.externals ?? [], (v, where) => resolveRefs(v, env, where), logger);
  const { metrics } = services;
  const runtime = createAppRuntime({ manifest, db, logger, sink: services.sink, blobs: services.blobs, externals, logs: services.logs, metrics });
  const functions = {
    svcDir,
    secrets: secretsFromEnv(env),
    pool: services.pool,
    // Function code's get/post/patch: the in-process API client, as the function's caller.
    callApi: (caller: Caller, request: ApiCall, signal: AbortSignal, reqId?: string) => apiClientFor(runtime, caller, { signal, reqId }).request(request),
    callRealtime: functionRealtime(realtime),
    callAgent: (request: AgentRequest) => services.agent!.handle(request),
    callJobs: (request: JobsRequest, caller: Caller) => (services.jobs ? services.jobs.enqueue(request, caller) : Promise.resolve(NO_JOBS)),
    callMail: (request: MailRequest) => sendFunctionMail(services.auth.mail.mailer, request),
    logs: services.logs,
  };
  const invokeFunction = traceCalls(countCalls(functionInvoker({ manifest, logger, ...functions }), manifest, metrics));
  const migrationsDir = join(appDir, 'migrations', manifest.provider);
  const health = {
    ping: () => db.ping(),
    pendingMigrations: () => pendingMigrations(appliedThrough(db), migrationsDir),
    redisUrl: services.redisUrl,
    draining: services.draining,
  };
  const publicDir = join(appDir, 'public');
  const hasPublicDir = existsSync(publicDir);
  let openapi: object;
  try {
    openapi = JSON.parse(readFileSync(join(svcDir, 'openapi.json'), 'utf8')) as object;
  } catch {
    throw new StartupError(`${join(svcDir, 'openapi.json')} is missing or not JSON: run \`svc generate\` again`);
  }
  const app = createApp({
    manifest,
    db,
    logger,
    auth,
    openapi,
    functions,
    invokeFunction,
    credits: services.agent?.ledger,
    agentUploads: services.agent && { uploads: services.agent.uploads, signer: services.blobs.signer, tus: services.tus },
    publicDir: hasPublicDir ? publicDir : undefined,
    publicNoCache: services.dev,
    health,
    logs: services.logs,
    metrics,
    metricsHere: !(manifest.settings.metrics && manifest.settings.metrics.port !== undefined) && services.env.SVC_METRICS_PORT === undefined,
    admin: services.presence && {
      db,
      auth,
      manifest: () => manifest,
      health,
      migrationsDir,
      presence: services.presence,
      logs: services.logs,
      mcpServers: services.agent?.mcpServers,
      jobs: services.jobs?.engine,
      agentUploads: services.agent?.uploads,
    },
  });
  const data = apiHandler(runtime, auth);
  const rt = realtimeHttpHandler(realtime, runtime);
  const blob = blobHandler(runtime, auth, services.blobs, services.tus);
  const fn = functionHandler(manifest, logger, auth, invokeFunction, services.logs, metrics);
  const config = configHandler(logger, auth, services.logs, metrics);
  return {
    manifest,
    runtime,
    invokeFunction,
    hasPublicDir,
    handle: (req, res) => {
      if (!config(req, res) && !rt(req, res) && !blob(req, res) && !data(req, res) && !fn(req, res)) app(req, res);
    },
  };
}

/**
 * An `AppRuntime` that always answers from the version `current()` returns, for the services that
 * outlive versions (the agent's API tools): the database and logger are the server's own.
 */
export function liveRuntime(services: ServerServices, current: () => AppVersion): AppRuntime {
  return {
    get manifest() {
      return current().manifest;
    },
    db: services.db,
    logger: services.logger,
    sink: services.sink,
    get resources() {
      return current().runtime.resources;
    },
    writerOf: (name) => current().runtime.writerOf(name),
    blobs: services.blobs,
    get externals() {
      return current().runtime.externals;
    },
    logs: services.logs,
    metrics: services.metrics,
  };
}

/** The invoker with a span per call when traces are on (docs/operations.md). */
function traceCalls(invoke: FunctionInvoker): FunctionInvoker {
  if (!tracingOn()) return invoke;
  return (name, call) => inSpan(`function ${name}`, { 'svc.function': name, ...(call.reqId && { 'svc.request_id': call.reqId }) }, () => invoke(name, call));
}

/** The invoker counting each call in `svc_function_duration_seconds` (names outside the manifest: `unknown`). */
function countCalls(invoke: FunctionInvoker, manifest: AppManifest, metrics: Metrics | undefined): FunctionInvoker {
  if (!metrics) return invoke;
  // Children made once per function: no label hashing per call.
  const series = (name: string) => ({ ok: metrics.functionCalls.labels(name, 'ok'), error: metrics.functionCalls.labels(name, 'error') });
  const byName = new Map(manifest.functions.map((f) => [f.name, series(f.name)]));
  const unknown = series('unknown');
  return async (name, call) => {
    const started = performance.now();
    const s = byName.get(name) ?? unknown;
    try {
      const answer = await invoke(name, call);
      (answer.status >= 500 ? s.error : s.ok).observe((performance.now() - started) / 1000);
      return answer;
    } catch (err) {
      s.error.observe((performance.now() - started) / 1000);
      throw err;
    }
  };
}
