/**
 * @module The SQLite job engine (DESIGN §12): jobs are rows of `_svc_jobs` in the app's own database
 * (the storage contract of `engine.ts`), so a job added inside a write's transaction commits or rolls
 * back with it. One process serves a SQLite database, so one in-process runner claims due jobs: it
 * polls every `pollIntervalMs` and runs at once on `wake()` (a local commit that may have added one).
 *
 * A claim marks the row locked, clears its key (so a new job with the key can be added while this one
 * runs) and counts the attempt before the handler runs, so a crash mid-run counts as an attempt. A
 * runner renews the locks of the jobs it runs every `HEARTBEAT_MS`; a lock not renewed for
 * `STALE_LOCK_MS` (or `options.staleLockMs`, env `SVC_JOBS_STALE_LOCK_MS`; the heartbeat then runs at a
 * third of it) was held by a process that is gone (kill -9) and is released, so its job runs again.
 * Back-off after the n-th failure: `exp(min(n, 10))` seconds.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Tx } from '../data/database.js';
import type { Logger } from '../log.js';
import { raw, sql, type Sql } from '../query/sql.js';
import type { JobEngine, JobHandler, JobRecord, JobRun, JobSpec, JobState, JobStats, JobTask } from './engine.js';

/** The table of the storage contract (`engine.ts`). */
export const SQLITE_JOBS_DDL = [
  `CREATE TABLE IF NOT EXISTS "_svc_jobs" (
  "id" TEXT PRIMARY KEY,
  "task" TEXT NOT NULL,
  "payload" TEXT NOT NULL,
  "key" TEXT UNIQUE,
  "runAt" INTEGER NOT NULL,
  "attempts" INTEGER NOT NULL DEFAULT 0,
  "maxAttempts" INTEGER NOT NULL DEFAULT 10,
  "lastError" TEXT,
  "lockedAt" INTEGER,
  "lockedBy" TEXT,
  "createdAt" INTEGER NOT NULL
)`,
  `CREATE INDEX IF NOT EXISTS "_svc_jobs_due" ON "_svc_jobs" ("runAt") WHERE "lockedAt" IS NULL`,
];

/** How often a runner renews the locks of its running jobs, in ms. */
export const HEARTBEAT_MS = 10_000;
/** A lock older than this (not renewed) belongs to a process that is gone, in ms. */
export const STALE_LOCK_MS = 30_000;

/** Seconds to wait after the `attempts`-th failure (Graphile Worker's rule). */
export const backoffSeconds = (attempts: number): number => Math.exp(Math.min(attempts, 10));

const STATE_OF: Record<JobState, Sql> = {
  pending: raw(`"lockedAt" IS NULL AND "attempts" < "maxAttempts"`),
  running: raw(`"lockedAt" IS NOT NULL`),
  failed: raw(`"lockedAt" IS NULL AND "attempts" >= "maxAttempts"`),
};

/** A row of `_svc_jobs` as a `JobRecord`. */
function recordOf(r: Record<string, unknown>): JobRecord {
  const attempts = Number(r.attempts);
  const maxAttempts = Number(r.maxAttempts);
  let payload: unknown = r.payload;
  try {
    payload = JSON.parse(String(r.payload));
  } catch {
    /* kept as stored */
  }
  return {
    id: String(r.id),
    task: String(r.task) as JobTask,
    payload,
    state: r.lockedAt !== null && r.lockedAt !== undefined ? 'running' : attempts >= maxAttempts ? 'failed' : 'pending',
    key: r.key === null || r.key === undefined ? null : String(r.key),
    runAt: new Date(Number(r.runAt)),
    attempts,
    maxAttempts,
    lastError: r.lastError === null || r.lastError === undefined ? null : String(r.lastError),
    createdAt: new Date(Number(r.createdAt)),
  };
}

/** A thrown value as the one line kept in `lastError` (at most 2,000 characters). */
export function errorLine(err: unknown): string {
  const text = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  return text.length > 2000 ? `${text.slice(0, 1999)}…` : text;
}

/**
 * The engine of one SQLite database.
 * @param db - the app's database (SQLite)
 */
export function createSqliteEngine(db: Database, options: { logger?: Logger; staleLockMs?: number } = {}): JobEngine {
  const staleLockMs = options.staleLockMs ?? STALE_LOCK_MS;
  const heartbeatMs = Math.min(HEARTBEAT_MS, Math.max(50, Math.floor(staleLockMs / 3)));
  const me = randomUUID();
  let handler: JobHandler | undefined;
  let concurrency = 1;
  let running = 0;
  let stopped = false;
  let claiming = false;
  let again = false;
  let poll: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  const controller = new AbortController();
  const inFlight = new Set<Promise<void>>();

  const finish = async (job: JobRun, err: unknown) => {
    if (err === undefined) {
      await db.query(sql`DELETE FROM "_svc_jobs" WHERE "id" = ${job.id}`);
      return;
    }
    const runAt = Date.now() + Math.round(backoffSeconds(job.attempt) * 1000);
    await db.query(
      sql`UPDATE "_svc_jobs" SET "lockedAt" = NULL, "lockedBy" = NULL, "lastError" = ${errorLine(err)}, "runAt" = ${runAt} WHERE "id" = ${job.id}`,
    );
  };

  const runOne = (job: JobRun) => {
    running += 1;
    const done = (async () => {
      let failure: unknown;
      try {
        await handler!(job, controller.signal);
      } catch (err) {
        failure = err ?? new Error('the job failed');
      }
      try {
        await finish(job, failure);
      } catch (err) {
        options.logger?.error({ err, job: job.id }, 'could not record the end of a job');
      }
    })().finally(() => {
      running -= 1;
      inFlight.delete(done);
      tick();
    });
    inFlight.add(done);
  };

  /** Claims as many due jobs as there are free slots and starts them; runs again when asked meanwhile. */
  const tick = () => {
    if (!handler || stopped) return;
    if (claiming) {
      again = true;
      return;
    }
    const free = concurrency - running;
    if (free <= 0) return;
    claiming = true;
    const now = Date.now();
    db.query(
      sql`UPDATE "_svc_jobs" SET "lockedAt" = ${now}, "lockedBy" = ${me}, "key" = NULL, "attempts" = "attempts" + 1
        WHERE "id" IN (SELECT "id" FROM "_svc_jobs" WHERE "lockedAt" IS NULL AND "runAt" <= ${now} AND "attempts" < "maxAttempts" ORDER BY "runAt" LIMIT ${free})
        RETURNING *`,
    ).then(
      (rows) => {
        claiming = false;
        for (const r of rows) {
          const job = recordOf(r);
          runOne({ ...job, attempt: job.attempts });
        }
        if (again || rows.length === free) {
          again = false;
          tick();
        }
      },
      (err) => {
        claiming = false;
        again = false;
        options.logger?.warn({ err }, 'could not claim jobs; trying again at the next poll');
      },
    );
  };

  return {
    kind: 'sqlite',
    async prepare() {
      for (const statement of SQLITE_JOBS_DDL) await db.query(raw(statement));
    },
    async add(spec: JobSpec, tx?: Tx) {
      const id = randomUUID();
      const now = Date.now();
      const runAt = spec.runAt ? spec.runAt.getTime() : now;
      const payload = JSON.stringify(spec.payload);
      const maxAttempts = spec.maxAttempts ?? 10;
      const key = spec.key ?? null;
      const rows = await db.query<{ id: string }>(
        sql`INSERT INTO "_svc_jobs" ("id", "task", "payload", "key", "runAt", "attempts", "maxAttempts", "createdAt")
          VALUES (${id}, ${spec.task}, ${payload}, ${key}, ${runAt}, 0, ${maxAttempts}, ${now})
          ON CONFLICT ("key") DO UPDATE SET "task" = excluded."task", "payload" = excluded."payload", "runAt" = excluded."runAt",
            "maxAttempts" = excluded."maxAttempts", "attempts" = 0, "lastError" = NULL
          RETURNING "id"`,
        tx,
      );
      return { id: String(rows[0]?.id ?? id) };
    },
    start(run, opts) {
      if (handler) return;
      handler = run;
      concurrency = Math.max(1, opts.concurrency);
      // Renew this runner's locks; release those of a process that is gone (they run again).
      const keepAlive = () => {
        const now = Date.now();
        db.query(sql`UPDATE "_svc_jobs" SET "lockedAt" = ${now} WHERE "lockedBy" = ${me} AND "lockedAt" IS NOT NULL`)
          .then(() => db.query(sql`UPDATE "_svc_jobs" SET "lockedAt" = NULL, "lockedBy" = NULL WHERE "lockedAt" < ${now - staleLockMs}`))
          .then(tick, (err) => options.logger?.warn({ err }, 'could not renew or release job locks'));
      };
      keepAlive();
      heartbeat = setInterval(keepAlive, heartbeatMs);
      heartbeat.unref();
      poll = setInterval(tick, Math.max(10, opts.pollIntervalMs));
      poll.unref();
    },
    wake() {
      if (handler && !stopped) setImmediate(tick);
    },
    async stop(graceMs = 10_000) {
      stopped = true;
      if (poll) clearInterval(poll);
      if (heartbeat) clearInterval(heartbeat);
      if (inFlight.size === 0) return;
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((ok) => {
        timer = setTimeout(() => {
          controller.abort(new Error('the server is stopping'));
          ok();
        }, graceMs);
      });
      await Promise.race([Promise.allSettled([...inFlight]), grace]);
      clearTimeout(timer);
      await Promise.allSettled([...inFlight]);
    },
    async list(opts = {}) {
      const limit = Math.min(Math.max(1, Math.trunc(opts.limit ?? 100)), 1000);
      const where = [opts.state ? STATE_OF[opts.state] : raw('1 = 1'), opts.task ? sql`"task" = ${opts.task}` : raw('1 = 1')];
      const rows = await db.query(sql`SELECT * FROM "_svc_jobs" WHERE ${where[0]} AND ${where[1]} ORDER BY "createdAt" DESC, "id" LIMIT ${limit}`);
      return rows.map(recordOf);
    },
    async get(id) {
      const rows = await db.query(sql`SELECT * FROM "_svc_jobs" WHERE "id" = ${id}`);
      return rows.length === 0 ? null : recordOf(rows[0]);
    },
    async retry(target) {
      const now = Date.now();
      const rows =
        'id' in target
          ? await db.query(
              sql`UPDATE "_svc_jobs" SET "runAt" = ${now}, "attempts" = CASE WHEN "attempts" >= "maxAttempts" THEN 0 ELSE "attempts" END
                WHERE "id" = ${target.id} AND "lockedAt" IS NULL RETURNING "id"`,
            )
          : await db.query(sql`UPDATE "_svc_jobs" SET "runAt" = ${now}, "attempts" = 0 WHERE ${STATE_OF.failed} RETURNING "id"`);
      if (rows.length > 0) this.wake();
      return rows.length;
    },
    async discard(id) {
      const rows = await db.query(sql`DELETE FROM "_svc_jobs" WHERE "id" = ${id} AND "lockedAt" IS NULL RETURNING "id"`);
      return rows.length > 0;
    },
    async stats(): Promise<JobStats> {
      const now = Date.now();
      const [r] = await db.query<Record<string, unknown>>(
        sql`SELECT
          COALESCE(SUM(CASE WHEN ${STATE_OF.pending} THEN 1 ELSE 0 END), 0) AS "pending",
          COALESCE(SUM(CASE WHEN ${STATE_OF.running} THEN 1 ELSE 0 END), 0) AS "running",
          COALESCE(SUM(CASE WHEN ${STATE_OF.failed} THEN 1 ELSE 0 END), 0) AS "failed",
          MIN(CASE WHEN ${STATE_OF.pending} AND "runAt" <= ${now} THEN "runAt" END) AS "oldest"
          FROM "_svc_jobs"`,
      );
      const oldest = r.oldest === null || r.oldest === undefined ? now : Number(r.oldest);
      return { pending: Number(r.pending), running: Number(r.running), failed: Number(r.failed), oldestPendingSeconds: Math.max(0, (now - oldest) / 1000) };
    },
  };
}
