/**
 * @module Picks the job engine of an app's database (DESIGN §12): Graphile Worker on PostgreSQL, the
 * `_svc_jobs` table on SQLite. Opening an engine connects nothing and starts no runner, so the CLI
 * (`svc jobs list|retry|discard`, DESIGN §3a) opens one, calls its methods and drops it; the server
 * calls `prepare()` and then `start()`.
 */
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import type { JobEngine } from './engine.js';
import { createGraphileEngine } from './graphile-engine.js';
import { createSqliteEngine } from './sqlite-engine.js';

export type { JobEngine } from './engine.js';

/** Where the engine's storage lives. */
export interface JobEngineSettings {
  /** The database URL `db` was opened on, resolved (env `DATABASE_URL` applied): PostgreSQL's runner opens its own pool on it. */
  databaseUrl: string;
  /**
   * How long a job's lock lives before it is checked, in ms (default 30 000; env `SVC_JOBS_STALE_LOCK_MS`):
   * SQLite, a lock without a heartbeat for this long is released; PostgreSQL, a lock this old whose
   * runner's session is gone (`graphile-liveness.ts`).
   */
  staleLockMs?: number;
}

/**
 * The engine for `db`'s provider: PostgreSQL → Graphile Worker, SQLite → `_svc_jobs`.
 * `options.logger`: the engine's own warnings and errors (svc's pino logger).
 */
export function openJobEngine(db: Database, settings: JobEngineSettings, options: { logger?: Logger } = {}): JobEngine {
  if (db.provider === 'postgresql')
    return createGraphileEngine({ db, connectionString: settings.databaseUrl, logger: options.logger, staleLockMs: settings.staleLockMs });
  return createSqliteEngine(db, { logger: options.logger, staleLockMs: settings.staleLockMs });
}
