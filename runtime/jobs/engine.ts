/**
 * @module The jobs seam (DESIGN §12): what the rest of the runtime calls to add, run and manage
 * background jobs: trigger events, scheduled runs and `ctx.jobs.enqueue` calls. Two engines
 * implement it: Graphile Worker on PostgreSQL (`graphile-engine.ts`) and a `_svc_jobs` table with an
 * in-process runner on SQLite (`sqlite-engine.ts`).
 *
 * Storage contract (trigger capture writes jobs from SQL, inside the writing statement's transaction,
 * so both engines keep these exact shapes):
 * - Task identifiers: `svc_trigger` (payload `TriggerJobPayload`), `svc_function` (payload
 *   `FunctionJobPayload`), `svc_schedule` (payload `ScheduleJobPayload`).
 * - PostgreSQL: `graphile_worker.add_job(identifier, payload::json, max_attempts => n, run_at => t,
 *   job_key => k)` (Graphile Worker's own schema `graphile_worker`).
 * - SQLite: table `_svc_jobs` in the app's database:
 *   ```sql
 *   CREATE TABLE IF NOT EXISTS "_svc_jobs" (
 *     "id" TEXT PRIMARY KEY,            -- lower-case hex or uuid text, unique
 *     "task" TEXT NOT NULL,             -- svc_trigger | svc_function | svc_schedule
 *     "payload" TEXT NOT NULL,          -- JSON
 *     "key" TEXT UNIQUE,                -- job key: a pending job with the same key is replaced
 *     "runAt" INTEGER NOT NULL,         -- epoch ms; due when <= now
 *     "attempts" INTEGER NOT NULL DEFAULT 0,
 *     "maxAttempts" INTEGER NOT NULL DEFAULT 10,
 *     "lastError" TEXT,
 *     "lockedAt" INTEGER,               -- epoch ms while a runner holds it; NULL otherwise
 *     "lockedBy" TEXT,
 *     "createdAt" INTEGER NOT NULL      -- epoch ms
 *   );
 *   ```
 *   A SQL trigger inserts `(lower(hex(randomblob(16))), 'svc_trigger', json_object(...),
 *   NULL, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 0, <maxAttempts>, NULL, NULL,
 *   NULL, <same as runAt>)`.
 * - Back-off after the n-th failed attempt: `exp(min(n, 10))` seconds (Graphile Worker's own rule;
 *   the SQLite engine uses the same). After `maxAttempts` failures a job is kept as failed.
 */
import type { Tx } from '../data/database.js';
import type { TriggerOperation } from '../contract/manifest.js';

/** The task identifiers both engines store (see the module comment). */
export const JOB_TASKS = ['svc_trigger', 'svc_function', 'svc_schedule'] as const;
export type JobTask = (typeof JOB_TASKS)[number];

/**
 * A trigger event as captured by the database (`svc_trigger` payload). `before`/`after` are the raw
 * row as the database stored it (column → value, PostgreSQL `to_jsonb`, SQLite `json_object`); the
 * runner decodes them into the API's shape before handing them on (DESIGN §12 "the event").
 */
export interface TriggerJobPayload {
  trigger: string;
  event: {
    /** Stays the same across attempts: the idempotency key. */
    id: string;
    op: TriggerOperation;
    collection: string;
    rowId: string;
    before: Record<string, unknown> | null;
    after: Record<string, unknown> | null;
    /** ISO 8601 time of the change. */
    at: string;
    callerId: string | null;
  };
  /** 0 for a change a request made; n + 1 for one made by a function run by an event of depth n (DESIGN §12 loops). */
  depth?: number;
}

/** `ctx.jobs.enqueue(function, payload)` (`svc_function` payload). */
export interface FunctionJobPayload {
  function: string;
  payload: unknown;
  /** Who enqueued it (the calling function's caller), kept for the run's `ctx.me`-free app context. */
  callerId: string | null;
  /** Enqueued by a function a trigger ran: that event's depth, so writes of this run count one deeper. */
  depth?: number;
}

/** One tick of a function's `schedule` (`svc_schedule` payload). */
export interface ScheduleJobPayload {
  function: string;
  /** ISO 8601 time of the tick. */
  tick: string;
}

/** What to add. */
export interface JobSpec {
  task: JobTask;
  payload: TriggerJobPayload | FunctionJobPayload | ScheduleJobPayload;
  /** Not before this time; default now. */
  runAt?: Date;
  /** A pending job with this key is replaced (its payload and runAt); a running one is left alone. */
  key?: string;
  /** Default 10. */
  maxAttempts?: number;
}

/** `pending`: waiting or due; `running`: held by a runner; `failed`: out of attempts, kept. */
export type JobState = 'pending' | 'running' | 'failed';

/** A job as listed (`svc jobs list`, `GET /api/_admin/jobs`). */
export interface JobRecord {
  id: string;
  task: JobTask;
  payload: unknown;
  state: JobState;
  key: string | null;
  runAt: Date;
  /** Attempts made so far. */
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  createdAt: Date;
}

/** One run of a job: its record with `attempts` already counting this run (1 for the first). */
export type JobRun = JobRecord & { attempt: number };

/**
 * Runs one job. Resolving completes it (the job is removed); throwing fails this attempt (retried
 * after the back-off, or kept as failed after `maxAttempts`). `signal` aborts when the engine stops.
 */
export type JobHandler = (job: JobRun, signal: AbortSignal) => Promise<void>;

/** Counts for metrics (`svc_jobs_pending`, `svc_jobs_oldest_pending_seconds`) and the console. */
export interface JobStats {
  pending: number;
  running: number;
  failed: number;
  /** Age of the oldest due pending job, in seconds; 0 when none is due. */
  oldestPendingSeconds: number;
}

/** The engine of one app's database. */
export interface JobEngine {
  readonly kind: 'sqlite' | 'graphile';
  /** Installs the engine's storage (table or schema); idempotent, safe on every start and from several instances at once. */
  prepare(): Promise<void>;
  /**
   * Adds a job; inside `tx` when given, so it is durable exactly when the transaction commits.
   * @returns the job's id
   */
  add(spec: JobSpec, tx?: Tx): Promise<{ id: string }>;
  /** Starts running due jobs with `handler`, at most `concurrency` at once. Idempotent. */
  start(handler: JobHandler, options: { concurrency: number; pollIntervalMs: number }): void;
  /**
   * Hint that a job may have been added by this process's last commit (capture triggers do not notify):
   * SQLite runs it now instead of at the next poll; PostgreSQL sends one NOTIFY to every runner.
   */
  wake(): void;
  /** Stops taking jobs, aborts nothing that is running until `graceMs` passed, then resolves. */
  stop(graceMs?: number): Promise<void>;
  /** Jobs, newest first; `state` filters; `limit` default 100, at most 1000. */
  list(options?: { state?: JobState; limit?: number; task?: JobTask }): Promise<JobRecord[]>;
  get(id: string): Promise<JobRecord | null>;
  /** Makes failed jobs (one id, or every failed job) due now with attempts reset. @returns how many */
  retry(target: { id: string } | { failed: true }): Promise<number>;
  /** Removes a pending or failed job (not a running one). @returns whether one was removed */
  discard(id: string): Promise<boolean>;
  stats(): Promise<JobStats>;
}
