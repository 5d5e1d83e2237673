/**
 * @module SQL functions svc registers on every SQLite connection, so that SQLite answers like
 * PostgreSQL where SQLite's built-ins fall short: `svc_lower(text)` is Unicode lower-casing (JS
 * `toLowerCase`, the Unicode default case mapping), the same as PostgreSQL's
 * `lower(x COLLATE "und-x-icu")`. SQLite's own `lower()` only maps ASCII.
 */
import type { Database as SqliteDatabase } from 'better-sqlite3';

/**
 * Registers svc's functions on a better-sqlite3 connection (idempotent per connection).
 * @param stopped - asked on every call: when it answers true the function throws, which ends the
 *   statement calling it with an error (how a worker thread stops a statement past its time limit
 *   without being terminated: `sqlite-lane.ts`)
 */
export function registerSqliteFunctions(db: SqliteDatabase, stopped: () => boolean = () => false): void {
  db.function('svc_lower', { deterministic: true }, (value: unknown) => {
    if (stopped()) throw new Error('the statement was stopped');
    return (typeof value === 'string' ? value.toLowerCase() : value) as string | null;
  });
}
