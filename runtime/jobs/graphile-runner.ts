/**
 * @module The runner half of the PostgreSQL job engine (DESIGN §12): Graphile Worker's `run()` with
 * one task list mapping svc's three task identifiers to the engine's handler, on its own pool of
 * `concurrency + 2` connections, with `noHandleSignals` (svc handles SIGTERM itself). A runner that
 * dies (the database went away at start, a fatal error) is started again after `RESTART_MS`. Loaded
 * on first use by graphile-engine.ts, so Graphile Worker costs nothing to apps that run no jobs on it.
 */
import { Logger as GraphileLogger, run, type Job, type Runner, type TaskList } from 'graphile-worker';
import { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import { DEFAULT_STALE_LOCK_MS, RunnerLiveness } from './graphile-liveness.js';
import { JOB_TASKS, type JobHandler, type JobRecord, type JobTask } from './engine.js';

/** How long a runner that died waits before it starts again, in ms. */
const RESTART_MS = 5000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Graphile's `Logger` writing to svc's pino logger: errors and warnings as warn+, the rest at debug. */
export function graphileLogger(logger: Logger | undefined): GraphileLogger {
  return new GraphileLogger((scope) => (level, message, meta) => {
    if (!logger) return;
    const fields = { scope: 'graphile-worker', ...(scope.taskIdentifier && { task: scope.taskIdentifier }), ...(scope.jobId && { jobId: scope.jobId }) };
    // A failed attempt is the handler's business (the runtime logs each run); Graphile reports it as an error.
    if (level === 'error' && !(meta as { failure?: boolean } | undefined)?.failure) logger.error(fields, message);
    else if (level === 'warning') logger.warn(fields, message);
    else logger.debug(fields, message);
  });
}

export { runMigrations } from 'graphile-worker';

/** Throughput settings; see `GraphileEngineOptions.tuning`. */
export interface GraphileTuning {
  localQueueSize?: number;
  completeJobBatchDelayMs?: number;
  failJobBatchDelayMs?: number;
}

/** Options of `startGraphileRunner`. */
export interface GraphileRunnerOptions {
  connectionString: string;
  concurrency: number;
  pollIntervalMs: number;
  /** svc's logger; Graphile's own lines go to it through `graphileLogger`. */
  logger?: Logger;
  tuning?: GraphileTuning;
  /** The job as the engine lists it (states and dates decoded). */
  toRecord: (job: Job) => JobRecord;
  /** How long a job may stay locked before its runner is checked for life, in ms (`graphile-liveness.ts`). */
  staleLockMs?: number;
}

/** A started runner. */
export interface GraphileRunner {
  /** Graceful shutdown; after `graceMs` the handlers' signal aborts and Graphile fails what still runs. */
  stop(graceMs: number): Promise<void>;
}

/** Starts taking due jobs with `handler` (see the module comment). */
export function startGraphileRunner(handler: JobHandler, options: GraphileRunnerOptions): GraphileRunner {
  const { connectionString, concurrency, pollIntervalMs, logger } = options;
  const controller = new AbortController();
  const task = async (_payload: unknown, helpers: { job: Job }) => {
    const record = options.toRecord(helpers.job);
    await handler({ ...record, state: 'running', attempt: record.attempts }, controller.signal);
  };
  const taskList: TaskList = Object.fromEntries(JOB_TASKS.map((t: JobTask) => [t, task]));
  const { localQueueSize = Math.min(100, Math.max(10, 5 * concurrency)), completeJobBatchDelayMs = 10, failJobBatchDelayMs = 10 } = options.tuning ?? {};
  let wanted = true;
  let current: Promise<Runner | null>;
  // A killed process's locks are handed back by the other runners (and by this one when it starts again).
  const liveness = new RunnerLiveness(connectionString, options.staleLockMs ?? DEFAULT_STALE_LOCK_MS, logger);
  const events = new EventEmitter();
  events.on('pool:create', ({ workerPool }: { workerPool: { id: string } }) => {
    liveness.hold(workerPool.id).catch((err: Error) => logger?.warn({ err: err.message, scope: 'jobs' }, 'could not mark the job runner alive'));
  });
  events.on('pool:release', ({ workerPool }: { workerPool: { id: string } }) => void liveness.release(workerPool.id));
  liveness.start();

  const restartLater = () => {
    if (wanted) void sleep(RESTART_MS).then(() => wanted && launch());
  };
  const launch = () => {
    current = run(
      {
        connectionString,
        maxPoolSize: concurrency + 2,
        concurrency,
        pollInterval: pollIntervalMs,
        noHandleSignals: true,
        logger: graphileLogger(logger),
        events,
        // stop(graceMs) aborts our own signal; Graphile's is left unfired.
        gracefulShutdownAbortTimeout: 2 ** 31 - 1,
        preset: {
          worker: {
            ...(localQueueSize > 1 && { localQueue: { size: localQueueSize } }),
            // Batched completions (even with delay 0) are flushed before shutdown resolves; unbatched ones are not awaited.
            completeJobBatchDelay: completeJobBatchDelayMs,
            failJobBatchDelay: failJobBatchDelayMs,
          },
        },
      },
      taskList,
      [], // no Graphile cron: svc's schedules add their own jobs
    ).then(
      (runner) => {
        runner.promise.then(
          () => {
            if (wanted) logger?.warn({ scope: 'graphile-worker' }, `the job runner stopped; starting it again in ${RESTART_MS} ms`);
            restartLater();
          },
          (err: unknown) => {
            logger?.error({ err, scope: 'graphile-worker' }, `the job runner stopped with an error; starting it again in ${RESTART_MS} ms`);
            restartLater();
          },
        );
        return runner;
      },
      (err: unknown) => {
        logger?.error({ err, scope: 'graphile-worker' }, `the job runner did not start; trying again in ${RESTART_MS} ms`);
        restartLater();
        return null;
      },
    );
  };
  launch();

  return {
    async stop(graceMs) {
      wanted = false;
      try {
        const runner = await current;
        if (!runner) return;
        const stopped = runner.stop().then(
          () => true,
          () => true,
        );
        if (await Promise.race([stopped, sleep(graceMs).then(() => false)])) return;
        controller.abort(new Error('the job engine is stopping'));
        await Promise.race([runner.kill().catch(() => {}), sleep(5000)]);
        await Promise.race([stopped, sleep(1000)]);
      } finally {
        await liveness.close();
      }
    },
  };
}
