/**
 * @module The HTTP side of functions (SPEC §4.8, DESIGN §3, §4 "Function details"): addressing per
 * function type, 405 for other methods, access per method, declared inputs checked before the code runs,
 * the context built from the request, the run on a warm worker thread with time and memory limits, the
 * code's `get`/`post`/`patch` answered through `callApi`, its output streamed to the log, and the answer.
 * Type 1 is served at `/api/<name>` (GET, POST) and `/api/_invoke/<name>` (GET, POST); type 2 only at
 * `/api/_invoke/<name>` (GET, POST, PUT, DELETE). A disabled function is not served (404). The
 * canonical paths are served first by `function-handler.ts` on plain `node:http`, with this module's
 * invoker, access check and body parsers; the Express router here serves every other spelling.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AppManifest, FunctionDefinition } from '../manifest.js';
import { MAX_BODY_BYTES } from '../contract/limits.js';
import { ERROR_STATUS, HttpError, type ErrorCode, type ErrorDetail } from '../errors.js';
import type { LogStore } from '../logs/log-store.js';
import type { Logger } from '../log.js';
import { callerOf, requireRole, type Caller } from '../auth/caller.js';
import { validationFailed } from '../data/input.js';
import { compileFunctionInputs, type FunctionInputChecker } from '../functions/input-checker.js';
import type { FunctionCaller, FunctionRequest } from '../functions/context.js';
import type { FunctionJob, JobRunContext } from '../functions/protocol.js';
import type { ApiReply, CallAgent, CallApi, CallRealtime, JobsRequest } from '../functions/call-api.js';
import type { MailRequest } from '../functions/function-mail.js';
import { WorkerPool } from '../functions/worker-pool.js';
import { StartupError } from '../load-manifest.js';

export interface FunctionRoutesOptions {
  manifest: AppManifest;
  logger: Logger;
  /** The public origin of a request (`AuthService.publicOrigin`), for the `api.baseUrl` functions see; absent: `http://` + `Host`. */
  publicOrigin?: (req: Request) => string | undefined;
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
  /** Answers the code's `agent.*` calls (the agent service); absent: they answer 503. */
  callAgent?: CallAgent;
  /** Answers the code's `jobs.enqueue` for a caller (the jobs runtime, DESIGN §12); absent: it answers 503. */
  callJobs?: (request: JobsRequest, caller: Caller) => Promise<ApiReply>;
  /** Answers the code's `mail.send` (runtime/functions/function-mail.ts); absent: it answers 503. */
  callMail?: (request: MailRequest) => Promise<ApiReply>;
  /** The log store of DESIGN §9: each output line becomes an entry of kind `function`. */
  logs?: LogStore;
}

/** A request whose raw JSON body was kept by `captureRawBody`. */
type RawBodyRequest = Request & { rawBody?: Buffer };

/** Largest body a function accepts: 10 MiB, as for JSON. */
const MAX_BODY = MAX_BODY_BYTES;
const HTTP_METHODS = ['GET', 'POST'];
const INVOKE_METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const HIDDEN_HEADERS = new Set(['cookie', 'authorization', 'proxy-authorization']);
/** Reads any non-JSON body as text (a JSON body was already read by `functionJsonBody`, which kept the bytes). */
export const functionTextBody = express.text({ type: () => true, limit: MAX_BODY });

/** The `verify` hook of `express.json`: keeps the raw bytes so functions get `req.bodyRaw`. */
export function captureRawBody(req: RawBodyRequest, _res: unknown, buf: Buffer): void {
  req.rawBody = buf;
}

/** The JSON body parser of the function routes (10 MiB, raw bytes kept), in Express and in `function-handler.ts`. */
export const functionJsonBody = express.json({ limit: MAX_BODY, type: ['application/json', 'application/*+json'], verify: captureRawBody });

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

/** One function call from any transport (HTTP here, an agent's tool call): the request as the code will see it. */
export interface FunctionInvocation {
  method: string;
  caller: Caller;
  /** Query parameters as sent (declared ones are coerced and checked here). */
  query: Record<string, unknown>;
  /** The parsed JSON body, or null. */
  bodyJson: unknown;
  bodyRaw: string;
  headers: Record<string, string | string[]>;
  /** The public base URL of the API (`http://host:port/api`). */
  baseUrl: string;
  reqId: string;
  /** Set when the call runs as a background job (DESIGN §12); the caller then has the app's rights. */
  run?: JobRunContext;
}

/** Runs an enabled function by name; the HTTP router and the agent's tools both use it (STYLE §10.15). */
export type FunctionInvoker = (name: string, call: FunctionInvocation) => Promise<{ status: number; bodyText?: string }>;

/**
 * The invoker of every enabled function: access per method, declared inputs, the run on a worker
 * thread, the code's validation errors.
 * @throws HttpError NOT_FOUND (404) for no such function, the errors of `checkFunctionAccess`,
 *   VALIDATION_FAILED (400), FUNCTION_TIMEOUT (504); a plain Error when the code threw (a 500)
 * @throws StartupError when a compiled module is missing (`svc generate` was not run)
 */
export function functionInvoker(options: FunctionRoutesOptions): FunctionInvoker {
  const { manifest } = options;
  const readable = [...manifest.collections, ...manifest.views, ...manifest.queries].map((x) => x.name);
  const writable = [...manifest.collections, ...manifest.views].map((x) => x.name);
  const functions = new Map<string, { f: FunctionDefinition; modulePath: string; inputs: FunctionInputChecker }>();
  for (const f of manifest.functions.filter((x) => x.enabled)) {
    const modulePath = join(options.svcDir, f.module);
    if (!existsSync(modulePath)) throw new StartupError(`${modulePath} not found: run \`svc generate\` again`);
    functions.set(f.name, { f, modulePath, inputs: compileFunctionInputs(f) });
  }
  return async (name, call) => {
    const entry = functions.get(name);
    if (!entry) throw new HttpError('NOT_FOUND', `no function is named ${JSON.stringify(name)}`);
    const { f, modulePath, inputs } = entry;
    const { method, caller } = call;
    checkFunctionAccess(f, method, caller);
    const query = { ...call.query };
    // A job's payload was checked when it was enqueued; a trigger's or a schedule's run has no request body.
    const details = call.run ? [] : inputs.checkQuery(query);
    if (!call.run && (method === 'POST' || method === 'PUT') && inputs.hasBody) details.push(...inputs.checkBody(call.bodyJson));
    if (details.length > 0) throw validationFailed(details);
    const job: FunctionJob = {
      modulePath,
      req: { method: method as FunctionRequest['method'], headers: call.headers, query, bodyJson: call.bodyJson, bodyRaw: call.bodyRaw },
      me: meOf(caller),
      api: { name: manifest.name, baseUrl: call.baseUrl },
      secrets: options.secrets,
      allowFetch: manifest.settings.functions.allowFetch,
      readable,
      writable,
      ...(call.run && { run: call.run }),
    };
    const outcome = await options.pool.run(job, {
      name: f.name,
      timeoutMs: manifest.settings.functions.timeoutMs,
      callApi: (request, signal, asApp) => {
        if (!asApp) return options.callApi(caller, request, signal, call.reqId);
        // `ctx.app` (issue 31 §2, docs/functions.md): the app's rights, `createdBy` still the caller; logged.
        const line = { reqId: call.reqId, function: f.name, method: request.method, path: `/api${request.path}` };
        options.logger.info(line, `function ${f.name} used the app's rights: ${request.method} /api${request.path}`);
        options.logs?.record({
          kind: 'function',
          reqId: call.reqId,
          identityId: caller.id,
          identityKind: caller.kind,
          severity: 3,
          source: f.name,
          message: `app rights: ${request.method} /api${request.path}`,
        });
        return options.callApi(appRights(caller), request, signal, call.reqId);
      },
      callRealtime: options.callRealtime,
      callAgent: options.callAgent,
      callJobs: options.callJobs && ((request) => options.callJobs!(request, caller)),
      callMail:
        options.callMail &&
        (async (request) => {
          const reply = await options.callMail!(request);
          const sent = (reply.body as { sent?: boolean } | null)?.sent === true;
          if (reply.status === 200)
            options.logger.info(
              { reqId: call.reqId, function: f.name, to: request.to },
              `function ${f.name} ${sent ? 'sent a mail' : 'wrote a mail to the log (no mail.smtp)'}`,
            );
          return reply;
        }),
      output: (stream, text, capped) => {
        options.logs?.record({
          kind: 'function',
          reqId: call.reqId,
          identityId: caller.id,
          identityKind: caller.kind,
          severity: stream === 'stderr' || capped ? 2 : 3,
          source: f.name,
          message: text.endsWith('\n') ? text.slice(0, -1) : text,
        });
        if (capped) options.logger.warn({ reqId: call.reqId, function: f.name, stream }, text);
        else options.logger.info({ reqId: call.reqId, function: f.name, stream }, text.endsWith('\n') ? text.slice(0, -1) : text);
      },
    });
    if (outcome.kind === 'threw') {
      // A refusal of the caller's own `get`/`post`/`patch` that the code let through: that status and body.
      if (outcome.refusal) throw refusalOf(outcome.refusal);
      const infra = outcome.infrastructure?.body as { code?: string; error?: string } | undefined;
      if (infra?.code === 'SERVICE_UNAVAILABLE' || infra?.code === 'STATEMENT_TIMEOUT') {
        const headers = infra.code === 'SERVICE_UNAVAILABLE' ? { 'retry-after': '1' } : undefined;
        throw new HttpError(infra.code, String(infra.error ?? 'the database is unavailable'), { headers });
      }
      // Logged by the caller with the request id; the client sees only the generic 500 body.
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
    return { status: outcome.status, bodyText: outcome.bodyText };
  };
}

/**
 * The caller with the app's full rights, for `ctx.app` (issue 31 §2, docs/functions.md): access rules,
 * `_CREATOR` and policies do not apply (the admin bypass of `authorize`), while `id` stays the
 * caller's, so rows it creates get `createdBy` = the caller (null when anonymous). Used only for calls
 * that a function's worker thread marked `asApp`: the in-process API client runs data operations only.
 */
export function appRights(caller: Caller): Caller {
  return { ...caller, admin: true };
}

/**
 * The `HttpError` of a refusal of the caller's own API call that function code did not catch: the
 * same status, code, message and details as the refusal (DESIGN §4 error body).
 */
function refusalOf(refusal: { status: number; body: unknown }): HttpError {
  const body = (typeof refusal.body === 'object' && refusal.body !== null ? refusal.body : {}) as { error?: unknown; code?: unknown; details?: unknown };
  const code = (typeof body.code === 'string' && body.code in ERROR_STATUS ? body.code : 'INTERNAL') as ErrorCode;
  const details = Array.isArray(body.details) ? (body.details as ErrorDetail[]) : undefined;
  return new HttpError(code, typeof body.error === 'string' ? body.error : `the API answered ${refusal.status}`, { status: refusal.status, details });
}

/**
 * The router of every enabled function; mount it under `/api`, after `express.json({ verify: captureRawBody })`.
 * @throws StartupError when a compiled module is missing (`svc generate` was not run)
 */
export function functionRouter(options: FunctionRoutesOptions, invoke: FunctionInvoker = functionInvoker(options)): Router {
  const router = Router();
  const handler =
    (name: string): RequestHandler =>
    async (req: RawBodyRequest, res: Response) => {
      // Access is checked before any body is read.
      const f = options.manifest.functions.find((x) => x.name === name && x.enabled);
      if (!f) throw new HttpError('NOT_FOUND', `no function is named ${JSON.stringify(name)}`);
      checkFunctionAccess(f, req.method, callerOf(res));
      if (!req.rawBody) await new Promise<void>((ok, fail) => functionTextBody(req, res, (err?: unknown) => (err ? fail(err) : ok())));
      const isJson = req.rawBody !== undefined;
      const answer = await invoke(name, {
        method: req.method,
        caller: callerOf(res),
        query: req.query as Record<string, unknown>,
        bodyJson: isJson ? (req.body as unknown) : null,
        bodyRaw: isJson ? req.rawBody!.toString('utf8') : typeof req.body === 'string' ? req.body : '',
        headers: visibleHeaders(req),
        baseUrl: `${options.publicOrigin?.(req) ?? `http://${req.get('host') ?? 'localhost'}`}/api`,
        reqId: String(res.locals.reqId),
      });
      res.status(answer.status);
      if (answer.bodyText === undefined) res.end();
      else res.type('application/json').send(answer.bodyText);
    };
  for (const f of options.manifest.functions.filter((x) => x.enabled && x.functionTypeId === 1)) router.all(`/${f.name}`, handler(f.name));
  router.all('/_invoke/:name', (req, res, next) => handler(req.params.name)(req, res, next));
  return router;
}

/** The request headers function code sees (`req.headers`): all but cookies and credentials. */
export function visibleHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HIDDEN_HEADERS.has(k)) out[k] = v;
  return out;
}

function meOf(caller: Caller): FunctionCaller | null {
  return caller.kind === 'anonymous' || caller.id === null ? null : { id: caller.id, username: caller.username, roles: [...caller.roles] };
}
