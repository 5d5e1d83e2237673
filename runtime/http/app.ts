/**
 * @module The Express 5 application: JSON body parsing, request ids and logs, authentication of every
 * `/api` request, the auth endpoints and `/login`, the client log, the routes of every generated route
 * module under `/api`, the unknown-route handler and the one error middleware that writes the DESIGN §4
 * body. Stack traces never leave the server.
 */
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppManifest } from '../manifest.js';
import { MAX_BODY_BYTES } from '../contract/limits.js';
import { HttpError, toErrorBody } from '../errors.js';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { collectionRouter, type RoutesDefinition } from './collection-routes.js';
import { compileInputChecker } from '../data/input.js';
import { queryRouter } from './query-routes.js';
import type { CollectionWriter } from '../data/children.js';
import { captureRawBody, functionRouter, type FunctionRoutesOptions } from './function-routes.js';
import type { AuthService } from '../auth/auth-service.js';
import { authenticate } from '../auth/authenticate.js';
import { authRouter } from '../auth/auth-routes.js';
import { oauthErrors, tokenRouter } from '../auth/token-route.js';
import { loginRouter } from '../auth/login-page.js';
import { clientLogRouter } from './client-log-routes.js';

export interface AppOptions {
  manifest: AppManifest;
  db: Database;
  logger: Logger;
  /** Definitions exported by `.svc/routes/*.js`. */
  routes: RoutesDefinition[];
  /** The generated OpenAPI document, served at `/api/_openapi`. */
  openapi: object;
  /** Where compiled functions are, their secrets and the worker pool that runs them. */
  functions: Omit<FunctionRoutesOptions, 'manifest' | 'logger'>;
  /** Signing keys, limiter and settings of authentication (`createAuthService`). */
  auth: AuthService;
}

/** Largest accepted JSON body: 10 MiB. */
const MAX_BODY = MAX_BODY_BYTES;

/**
 * Builds the HTTP application of an app.
 * Source: SPEC §4 (endpoints), §7 (status codes); DESIGN §4 (error body, unknown route → 404).
 */
export function createApp(options: AppOptions): express.Express {
  const { manifest, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  app.use((req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const reqId = (req.headers['x-request-id'] as string | undefined)?.slice(0, 64) || randomUUID();
    res.locals.reqId = reqId;
    res.setHeader('x-request-id', reqId);
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info({ reqId, method: req.method, url: req.originalUrl, status: res.statusCode, durationMs: Math.round(durationMs * 10) / 10 }, 'request');
    });
    next();
  });
  app.use(express.json({ limit: MAX_BODY, type: ['application/json', 'application/*+json'], verify: captureRawBody }));

  app.use(loginRouter(options.auth));
  const api = express.Router();
  // Every /api request is authenticated first: res.locals.caller is set for every route below.
  api.use(authenticate(options.auth));
  api.use(authRouter(options.auth), tokenRouter(options.auth), clientLogRouter(options.db, logger, manifest));
  api.get('/_openapi', (_req, res) => { res.json(options.openapi); });
  // One delegate and compiled input checker per collection, shared by its routes, its views and
  // parents that write it as nested children.
  const writers = new Map<string, CollectionWriter>();
  for (const d of options.routes) {
    if (d.kind === 'collection') {
      const collection = manifest.collections.find((c) => c.name === d.collection)!;
      writers.set(d.collection, { collection, delegate: d.delegate, checker: compileInputChecker(collection) });
    }
  }
  const writerOf = (name: string): CollectionWriter => writers.get(name)!;
  for (const definition of options.routes) {
    api.use(definition.kind === 'query' ? queryRouter(definition, manifest, options.db) : collectionRouter(definition, manifest, options.db, writerOf));
  }
  api.use(functionRouter({ manifest, logger, ...options.functions }));
  app.use('/api', api);

  app.use((req: Request) => {
    const name = req.path.startsWith('/api/') ? req.path.split('/')[2] : undefined;
    if (name && !req.path.slice(5).includes('/')) {
      throw new HttpError('NOT_FOUND', `no collection, view, query or function is named ${JSON.stringify(decodeURIComponent(name))}`);
    }
    throw new HttpError('NOT_FOUND', `no route ${req.method} ${req.path}`);
  });

  // RFC 6749 error bodies on the OAuth token endpoint.
  app.use('/api/_token', oauthErrors(options.auth));
  // Express recognises the error middleware by its four parameters.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number };
    let error = err;
    if (e?.type === 'entity.parse.failed') error = new HttpError('INVALID_JSON', 'the request body is not valid JSON');
    else if (e?.type === 'entity.too.large') error = new HttpError('PAYLOAD_TOO_LARGE', 'the request body is larger than 10 MiB');
    else if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') error = new HttpError('UNSUPPORTED_MEDIA_TYPE', 'unsupported body encoding');
    const { status, body } = toErrorBody(error);
    if (status >= 500) logger.error({ reqId: res.locals.reqId, err }, 'request failed');
    if (res.headersSent) return;
    res.status(status).json(body);
  });
  return app;
}
