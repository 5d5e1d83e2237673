/**
 * @module The Express 5 application of everything under `/api` but the data routes and the canonical
 * function paths (which `api-handler.ts` and `function-handler.ts` serve first, without a framework;
 * the function routes here serve the other spellings, with the same answers): JSON body parsing, request ids and logs,
 * authentication, the auth endpoints and `/login`, the client log, `_openapi`, functions, the
 * unknown-route handler and the one error middleware that writes the DESIGN §4 body. Stack traces
 * never leave the server.
 */
import { apiIndex, indexLinks, sendIndexPage } from './index-pages.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppManifest } from '../manifest.js';
import { PUBLIC_FRAME_ANCESTORS_DEFAULT } from '../contract/settings.js';
import { answerError, HttpError } from '../errors.js';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { trackRequest } from './api-handler.js';
import { captureRawBody, functionJsonBody, functionRouter, type FunctionInvoker, type FunctionRoutesOptions } from './function-routes.js';
import type { AuthService } from '../auth/auth-service.js';
import { authenticate, authRouter, loginRouter, oauthErrors, tokenRouter } from './auth-routes.js';
import { clientLogRouter } from './client-log-routes.js';
import { accountRouter, ACCOUNT_PATHS } from './account-routes.js';
import { providerRouter } from './provider-routes.js';
import { healthRouter, type HealthDeps } from './health.js';
import { creditsRouter } from './credits-routes.js';
import type { CreditLedger } from '../agent/credits.js';
import type { AgentUploads } from '../agent/uploads.js';
import type { BlobUrlSigner } from '../blobs/signed-url.js';
import type { TusUploads } from '../blobs/tus.js';
import { agentUploadsRouter } from './agent-uploads.js';
import { consoleHandler } from './console.js';
import type { LogStore } from '../logs/log-store.js';
import { adminRouter, type AdminDeps } from './admin/router.js';
import { requireAdmin } from './admin/params.js';
import type { Metrics } from '../metrics/metrics.js';
import { expressRoutes } from '../metrics/routes.js';

const adminOnly = (_req: Request, res: Response, next: NextFunction) => {
  requireAdmin(res);
  next();
};

export interface AppOptions {
  manifest: AppManifest;
  db: Database;
  logger: Logger;
  /** The generated OpenAPI document, served at `/api/_openapi`. */
  openapi: object;
  /** Where compiled functions are, their secrets and the worker pool that runs them. */
  functions: Omit<FunctionRoutesOptions, 'manifest' | 'logger'>;
  /** The function invoker to serve (shared with the agent's tools); default: one made from `functions`. */
  invokeFunction?: FunctionInvoker;
  /** Signing keys, limiter and settings of authentication (`createAuthService`). */
  auth: AuthService;
  /** What `/api/_ready` checks (database ping, pending migrations, Redis). */
  health: HealthDeps;
  /** The agent's credits, behind `GET`/`PATCH /api/_agent/credits` (admins only). */
  credits?: CreditLedger;
  /** The attachments of agent messages, behind `/api/_agent/uploads` (DESIGN §7a), and the signer of their urls. */
  agentUploads?: { uploads: AgentUploads; signer?: BlobUrlSigner; tus?: TusUploads };
  /** The app's `public/` folder, served at `/` (pages such as a chat widget); absent: nothing is. */
  publicDir?: string;
  /** The built console served at `/_/` (DESIGN §9); default `dist/console/`. Off when svc.json says `"console": false`. */
  consoleDir?: string;
  /** `svc dev` (DESIGN §10): files of `publicDir` are answered with `Cache-Control: no-cache`, so an edit shows at once. */
  publicNoCache?: boolean;
  /** The log store of DESIGN §9: request lines and client `_log` entries go there. */
  logs?: LogStore;
  /** What the admin endpoints under `/api/_admin/` (DESIGN §9) read and change; absent: not served. */
  admin?: AdminDeps;
  /** The server's metrics: every request is counted; absent when svc.json says `metrics: false`. */
  metrics?: Metrics;
  /** Serve `GET /api/_metrics` (admins only): true unless the metrics have a port of their own. */
  metricsHere?: boolean;
}

/** Largest JSON body of the sign-in and account endpoints (`_auth`, `_token`, `_refresh`, `_logout`, `_signup`, …). */
const AUTH_BODY_BYTES = 64 * 1024;
/** Largest JSON body of the client log. */
const LOG_BODY_BYTES = 1024 * 1024;

/**
 * Builds the HTTP application of an app.
 * Source: SPEC §4 (endpoints), §7 (status codes); DESIGN §4 (error body, unknown route → 404).
 */
export function createApp(options: AppOptions): express.Express {
  const { manifest, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  const routeOf =
    options.metrics &&
    expressRoutes(
      options.metrics,
      manifest.functions.map((f) => f.name),
    );
  app.use((req: Request, res: Response, next: NextFunction) => {
    res.locals.reqId = trackRequest(logger, req, res, options.logs, routeOf, options.auth.trustedPeer);
    next();
  });
  // The console (DESIGN §9) sets its own headers and refuses malformed paths itself.
  if (manifest.settings.console !== false) app.use('/_', consoleHandler(options.consoleDir));
  // A path that is not valid percent-encoding (`/api/%`, `/api/%E0%A4%A`) cannot name any route.
  app.use((req: Request, _res: Response, next: NextFunction) => {
    try {
      decodeURIComponent(req.path);
    } catch {
      throw new HttpError('INVALID_PARAMETER', 'the path is not valid percent-encoding');
    }
    next();
  });
  // Bodies are parsed per route, after routing and authentication, each with its own limit: a request
  // to an unknown route, or one refused before its handler, is never parsed.
  const json = (limit: number) => express.json({ limit, type: ['application/json', 'application/*+json'], verify: captureRawBody });

  app.use(loginRouter(options.auth), providerRouter(options.auth));
  // Liveness and readiness answer before authentication: load balancers carry no credentials.
  app.use('/api', healthRouter(options.health));
  const api = express.Router();
  // Every /api request is authenticated first: res.locals.caller is set for every route below.
  api.use(authenticate(options.auth));
  api.use(['/_auth', '/_token', '/_refresh', '/_logout', '/_me', ...ACCOUNT_PATHS], json(AUTH_BODY_BYTES));
  api.use('/_log', json(LOG_BODY_BYTES));
  api.use(['/_invoke', ...manifest.functions.filter((f) => f.enabled && f.functionTypeId === 1).map((f) => `/${f.name}`)], functionJsonBody);
  api.use(accountRouter(options.auth), authRouter(options.auth), tokenRouter(options.auth), clientLogRouter(options.db, logger, manifest, options.logs));
  // Uploads stream their multipart body themselves: mounted before the JSON parser of the credits.
  if (options.agentUploads) api.use('/_agent', agentUploadsRouter(options.agentUploads.uploads, options.agentUploads.signer, options.agentUploads.tus));
  if (options.credits) api.use('/_agent', json(AUTH_BODY_BYTES), creditsRouter(options.credits));
  // Admins only: refused before any body is parsed.
  if (options.admin) api.use('/_admin', adminOnly, json(AUTH_BODY_BYTES), adminRouter(options.admin));
  // The metrics (docs/operations.md): here for admins unless svc.json gives them a port of their own.
  const metrics = options.metrics;
  if (metrics && options.metricsHere)
    api.get('/_metrics', adminOnly, (_req, res, next) => {
      metrics.text().then((text) => res.type(metrics.contentType).send(text), next);
    });
  // svc.json `publicUrl` names where the API is served (OpenAPI `servers`; paths are under `/api`).
  const publicUrl = manifest.settings.publicUrl;
  const openapi = publicUrl ? { ...options.openapi, servers: [{ url: `${publicUrl}/api` }] } : options.openapi;
  api.get('/_openapi', (_req, res) => {
    res.json(openapi);
  });
  // `GET /api` (the URL `svc serve` prints): what is here and where to go.
  api.get('/', apiIndex(manifest));
  // Collections, views and queries are served before this application (`api-handler.ts`).
  api.use(functionRouter({ manifest, logger, publicOrigin: options.auth.publicOrigin, ...options.functions }, options.invokeFunction));
  app.use('/api', api);
  // Static files of the app's public/ folder, after every /api route so they never shadow one. They
  // may be framed only by svc.json `public.frameAncestors` (default the app's own pages: no clickjacking).
  const frameAncestors = manifest.settings.public?.frameAncestors ?? PUBLIC_FRAME_ANCESTORS_DEFAULT;
  if (options.publicDir)
    app.use(
      express.static(options.publicDir, {
        index: 'index.html',
        dotfiles: 'ignore',
        setHeaders: (res) => {
          res.set('x-content-type-options', 'nosniff');
          res.set('content-security-policy', `frame-ancestors ${frameAncestors}`);
          if (frameAncestors === PUBLIC_FRAME_ANCESTORS_DEFAULT) res.set('x-frame-options', 'SAMEORIGIN');
          if (options.publicNoCache) res.set('cache-control', 'no-cache');
        },
      }),
    );

  // `/` without a public/index.html of the app's: a page linking the API description, sign-in and the console.
  const links = indexLinks(manifest);
  app.get('/', (_req, res) => sendIndexPage(res, links));

  app.use((req: Request) => {
    const name = req.path.startsWith('/api/') ? req.path.split('/')[2] : undefined;
    if (name && !req.path.slice(5).includes('/')) {
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        /* a malformed escape: named as sent */
      }
      const fn = manifest.functions.find((f) => f.name === decoded && f.enabled && f.functionTypeId === 2);
      if (fn)
        throw new HttpError(
          'NOT_FOUND',
          `function ${JSON.stringify(decoded)} is served at /api/_invoke/${decoded} (type-2 functions are not served at /api/<name>)`,
        );
      throw new HttpError('NOT_FOUND', `no collection, view, query or function is named ${JSON.stringify(decoded)}`);
    }
    throw new HttpError('NOT_FOUND', `no route ${req.method} ${req.path}`);
  });

  // RFC 6749 error bodies on the OAuth token endpoint.
  app.use('/api/_token', oauthErrors(options.auth));
  // Express recognises the error middleware by its four parameters.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { status, body, headers } = answerError(err);
    if (status >= 500) logger.error({ reqId: res.locals.reqId, err }, 'request failed');
    if (res.headersSent) return;
    res.set(headers);
    res.status(status).json(body);
  });
  return app;
}
