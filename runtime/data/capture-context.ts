/**
 * @module What the database's capture triggers (DESIGN §12, `runtime/jobs/capture.ts`) read of the
 * writing transaction: the caller's identity id and the trigger depth of the write. A unit of work of an
 * app with triggers sets them as its first statement; they end with the transaction.
 * - PostgreSQL: the transaction-local settings `svc.caller` and `svc.depth` (`set_config(…, true)`),
 *   read with `current_setting('svc.caller', true)`.
 * - SQLite: `svc_set_context(caller, depth)` on the writer connection (`sqlite-functions.ts`), read with
 *   `svc_caller()` and `svc_depth()`; the worker clears it at every BEGIN, COMMIT and ROLLBACK.
 * Also the names svc's SQL triggers share, so a migration can drop them first (SQLite refuses to drop a
 * column a trigger names).
 */
import type { Database as SqliteDatabase } from 'better-sqlite3';
import type { DatabaseProvider } from '../manifest.js';
import { sql, type Sql } from '../query/sql.js';

/** Prefix of every SQL trigger (and, with `fn_`, trigger function) svc installs for its triggers. */
export const TRIGGER_PREFIX = 'svc_trg_';

/** Lists svc's capture triggers of a SQLite database: rows `{ name, tbl }`. */
export const SQLITE_CAPTURE_TRIGGERS = `SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'trigger' AND name LIKE '${TRIGGER_PREFIX}%'`;

/** Who and how deep a write is, as capture triggers record it. */
export interface CaptureContext {
  /** The identity id of the request that writes; null for anonymous. */
  callerId: string | null;
  /** 0 for a write of a request; n + 1 for a write of a function run by an event of depth n. */
  depth: number;
}

/** The statement that sets `context` for the rest of the transaction. */
export function captureContextStatement(provider: DatabaseProvider, context: CaptureContext): Sql {
  const depth = String(context.depth);
  return provider === 'sqlite'
    ? sql`SELECT svc_set_context(${context.callerId}, ${context.depth}) AS "x"`
    : sql`SELECT set_config('svc.caller', ${context.callerId ?? ''}, true) AS "c", set_config('svc.depth', ${depth}, true) AS "d"`;
}

/**
 * Drops every svc capture trigger of a SQLite database (before migrations: `ALTER TABLE … DROP COLUMN`
 * fails while a trigger names the column). The server installs them again after the migrations.
 * @returns the names dropped
 */
export function dropSqliteCaptureTriggers(db: SqliteDatabase): string[] {
  const names = (db.prepare(SQLITE_CAPTURE_TRIGGERS).all() as { name: string }[]).map((r) => r.name);
  for (const name of names) db.exec(`DROP TRIGGER IF EXISTS "${name.replace(/"/g, '""')}"`);
  return names;
}
