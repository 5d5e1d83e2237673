/**
 * @module The HTTP side of functions (SPEC §4.8, DESIGN §3, §4 "Function details"): addressing per
 * function type, 405 for other methods, access per method, declared inputs checked before the code runs,
 * the context built from the request, the run on a warm worker thread with time and memory limits, the
 * code's `get`/`post`/`patch` answered through `callApi`, its output streamed to the log, and the answer.
 * Type 1 is served at `/api/<name>` (GET, POST) and `/api/_invoke/<name>` (GET, POST); type 2 only at
 * `/api/_invoke/<name>` (GET, POST, PUT, DELETE). A disabled function is not served (404).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AppManifest, FunctionDefinition } from '../manifest.js';
import { MAX_BODY_BYTES } from '../contract/limits.js';
import { HttpError } from '../errors.js';
import type { Logger } from '../log.js';
import { callerOf, requireRole, type Caller } from '../auth/caller.js';
import { validationFailed } from '../data/input.js';
import { compileFunctionInputs, type FunctionInputChecker } from '../functions/input-checker.js';
import type { FunctionCaller, FunctionRequest } from '../functions/context.js';
import type { FunctionJob } from '../functions/protocol.js';
import type { CallApi, CallRealtime } from '../functions/call-api.js';
import { WorkerPool } from '../functions/worker-pool.js';
import { StartupError } from '../load-manifest.js';

export interface FunctionRoutesOptions {
  manifest: AppManifest;
  logger: Logger;
  /** The app's `.svc/` folder (compiled modules are at `<svcDir>/<FunctionDefinition.module>`). */
  svcDir: string;
  /** `secrets.<NAME>` from `SVC_SECRET_<NAME>` (see `secretsFromEnv`). */
  secrets: Record<string, string>;
  pool: WorkerPool;
  /**
   * Answers the code's `get`/`post`/`patch` as the caller (see `CallApi`); its signal aborts when the call
   * ends. The server gives the in-process API client (`apiClientFor`).
   */
  callApi: CallApi;
  /** Answers the code's `rt.join`/`rt.send` with function privileges (the real-time service). */
  callRealtime: CallRealtime;
}

/** A request whose raw JSON body was kept by `captureRawBody`. */
type RawBodyRequest = Request & { rawBody?: Buffer };

/** Largest body a function accepts: 10 MiB, as for JSON. */
const MAX_BODY = MAX_BODY_BYTES;
const HTTP_METHODS = ['GET', 'POST'];
const INVOKE_METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const HIDDEN_HEADERS = new Set(['cookie', 'authorization', 'proxy-authorization']);
/** Reads any non-JSON body as text (a JSON body was already read by `express.json`, which kept the bytes). */
const readOtherBody = express.text({ type: () => true, limit: MAX_BODY });

/** The `verify` hook of `express.json`: keeps the raw bytes so functions get `req.bodyRaw`. */
export function captureRawBody(req: RawBodyRequest, _res: unknown, buf: Buffer): void {
  req.rawBody = buf;
}

/** `SVC_SECRET_<NAME>=value` environment variables as `{ NAME: value }` (DESIGN §3). */
export function secretsFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith('SVC_SECRET_') && key.length > 'SVC_SECRET_'.length && value !== undefined) out[key.slice('SVC_SECRET_'.length)] = value;
  }
  return out;
}

/**
 * Decides whether a caller may use a method of a function: 405 for a method the function's type does not
 * serve, then the access rule of that method (401 anonymous, 403 authenticated; no rule → refused).
 * @throws HttpError METHOD_NOT_ALLOWED (405), UNAUTHORIZED (401), FORBIDDEN (403)
 * Source: SPEC §4.8 rule 1, §7; DESIGN §3 (function types), §4 "Auth details".
 */
export function checkFunctionAccess(f: FunctionDefinition, method: string, caller: Caller): void {
  const methods = f.functionTypeId === 1 ? HTTP_METHODS : INVOKE_METHODS;
  if (!methods.includes(method)) {
    throw new HttpError('METHOD_NOT_ALLOWED', `function ${f.name} answers ${methods.join(', ')}, not ${method}`);
  }
  requireRole(caller, f.access[method], `${method} on function ${f.name}`);
}

/**
 * The router of every enabled function; mount it under `/api`, after `express.json({ verify: captureRawBody })`.
 * @throws StartupError when a compiled module is missing (`svc generate` was not run)
 */
export function functionRouter(options: FunctionRoutesOptions): Router {
  const router = Router();
  const handlers = new Map<string, RequestHandler>();
  for (const f of options.manifest.functions.filter((x) => x.enabled)) {
    const modulePath = join(options.svcDir, f.module);
    if (!existsSync(modulePath)) throw new StartupError(`${modulePath} not found: run \`svc generate\` again`);
    const handler = functionHandler(f, modulePath, compileFunctionInputs(f), options);
    handlers.set(f.name, handler);
    if (f.functionTypeId === 1) router.all(`/${f.name}`, handler);
  }
  router.all('/_invoke/:name', (req, res, next) => {
    const handler = handlers.get(req.params.name);
    if (!handler) throw new HttpError('NOT_FOUND', `no function is named ${JSON.stringify(req.params.name)}`);
    return handler(req, res, next);
  });
  return router;
}

function functionHandler(f: FunctionDefinition, modulePath: string, inputs: FunctionInputChecker, options: FunctionRoutesOptions): RequestHandler {
  const { manifest } = options;
  const readable = [...manifest.collections, ...manifest.views, ...manifest.queries].map((x) => x.name);
  const writable = [...manifest.collections, ...manifest.views].map((x) => x.name);
  return async (req: RawBodyRequest, res: Response) => {
    const method = req.method;
    const caller = callerOf(res);
    checkFunctionAccess(f, method, caller);
    if (!req.rawBody) await new Promise<void>((ok, fail) => readOtherBody(req, res, (err?: unknown) => (err ? fail(err) : ok())));
    const query = { ...(req.query as Record<string, unknown>) };
    const details = inputs.checkQuery(query);
    const isJson = req.rawBody !== undefined;
    const bodyJson: unknown = isJson ? req.body : null;
    if ((method === 'POST' || method === 'PUT') && inputs.hasBody) details.push(...inputs.checkBody(bodyJson));
    if (details.length > 0) throw validationFailed(details);
    const job: FunctionJob = {
      modulePath,
      req: {
        method: method as FunctionRequest['method'],
        headers: visibleHeaders(req),
        query,
        bodyJson,
        bodyRaw: isJson ? req.rawBody!.toString('utf8') : typeof req.body === 'string' ? req.body : '',
      },
      me: meOf(caller),
      api: { name: manifest.name, baseUrl: `${req.protocol}://${req.get('host') ?? 'localhost'}/api` },
      secrets: options.secrets,
      allowFetch: manifest.settings.functions.allowFetch,
      readable,
      writable,
    };
    const reqId = String(res.locals.reqId);
    const outcome = await options.pool.run(job, {
      name: f.name,
      timeoutMs: manifest.settings.functions.timeoutMs,
      callApi: (request, signal) => options.callApi(caller, request, signal, String(res.locals.reqId)),
      callRealtime: options.callRealtime,
      output: (stream, text, capped) => {
        if (capped) options.logger.warn({ reqId, function: f.name, stream }, text);
        else options.logger.info({ reqId, function: f.name, stream }, text.endsWith('\n') ? text.slice(0, -1) : text);
      },
    });
    if (outcome.kind === 'threw') {
      // Logged by the error middleware with the request id; the caller sees only the generic 500 body.
      const err = new Error(`function ${f.name} threw ${outcome.name}: ${outcome.message}`);
      err.stack = outcome.stack ?? err.message;
      throw err;
    }
    if (outcome.validationErrors.length > 0) {
      throw new HttpError(
        'VALIDATION_FAILED',
        `function ${f.name} reported ${outcome.validationErrors.length} validation error${outcome.validationErrors.length > 1 ? 's' : ''}: ${outcome.validationErrors[0].message}`,
        { details: outcome.validationErrors },
      );
    }
    res.status(outcome.status);
    if (outcome.bodyText === undefined) res.end();
    else res.type('application/json').send(outcome.bodyText);
  };
}

function visibleHeaders(req: Request): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HIDDEN_HEADERS.has(k)) out[k] = v;
  return out;
}

function meOf(caller: Caller): FunctionCaller | null {
  return caller.kind === 'anonymous' || caller.id === null ? null : { id: caller.id, username: caller.username, roles: [...caller.roles] };
}
