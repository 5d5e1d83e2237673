/**
 * @module Placeholder for the SQLite job engine (DESIGN §12), built in the `jobsrun` branch; the merge
 * replaces this file. Kept here only so `index.ts` compiles with the final signature.
 */
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import type { JobEngine } from './engine.js';

/**
 * The SQLite engine (`_svc_jobs` table and an in-process runner).
 * @throws always, in this branch: not built yet
 */
export function createSqliteEngine(db: Database, options: { logger?: Logger } = {}): JobEngine {
  void db;
  void options;
  throw new Error('the SQLite job engine is not built yet');
}
