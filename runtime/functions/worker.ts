/**
 * @module The entry of a function worker thread (DESIGN §4 "Function details"). A warm worker runs one
 * invocation at a time, many in its life: it imports each compiled module once, then per call builds
 * the context and calls the default export, or the wrapped script (`__svc_script`, see
 * generator/compile/script-form.ts) with bindings of its own. `get`/`post`/`patch` (and `app.*`, flagged `asApp`) become `api` messages
 * to the main thread. `process.exit`, `process.kill` and `process.abort` throw instead of reaching the
 * server; stdout/stderr (console.*) go to the main thread as `output` messages, capped per call; heap +
 * external memory is reported while a call runs. After a call, the worker reports whether anything
 * (a timer, a socket, an unanswered `get`) is still running, in which case the server retires it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import type { ErrorDetail } from '../errors.js';
import type { AgentRequest, ApiReply, ApiRequest, JobsRequest, RealtimeRequest } from './call-api.js';
import { agentClient, collectionClient, FunctionApiError, FunctionUsageError, realtimeClient } from './collection-client.js';
import type { FunctionContext, FunctionJobs, FunctionMail, FunctionMailMessage, FunctionResponse, TriggerEvent } from './context.js';
import type { MailRequest } from './function-mail.js';
import { MEMORY_REPORT_MS, type FromWorker, type FunctionJob, type FunctionOutcome, type ToWorker, type WireJob, type WorkerSettings } from './protocol.js';

const port = parentPort!;
const settings = workerData as WorkerSettings;
const post = (message: FromWorker): void => port.postMessage(message);
const platformFetch = globalThis.fetch;
/** The running invocation's id (-1 between calls), its output bytes so far, and its unanswered API calls. */
let current = -1;
let outputBytes = 0;
const pending = new Map<number, { ok: (r: ApiReply) => void; fail: (e: Error) => void }>();
let calls = 0;
/** The kept parts of jobs (see `KEPT_PARTS`), as last sent by the server. */
let secrets: Record<string, string> = {};
let readable: string[] = [];
let writable: string[] = [];
/** Imported modules by URL: a warm thread resolves each module once, not per call. */
const modules = new Map<string, { default?: unknown; __svc_script?: unknown }>();
/** What the globals read (see `exposeGlobals`): the running call's context, its global `res`, and what code assigned to them. */
let callContext: Record<string, unknown> = {};
let globalRes: unknown = {};
let assigned: Record<string, unknown> | undefined;
let globalsDefined = false;
/** Reports memory every `MEMORY_REPORT_MS` while calls run; stops at the first tick between calls. */
let reporter: NodeJS.Timeout | undefined;

process.setSourceMapsEnabled(true);
for (const name of ['exit', 'kill', 'abort'] as const) {
  Object.defineProperty(process, name, {
    configurable: false,
    writable: false,
    value: () => {
      throw new FunctionUsageError(`process.${name} is not available to functions: return a response or throw an error instead`);
    },
  });
}
for (const stream of ['stdout', 'stderr'] as const) {
  const target = process[stream];
  target.write = ((chunk: string | Uint8Array, encoding?: unknown, cb?: unknown): boolean => {
    forward(stream, typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    const done = typeof encoding === 'function' ? encoding : cb;
    if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
    return true;
  }) as typeof target.write;
}

/** Sends output of the current call to the server, up to `maxOutputBytes`, then one note. */
function forward(stream: 'stdout' | 'stderr', text: string): void {
  const max = settings.maxOutputBytes;
  if (outputBytes > max) return;
  const bytes = Buffer.from(text, 'utf8');
  if (outputBytes + bytes.length <= max) {
    outputBytes += bytes.length;
    post({ type: 'output', id: current, stream, text });
    return;
  }
  const room = max - outputBytes;
  if (room > 0) post({ type: 'output', id: current, stream, text: bytes.subarray(0, room).toString('utf8') });
  outputBytes = max + 1;
  post({ type: 'output', id: current, stream, capped: true, text: `function output passed ${max} bytes in this call; the rest of it is dropped` });
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'run') {
    const wire: WireJob = message.job;
    secrets = wire.secrets ?? secrets;
    readable = wire.readable ?? readable;
    writable = wire.writable ?? writable;
    // Each call gets its own copy of the secrets: what code does to it does not reach the next call.
    wire.secrets = { ...secrets };
    wire.readable = readable;
    wire.writable = writable;
    void invoke(message.id, wire as FunctionJob);
  } else {
    const waiter = pending.get(message.call);
    pending.delete(message.call);
    if (!waiter) return;
    if ('reply' in message) waiter.ok(message.reply);
    else waiter.fail(new Error(message.error));
  }
});

/**
 * The context fields as globals of the running call: the default-export form may read them (only ctx
 * counts there, SPEC §4.8 rule 4), the script form's bare `res = …` must not throw, and the global
 * `fetch` follows `functions.allowFetch`. Each name is an accessor of the global object, defined at the
 * first call of the thread, that reads the running call's context (`res`: an object of its own); what
 * code assigns to one goes to `assigned`, dropped at the next call, never into the context. Storing the
 * ~18 fields into the global object per call cost more (bench/README.md "Figures of 2026-11-28 (evening)").
 */
function exposeGlobals(ctx: FunctionContext): void {
  callContext = ctx as unknown as Record<string, unknown>;
  globalRes = {};
  assigned = undefined;
  if (globalsDefined) return;
  globalsDefined = true;
  for (const name of Object.keys(ctx)) {
    Object.defineProperty(globalThis, name, {
      configurable: false,
      enumerable: true,
      get: () => (assigned && name in assigned ? assigned[name] : name === 'res' ? globalRes : callContext[name]),
      set: (value: unknown) => {
        (assigned ??= {})[name] = value;
      },
    });
  }
}

/** `fetch` when `functions.allowFetch` is off: throws a clear error (SPEC §8 "External calls from functions"). */
function fetchDisabled(): never {
  throw new FunctionUsageError('fetch is disabled for functions: set "functions": { "allowFetch": true } in svc.json to allow external calls');
}

/** The heap in use plus memory held outside it (Buffers): what `functions.maxMemoryMb` bounds. */
function memoryBytes(): number {
  // v8's own figures, without the resident-set read `process.memoryUsage()` makes on every call.
  const h = getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

function report(): void {
  if (current !== -1) {
    post({ type: 'memory', bytes: memoryBytes() });
    return;
  }
  clearInterval(reporter);
  reporter = undefined;
}

/** The module of a job, imported once per URL (a recompiled module has a new `?v=` URL). */
async function load(job: FunctionJob): Promise<{ default?: unknown; __svc_script?: unknown }> {
  const key = `${job.modulePath}\0${job.moduleVersion ?? 0}`;
  let mod = modules.get(key);
  if (!mod) {
    const url = pathToFileURL(job.modulePath).href + (job.moduleVersion ? `?v=${job.moduleVersion}` : '');
    mod = (await import(url)) as { default?: unknown; __svc_script?: unknown };
    modules.set(key, mod);
  }
  return mod;
}

/**
 * `ctx.jobs` (DESIGN §12): `enqueue(functionName, payload, { runAt?, delaySeconds?, key?, maxAttempts? })`
 * resolves to `{ id }` once the job is stored; a refusal (unknown or type-1 function, a bad payload or
 * option) throws an Error with the server's message.
 */
function jobsClient(send: (request: JobsRequest) => Promise<ApiReply>): FunctionJobs {
  return {
    async enqueue(fn, payload, options = {}) {
      const runAt = options.runAt instanceof Date ? options.runAt.toISOString() : options.runAt;
      const reply = await send({ function: fn, payload: payload === undefined ? null : payload, options: { ...options, runAt } });
      const body = reply.body as { id?: string; error?: string } | null;
      if (reply.status !== 200 || typeof body?.id !== 'string')
        throw new Error(`jobs.enqueue(${JSON.stringify(fn)}): ${body?.error ?? `answered ${reply.status}`}`);
      return { id: body.id };
    },
  };
}

function mailClient(send: (request: MailRequest) => Promise<ApiReply>): FunctionMail {
  return {
    async send(mail) {
      const m = (mail ?? {}) as Partial<FunctionMailMessage>;
      const reply = await send({ to: m.to, subject: m.subject, text: m.text });
      const body = reply.body as { sent?: boolean; error?: string } | null;
      if (reply.status !== 200) throw new Error(`mail.send: ${body?.error ?? `answered ${reply.status}`}`);
      return { sent: body?.sent === true };
    },
  };
}

async function invoke(id: number, job: FunctionJob): Promise<void> {
  current = id;
  outputBytes = 0;
  reporter ??= setInterval(report, MEMORY_REPORT_MS).unref();
  // Runs once the call has yielded to the event loop; a call that ends in microtasks is done by then.
  let finished = false;
  setImmediate(() => {
    if (!finished && current === id) post({ type: 'parked', id });
  });
  const outcome = await run(id, job);
  finished = true;
  // Let work started by the code settle one turn, then see whether any of it is still running.
  await new Promise((turned) => setImmediate(turned));
  const clean = pending.size === 0 && process.getActiveResourcesInfo().every((r) => r === 'MessagePort' || r === 'CloseReq');
  current = -1;
  post({ type: 'done', id, outcome, clean, bytes: memoryBytes() });
}

async function run(id: number, job: FunctionJob): Promise<FunctionOutcome> {
  try {
    const sendAs =
      (asApp: boolean) =>
      (request: ApiRequest): Promise<ApiReply> =>
        new Promise((ok, fail) => {
          const call = ++calls;
          pending.set(call, { ok, fail });
          post({ type: 'api', id, call, request, ...(asApp && { asApp: true as const }) });
        });
    const sendRealtime = (request: RealtimeRequest): Promise<ApiReply> =>
      new Promise((ok, fail) => {
        const call = ++calls;
        pending.set(call, { ok, fail });
        post({ type: 'rt', id, call, request });
      });
    const sendAgent = (request: AgentRequest): Promise<ApiReply> =>
      new Promise((ok, fail) => {
        const call = ++calls;
        pending.set(call, { ok, fail });
        post({ type: 'agent', id, call, request });
      });
    const sendJobs = (request: JobsRequest): Promise<ApiReply> =>
      new Promise((ok, fail) => {
        const call = ++calls;
        pending.set(call, { ok, fail });
        post({ type: 'jobs', id, call, request });
      });
    const sendMail = (request: MailRequest): Promise<ApiReply> =>
      new Promise((ok, fail) => {
        const call = ++calls;
        pending.set(call, { ok, fail });
        post({ type: 'mail', id, call, request });
      });
    const fetch = job.allowFetch ? platformFetch : (fetchDisabled as typeof globalThis.fetch);
    const initialRes: FunctionResponse = {};
    const ctx: FunctionContext = {
      req: job.req,
      res: initialRes,
      me: job.me,
      api: job.api,
      secrets: job.secrets,
      ...collectionClient(job, sendAs(false)),
      app: collectionClient(job, sendAs(true), true),
      fetch,
      validationErrors: [],
      rt: realtimeClient(sendRealtime),
      agent: agentClient(sendAgent),
      jobs: jobsClient(sendJobs),
      mail: mailClient(sendMail),
      job: job.run?.job ?? null,
      event: (job.run?.event as TriggerEvent | undefined) ?? null,
      schedule: job.run?.schedule ?? null,
    };
    exposeGlobals(ctx);
    const mod = await load(job);
    const script = mod.__svc_script ?? (mod.default as { __svc_script?: unknown } | undefined)?.__svc_script;
    if (typeof mod.default === 'function') {
      const returned: unknown = await (mod.default as (c: FunctionContext) => unknown)(ctx);
      const touched = ctx.res !== initialRes || Object.keys(initialRes).length > 0;
      return outcomeOf(touched || returned === undefined ? ctx.res : { status: 200, bodyJson: returned }, ctx.validationErrors);
    }
    if (typeof script === 'function') {
      const ended = await (script as (c: FunctionContext) => Promise<{ res: unknown; validationErrors: unknown }>)(ctx);
      return outcomeOf(ended.res, ended.validationErrors);
    }
    throw new Error(`${job.modulePath} has no default export function and no compiled script: run \`svc generate\` again`);
  } catch (err) {
    const e = err instanceof Error ? err : undefined;
    // A database outage the code did not handle answers as it would on a data route (503/504), not 500;
    // so does a refusal of the caller's own call (`get`/`post`/`patch`, not `app.*`): 400/401/403/404/409.
    const api = err instanceof FunctionApiError ? err : undefined;
    const code = (api?.body as { code?: unknown } | null | undefined)?.code;
    const answer = api && { status: api.status, body: api.body };
    const infrastructure = answer && (code === 'SERVICE_UNAVAILABLE' || code === 'STATEMENT_TIMEOUT') ? answer : undefined;
    const refusal = answer && api.by === 'caller' && CALLER_REFUSALS.has(api.status) ? answer : undefined;
    return {
      kind: 'threw',
      name: e?.name ?? 'Error',
      message: e ? e.message : String(err),
      stack: e?.stack,
      ...(infrastructure && { infrastructure }),
      ...(refusal && { refusal }),
    };
  }
}

/** Statuses of the caller's own API calls that an uncaught `FunctionApiError` answers as they are (issue 31 §2; DESIGN §4 "Auth details": 401 anonymous, 403 authenticated). */
const CALLER_REFUSALS = new Set([400, 401, 403, 404, 409]);

/** The response to send; throws (→ 500) when `res.status` is not a usable HTTP status or the body is not JSON. */
function outcomeOf(res: unknown, errors: unknown): FunctionOutcome {
  const r = (typeof res === 'object' && res !== null ? res : {}) as FunctionResponse;
  const status = r.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new FunctionUsageError(`res.status must be an integer from 200 to 599 (got ${JSON.stringify(status)})`);
  }
  const bodyText = r.bodyJson === undefined ? undefined : JSON.stringify(r.bodyJson);
  return { kind: 'done', status, ...(bodyText !== undefined && { bodyText }), validationErrors: detailsOf(errors) };
}

/** `validationErrors` entries as error details: a string → `{ path: '', message }`. */
function detailsOf(errors: unknown): ErrorDetail[] {
  if (!Array.isArray(errors)) return [];
  return errors.map((e: unknown): ErrorDetail => {
    if (typeof e === 'object' && e !== null && 'message' in e) {
      const { path, message } = e as { path?: unknown; message: unknown };
      return { path: typeof path === 'string' ? path : '', message: String(message) };
    }
    return { path: '', message: String(e) };
  });
}
