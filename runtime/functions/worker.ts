/**
 * @module The entry of a function worker thread: runs exactly one invocation, then is terminated by the
 * server. It waits for a `FunctionJob`, sets the script-form globals (`req`, `res`, `me`, `api`, `secrets`,
 * `get`, `post`, `patch`, `fetch`, `validationErrors`), imports the compiled module (which runs a script
 * form, top-level `await` included), calls a default export with the context, and posts a
 * `FunctionOutcome`. One thread per invocation keeps concurrent calls apart and lets the server stop
 * a function that overruns, even one stuck in a synchronous loop (SPEC §4.8, DESIGN §4 "Function details").
 */
import { parentPort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { ErrorDetail } from '../errors.js';
import { collectionClient, FunctionUsageError } from './collection-client.js';
import type { FunctionContext, FunctionJob, FunctionOutcome, FunctionResponse } from './context.js';

// A lasting listener keeps the thread alive while the code awaits something that holds no handle of its
// own (`await new Promise(() => {})`): it then runs into the time limit instead of ending the thread early.
const port = parentPort;
let started = false;
port?.on('message', (job: FunctionJob) => {
  if (started) return;
  started = true;
  void run(job).then((outcome) => port.postMessage(outcome));
});

/** `fetch` when `functions.allowFetch` is off: throws a clear error (SPEC §8 "External calls from functions"). */
function fetchDisabled(): never {
  throw new FunctionUsageError('fetch is disabled for functions: set "functions": { "allowFetch": true } in svc.json to allow external calls');
}

async function run(job: FunctionJob): Promise<FunctionOutcome> {
  try {
    const platformFetch = globalThis.fetch;
    const initialRes: FunctionResponse = {};
    const ctx: FunctionContext = {
      req: job.req, res: initialRes, me: job.me, api: job.api, secrets: job.secrets,
      ...collectionClient(job, platformFetch),
      fetch: job.allowFetch ? platformFetch : (fetchDisabled as typeof fetch),
      validationErrors: [],
    };
    // The globals of the script form. A default-export module sees them too, but only ctx counts there.
    const scriptRes: FunctionResponse = {};
    Object.assign(globalThis, { ...ctx, res: scriptRes });
    const mod = (await import(pathToFileURL(job.modulePath).href)) as { default?: unknown };
    let res: unknown;
    let errors: unknown;
    if (typeof mod.default === 'function') {
      const returned: unknown = await (mod.default as (c: FunctionContext) => unknown)(ctx);
      const touched = ctx.res !== initialRes || Object.keys(initialRes).length > 0;
      res = touched || returned === undefined ? ctx.res : { status: 200, bodyJson: returned };
      errors = ctx.validationErrors;
    } else {
      const g = globalThis as unknown as { res: unknown; validationErrors: unknown };
      res = g.res;
      errors = g.validationErrors;
    }
    return outcomeOf(res, errors);
  } catch (err) {
    const e = err instanceof Error ? err : undefined;
    return { kind: 'threw', name: e?.name ?? 'Error', message: e ? e.message : String(err), stack: e?.stack };
  }
}

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
