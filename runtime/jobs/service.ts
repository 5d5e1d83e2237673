/**
 * @module The jobs runtime of one server (DESIGN §12): the engine of the app's database, the runner
 * that takes its due jobs, and `ctx.jobs.enqueue` of function code. A job runs a type-2 function in the
 * function worker pool, with the function's time and memory limits and the app's rights (the caller
 * id of the change or call that made it is kept as `createdBy`); a failure (a throw, a non-2xx
 * answer, a time or memory limit) is retried by the engine with back-off. Each run writes one
 * log-store line (kind `job`), counts in `svc_job_runs_total`/`svc_job_duration_seconds` and is a
 * trace span linked to the request that made it.
 */
import type { Caller } from '../auth/caller.js';
import { compileFunctionInputs } from '../functions/input-checker.js';
import type { ApiReply, JobsRequest } from '../functions/call-api.js';
import type { JobRunContext } from '../functions/protocol.js';
import type { FunctionInvoker } from '../http/function-routes.js';
import type { Logger } from '../log.js';
import type { LogStore } from '../logs/log-store.js';
import type { AppManifest, FunctionDefinition, JobsSettings } from '../manifest.js';
import type { Metrics } from '../metrics/metrics.js';
import { activeTraceparent, inJobSpan } from '../tracing/tracing.js';
import type { FunctionJobPayload, JobEngine, JobRun, ScheduleJobPayload, TriggerJobPayload } from './engine.js';
import { errorLine } from './sqlite-engine.js';
import { deliverTrigger } from './trigger-delivery.js';

/** Longest `delaySeconds` / farthest `runAt` of `ctx.jobs.enqueue`: one year. */
export const MAX_DELAY_SECONDS = 365 * 24 * 3600;
/** Longest job key, in characters. */
export const MAX_KEY_LENGTH = 200;

/**
 * Deepest trigger event delivered (DESIGN §12 loops): a change made by a function a trigger ran is
 * captured one deeper than the event that ran it; an event deeper than this is dropped with a warning.
 */
export const MAX_TRIGGER_DEPTH = 8;

/** What the service needs of the server. */
export interface JobsServiceOptions {
  engine: JobEngine;
  /** The current version's manifest (`svc dev` swaps it). */
  manifest: () => AppManifest;
  /** The current version's function invoker. */
  invokeFunction: FunctionInvoker;
  /** The API's base URL (`http://host:port/api`), for `ctx.api.baseUrl`. */
  baseUrl: () => string;
  logger: Logger;
  logs?: LogStore;
  metrics?: Metrics;
  /** For a webhook's `${env.X}` and `${secrets.Y}` (`SVC_SECRET_Y`) references. */
  env: NodeJS.ProcessEnv;
  /** The webhook client; defaults to the global `fetch`. */
  fetch?: typeof fetch;
}

const bad = (message: string, path: string): ApiReply => ({ status: 400, body: { error: message, code: 'VALIDATION_FAILED', details: [{ path, message }] } });

/**
 * The caller a job runs as: the app's rights, `createdBy` the id of whoever made the job (or null), and
 * for a run a trigger event caused (directly or through `ctx.jobs.enqueue`), that event's depth.
 */
export function jobCaller(callerId: string | null, triggerDepth?: number): Caller {
  const caller: Caller = { kind: 'anonymous', id: callerId, username: null, roles: [], admin: true };
  if (triggerDepth !== undefined) caller.triggerDepth = triggerDepth;
  return caller;
}

/** An enabled type-2 function of `manifest` named `name`, or why there is none. */
function jobFunction(manifest: AppManifest, name: unknown): FunctionDefinition | string {
  if (typeof name !== 'string' || name === '') return 'the function name must be a non-empty string';
  const f = manifest.functions.find((x) => x.name === name);
  if (!f) return `no function is named ${JSON.stringify(name)}`;
  if (!f.enabled) return `function ${name} is disabled`;
  if (f.functionTypeId !== 2) return `function ${name} is of type 1; jobs run type-2 functions (functionTypeId 2)`;
  return f;
}

export class JobsService {
  private started = false;

  constructor(private readonly options: JobsServiceOptions) {}

  get engine(): JobEngine {
    return this.options.engine;
  }

  /** Starts the runner (DESIGN §12 `jobs`): unless `jobs.run` is false, with `concurrency` (default `poolSize`) at once. */
  start(settings: JobsSettings | undefined, poolSize: number): void {
    if (settings?.run === false || this.started) return;
    this.started = true;
    this.options.engine.start((job, signal) => this.run(job, signal), {
      concurrency: settings?.concurrency ?? poolSize,
      pollIntervalMs: settings?.pollIntervalMs ?? 1000,
    });
  }

  /**
   * `ctx.jobs.enqueue` of function code, for `caller`.
   * @returns 200 `{ id }`; 400 naming the bad argument; 404 for an unknown function
   */
  async enqueue(request: JobsRequest, caller: Caller): Promise<ApiReply> {
    const f = jobFunction(this.options.manifest(), request?.function);
    if (typeof f === 'string') return f.startsWith('no function') ? { status: 404, body: { error: f, code: 'NOT_FOUND' } } : bad(f, '/function');
    const options = request.options ?? {};
    if (typeof options !== 'object' || Array.isArray(options)) return bad('the options must be an object', '/options');
    const { runAt, delaySeconds, key, maxAttempts } = options;
    if (runAt !== undefined && delaySeconds !== undefined) return bad('give runAt or delaySeconds, not both', '/options');
    let at: Date | undefined;
    if (runAt !== undefined) {
      at = new Date(typeof runAt === 'string' ? runAt : NaN);
      if (isNaN(at.getTime())) return bad('runAt must be a date-time (ISO 8601) or a Date', '/options/runAt');
      if (at.getTime() > Date.now() + MAX_DELAY_SECONDS * 1000) return bad('runAt may be at most one year ahead', '/options/runAt');
    }
    if (delaySeconds !== undefined) {
      if (typeof delaySeconds !== 'number' || !Number.isFinite(delaySeconds) || delaySeconds < 0 || delaySeconds > MAX_DELAY_SECONDS)
        return bad(`delaySeconds must be a number from 0 to ${MAX_DELAY_SECONDS}`, '/options/delaySeconds');
      at = new Date(Date.now() + delaySeconds * 1000);
    }
    if (key !== undefined && (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH))
      return bad(`key must be a string of 1 to ${MAX_KEY_LENGTH} characters`, '/options/key');
    if (maxAttempts !== undefined && (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 100))
      return bad('maxAttempts must be an integer from 1 to 100', '/options/maxAttempts');
    const details = f.requestBody.length > 0 ? compileFunctionInputs(f).checkBody(request.payload) : [];
    if (details.length > 0)
      return {
        status: 400,
        body: { error: `the payload does not fit function ${f.name}'s requestBody: ${details[0].message}`, code: 'VALIDATION_FAILED', details },
      };
    const payload: FunctionJobPayload & { traceparent?: string } = { function: f.name, payload: request.payload ?? null, callerId: caller.id };
    if (caller.triggerDepth !== undefined) payload.depth = caller.triggerDepth;
    const traceparent = activeTraceparent();
    if (traceparent) payload.traceparent = traceparent;
    const { id } = await this.options.engine.add({ task: 'svc_function', payload, runAt: at, key, maxAttempts });
    this.options.engine.wake();
    return { status: 200, body: { id } };
  }

  /** Runs one job (the engine's handler): a trigger delivery, a scheduled run or an enqueued call. */
  private async run(job: JobRun, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    const payload = (job.payload ?? {}) as Record<string, unknown>;
    const target = typeof payload.trigger === 'string' ? payload.trigger : String(payload.function ?? '');
    let failure: unknown;
    try {
      await inJobSpan(`job ${job.task} ${target}`, { 'svc.job.id': job.id, 'svc.job.attempt': job.attempt }, payload.traceparent as string | undefined, () =>
        this.dispatch(job, signal),
      );
    } catch (err) {
      failure = err;
    }
    const seconds = (performance.now() - started) / 1000;
    const result = failure === undefined ? 'ok' : job.attempt >= job.maxAttempts ? 'dead' : 'failed';
    this.options.metrics?.jobRuns.inc({ result });
    this.options.metrics?.jobDuration.observe(seconds);
    const eventId = (payload.event as { id?: string } | undefined)?.id;
    const message = `${job.task} ${target} attempt ${job.attempt}/${job.maxAttempts}: ${failure === undefined ? 'ok' : `${result}: ${errorLine(failure)}`}`;
    this.options.logs?.record({
      kind: 'job',
      reqId: `job-${job.id}`,
      severity: failure === undefined ? 3 : 2,
      source: target,
      durationMs: Math.round(seconds * 1000),
      message: eventId ? `${message} (event ${eventId})` : message,
    });
    const line = { job: job.id, task: job.task, target, attempt: job.attempt, ...(eventId && { event: eventId }), ms: Math.round(seconds * 1000) };
    if (failure === undefined) this.options.logger.debug(line, 'job done');
    else
      this.options.logger.warn(
        { ...line, err: errorLine(failure) },
        result === 'dead' ? 'job failed for the last time; kept as failed' : 'job failed; retried later',
      );
    if (failure !== undefined) throw failure;
  }

  private async dispatch(job: JobRun, signal: AbortSignal): Promise<void> {
    const run: JobRunContext = { job: { id: job.id, task: job.task, attempt: job.attempt } };
    if (job.task === 'svc_trigger') {
      const p = job.payload as TriggerJobPayload;
      const depth = p.depth ?? 0;
      if (depth > MAX_TRIGGER_DEPTH) {
        this.skipTooDeep(job, p);
        return;
      }
      await deliverTrigger(job, {
        manifest: this.options.manifest(),
        runFunction: (name, input) => this.runFunction(name, { body: input.event, run: { ...run, event: input.event }, callerId: input.callerId, depth }),
        secrets: {},
        env: this.options.env,
        fetch: this.options.fetch,
        signal,
        logger: this.options.logger,
      });
      return;
    }
    if (job.task === 'svc_schedule') {
      const p = job.payload as ScheduleJobPayload;
      await this.runFunction(p.function, { body: null, run: { ...run, schedule: { tick: p.tick } }, callerId: null });
      return;
    }
    const p = job.payload as FunctionJobPayload;
    await this.runFunction(p.function, { body: p.payload, run, callerId: p.callerId ?? null, depth: p.depth });
  }

  /** An event past {@link MAX_TRIGGER_DEPTH}: not delivered (a loop), said in the log and the log store. */
  private skipTooDeep(job: JobRun, p: TriggerJobPayload): void {
    const message = `trigger ${p.trigger}: event ${p.event.id} (${p.event.op} ${p.event.collection} ${p.event.rowId}) is at depth ${p.depth}, deeper than ${MAX_TRIGGER_DEPTH}: not delivered (a trigger's function keeps changing what fires it; use "changed" or a filter)`;
    this.options.logger.warn({ job: job.id, trigger: p.trigger, event: p.event.id, depth: p.depth }, message);
    this.options.logs?.record({ kind: 'job', reqId: `job-${job.id}`, severity: 2, source: p.trigger, message });
  }

  /**
   * Runs a type-2 function as a job: POST with `body` as its JSON body, the app's rights, `ctx.job` and
   * (for triggers) `ctx.event`. The one hook the trigger delivery calls.
   * @throws Error when the function is gone or not type 2, threw, timed out, went over memory, or answered non-2xx
   */
  async runFunction(name: string, input: { body: unknown; run: JobRunContext; callerId: string | null; depth?: number }): Promise<void> {
    const f = jobFunction(this.options.manifest(), name);
    if (typeof f === 'string') throw new Error(f);
    const bodyRaw = JSON.stringify(input.body ?? null);
    const answer = await this.options.invokeFunction(f.name, {
      method: 'POST',
      caller: jobCaller(input.callerId, input.depth),
      query: {},
      bodyJson: input.body ?? null,
      bodyRaw,
      headers: {},
      baseUrl: this.options.baseUrl(),
      reqId: `job-${input.run.job.id}`,
      run: input.run,
    });
    if (answer.status < 200 || answer.status > 299)
      throw new Error(`function ${f.name} answered ${answer.status}${answer.bodyText ? `: ${answer.bodyText.slice(0, 500)}` : ''}`);
  }
}
