/**
 * @module The PostgreSQL job engine (DESIGN §12): Graphile Worker 0.17 in its own `graphile_worker`
 * schema. Its migrations install the schema (`prepare`), `graphile_worker.add_job` adds a job inside
 * svc's own transaction (so the job commits or rolls back with the write), and its runner (`run()`)
 * takes due jobs with LISTEN/NOTIFY and `SKIP LOCKED`, retries with its `exp(min(n,10))` s back-off
 * and keeps jobs that ran out of attempts. Listing, stats, retry and discard read and call the
 * schema through svc's `Database`, so the CLI (`svc jobs`) uses them without starting a runner.
 *
 * Graphile 0.17's tables: `_private_jobs` (payload, attempts, max_attempts, last_error, locked_at,
 * key, run_at, created_at) and `_private_tasks` (identifier); the `jobs` view lacks the payload, so
 * reads join the private tables. State: failed = not locked and attempts >= max_attempts; running =
 * locked; else pending.
 */
import type { Logger } from '../log.js';
import type { Database, Tx } from '../data/database.js';
import { andAll, raw, sql, type Sql } from '../query/sql.js';
import type { GraphileRunner, GraphileTuning } from './graphile-runner.js';
import { JOB_TASKS, type JobEngine, type JobHandler, type JobRecord, type JobSpec, type JobState, type JobStats, type JobTask } from './engine.js';

/** Options of `createGraphileEngine`. */
export interface GraphileEngineOptions {
  /** svc's database (PostgreSQL): `add` without a transaction, list, get, stats, retry, discard. */
  db: Database;
  /** The same database's URL: Graphile's migrations and its runner open their own small pool on it. */
  connectionString: string;
  /** Graphile's errors and warnings go here (warn and above); its info lines at debug. */
  logger?: Logger;
  /**
   * Graphile throughput settings (see bench/jobs.mjs and its README section): `localQueueSize` > 1
   * locks that many due jobs per fetch (0 or 1: each worker fetches its own);
   * `completeJobBatchDelayMs`/`failJobBatchDelayMs` wait that long to write completions and failures
   * in one statement (-1: one statement per job, not awaited by shutdown). Defaults: a local queue of
   * 5 × concurrency (10..100) and 10 ms batches — about 4× Graphile's own defaults on 2 cores. The
   * cost: jobs waiting in a runner's local queue are locked, so they list as running, a key added
   * meanwhile adds a second job, and a killed process leaves them locked until another runner's
   * liveness sweep hands them back (`staleLockMs`; Graphile alone would wait 4 hours).
   */
  tuning?: GraphileTuning;
  /** How long a job may stay locked before its runner is checked for life, in ms (default 30 000; `graphile-liveness.ts`). */
  staleLockMs?: number;
}

const SCHEMA = 'graphile_worker';
/** Only svc's own tasks are listed and managed (an app's database might hold other Graphile jobs). */
const OUR_TASKS = [...JOB_TASKS];
/** Missing schema (3F000) or table (42P01): nothing was installed yet, so there are no jobs. */
const NOT_INSTALLED = new Set(['3F000', '42P01']);
/** Least time between two wake-up NOTIFYs of one process, in ms. */
const WAKE_GAP_MS = 3;
/** Key of the advisory lock that serialises `prepare()` across instances. */
const PREPARE_LOCK = 0x5f6a6f6273; // "_jobs"

interface JobRow {
  id: string;
  task: JobTask;
  payload: unknown;
  key: string | null;
  run_at: Date;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  locked_at: Date | null;
  created_at: Date;
}

const STATE_SQL: Record<JobState, Sql> = {
  pending: raw('j.locked_at IS NULL AND j.attempts < j.max_attempts'),
  running: raw('j.locked_at IS NOT NULL'),
  failed: raw('j.locked_at IS NULL AND j.attempts >= j.max_attempts'),
};

const FROM_JOBS = raw(`FROM ${SCHEMA}._private_jobs j JOIN ${SCHEMA}._private_tasks t ON t.id = j.task_id`);
const SELECT_JOBS = sql`SELECT j.id, t.identifier AS task, j.payload, j.key, j.run_at, j.attempts, j.max_attempts, j.last_error, j.locked_at, j.created_at ${FROM_JOBS}`;

function stateOf(row: { locked_at: Date | null; attempts: number; max_attempts: number }): JobState {
  if (row.locked_at) return 'running';
  return row.attempts >= row.max_attempts ? 'failed' : 'pending';
}

function toRecord(row: JobRow): JobRecord {
  return {
    id: String(row.id),
    task: row.task,
    payload: row.payload,
    state: stateOf(row),
    key: row.key ?? null,
    runAt: new Date(row.run_at),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastError: row.last_error ?? null,
    createdAt: new Date(row.created_at),
  };
}

/** Graphile Worker and its runner load on first use (≈ 200 ms of start-up an SQLite app or the CLI's listing does not pay). */
const loadGraphile = () => import('./graphile-runner.js');

/** True for a job id Graphile could hold (digits, at most 18: always within bigint); anything else matches no job. */
const isJobId = (id: string) => /^[1-9][0-9]{0,17}$/.test(id);

/**
 * The Graphile Worker engine of one PostgreSQL app database (see the module comment).
 * Nothing connects until a method is called; `start` opens the runner's own pool
 * (`concurrency + 2` connections) and `stop` closes it.
 */
export function createGraphileEngine(options: GraphileEngineOptions): JobEngine {
  const { db, connectionString, logger } = options;
  let runner: Promise<GraphileRunner> | null = null;

  /** Runs a read that finds nothing before `prepare()` ever ran. */
  async function read<T>(statement: Sql): Promise<T[]> {
    try {
      return await db.query<T>(statement);
    } catch (err) {
      if (NOT_INSTALLED.has((err as { code?: string }).code ?? '')) return [];
      throw err;
    }
  }

  /** Tells idle runners (this and other instances) that `count` jobs became due now. */
  const nudge = (count: number) => db.query(sql`SELECT pg_notify('jobs:insert', json_build_object('count', ${count}::int)::text)`);
  let waking = false;
  let wakeAgain = false;
  /**
   * After a commit whose capture triggers may have added jobs (they do not notify; `add_job` does): one
   * NOTIFY at a time, outside any transaction, and one more {@link WAKE_GAP_MS} after it when wakes came
   * meanwhile (a NOTIFY is itself a commit PostgreSQL serialises; under load one per gap wakes enough).
   */
  const wake = (): void => {
    if (waking) {
      wakeAgain = true;
      return;
    }
    waking = true;
    void nudge(1)
      .catch((err: Error) => logger?.debug({ err: err.message, scope: 'jobs' }, 'could not notify the job runners; they poll'))
      .then(() => new Promise((gap) => setTimeout(gap, WAKE_GAP_MS)))
      .finally(() => {
        waking = false;
        if (wakeAgain) {
          wakeAgain = false;
          wake();
        }
      });
  };

  return {
    kind: 'graphile',

    async prepare() {
      // Graphile tolerates a concurrent first install but not concurrent migrations; one at a time.
      await db.transaction(async (tx) => {
        await db.query(sql`SELECT pg_advisory_xact_lock(${PREPARE_LOCK}::bigint)`, tx);
        const { runMigrations, graphileLogger } = await loadGraphile();
        await runMigrations({ connectionString, maxPoolSize: 2, logger: graphileLogger(logger), noHandleSignals: true });
        // The capture triggers (capture.ts) insert jobs by task id: the tasks must exist.
        await db.query(sql`INSERT INTO graphile_worker._private_tasks (identifier) SELECT unnest(${OUR_TASKS}::text[]) ON CONFLICT DO NOTHING`, tx);
      });
    },

    async add(spec: JobSpec, tx?: Tx) {
      const rows = await db.query<{ id: string }>(
        sql`SELECT (graphile_worker.add_job(${spec.task}::text, ${JSON.stringify(spec.payload)}::json,
          run_at => ${spec.runAt ?? null}::timestamptz, max_attempts => ${spec.maxAttempts ?? 10}::int,
          job_key => ${spec.key ?? null}::text)).id`,
        tx,
      );
      return { id: String(rows[0].id) };
    },

    start(handler: JobHandler, { concurrency, pollIntervalMs }) {
      runner ??= loadGraphile().then(({ startGraphileRunner }) =>
        startGraphileRunner(handler, {
          connectionString,
          concurrency,
          pollIntervalMs,
          logger,
          tuning: options.tuning,
          staleLockMs: options.staleLockMs,
          toRecord: (job) => toRecord({ ...job, task: job.task_identifier } as unknown as JobRow),
        }),
      );
    },

    wake,

    async stop(graceMs = 10_000) {
      const stopping = runner;
      runner = null;
      await (await stopping)?.stop(graceMs);
    },

    async list(opts = {}) {
      const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 100), 1), 1000);
      const where: Sql[] = [sql`t.identifier = ANY(${opts.task ? [opts.task] : OUR_TASKS}::text[])`];
      if (opts.state) where.push(STATE_SQL[opts.state]);
      const rows = await read<JobRow>(sql`${SELECT_JOBS} WHERE true${andAll(where)} ORDER BY j.id DESC LIMIT ${limit}`);
      return rows.map(toRecord);
    },

    async get(id: string) {
      if (!isJobId(id)) return null;
      const rows = await read<JobRow>(sql`${SELECT_JOBS} WHERE j.id = ${id}::bigint AND t.identifier = ANY(${OUR_TASKS}::text[])`);
      return rows[0] ? toRecord(rows[0]) : null;
    },

    async retry(target) {
      const which = 'id' in target ? (isJobId(target.id) ? sql`j.id = ${target.id}::bigint AND ${STATE_SQL.failed}` : null) : STATE_SQL.failed;
      if (!which) return 0;
      const rows = await read<{ n: string }>(
        sql`SELECT count(*) AS n FROM graphile_worker.reschedule_jobs(
          ARRAY(SELECT j.id ${FROM_JOBS} WHERE t.identifier = ANY(${OUR_TASKS}::text[]) AND ${which}),
          run_at => now(), attempts => 0)`,
      );
      const n = Number(rows[0]?.n ?? 0);
      if (n > 0) await nudge(n);
      return n;
    },

    async discard(id: string) {
      if (!isJobId(id)) return false;
      const rows = await read<{ id: string }>(
        sql`SELECT id FROM graphile_worker.complete_jobs(ARRAY(SELECT j.id ${FROM_JOBS} WHERE j.id = ${id}::bigint AND t.identifier = ANY(${OUR_TASKS}::text[])))`,
      );
      return rows.length > 0;
    },

    async stats(): Promise<JobStats> {
      const rows = await read<{ pending: string; running: string; failed: string; oldest: string | null }>(
        sql`SELECT count(*) FILTER (WHERE ${STATE_SQL.pending}) AS pending,
                   count(*) FILTER (WHERE ${STATE_SQL.running}) AS running,
                   count(*) FILTER (WHERE ${STATE_SQL.failed}) AS failed,
                   extract(epoch FROM now() - min(j.run_at) FILTER (WHERE ${STATE_SQL.pending} AND j.run_at <= now())) AS oldest
            ${FROM_JOBS} WHERE t.identifier = ANY(${OUR_TASKS}::text[])`,
      );
      const row = rows[0];
      return {
        pending: Number(row?.pending ?? 0),
        running: Number(row?.running ?? 0),
        failed: Number(row?.failed ?? 0),
        oldestPendingSeconds: Math.max(0, Number(row?.oldest ?? 0)),
      };
    },
  };
}
