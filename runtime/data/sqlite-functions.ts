/**
 * @module SQL functions svc registers on every SQLite connection, so that SQLite answers like
 * PostgreSQL where SQLite's built-ins fall short: `svc_lower(text)` is Unicode lower-casing (JS
 * `toLowerCase`, the Unicode default case mapping), the same as PostgreSQL's
 * `lower(x COLLATE "und-x-icu")`. SQLite's own `lower()` only maps ASCII.
 */
import type { Database as SqliteDatabase } from 'better-sqlite3';

/** Registers svc's functions on a better-sqlite3 connection (idempotent per connection). */
export function registerSqliteFunctions(db: SqliteDatabase): void {
  db.function('svc_lower', { deterministic: true }, (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value) as string | null);
}
