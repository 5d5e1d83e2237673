/**
 * @module Picks the job engine of an app's database (DESIGN §12): Graphile Worker on PostgreSQL, the
 * `_svc_jobs` table on SQLite. Opening an engine connects nothing and starts no runner, so the CLI
 * (`svc jobs list|retry|discard`, DESIGN §3a) opens one, calls its methods and drops it; the server
 * calls `prepare()` and then `start()`.
 */
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import type { JobEngine } from './engine.js';
import { createSqliteEngine } from './sqlite-engine.js';

export type { JobEngine } from './engine.js';

/** Where the engine's storage lives. */
export interface JobEngineSettings {
  /** The database URL `db` was opened on, resolved (env `DATABASE_URL` applied): PostgreSQL's runner opens its own pool on it. */
  databaseUrl: string;
}

/**
 * The engine for `db`'s provider: SQLite → `_svc_jobs`; PostgreSQL → none yet (Graphile Worker lands
 * with its engine), so jobs answer 503 there.
 */
export function openJobEngine(db: Database, _settings: JobEngineSettings, options: { logger?: Logger } = {}): JobEngine | undefined {
  if (db.provider === 'postgresql') return undefined;
  return createSqliteEngine(db, { logger: options.logger });
}
