/**
 * @module SQL functions svc registers on every SQLite connection, so that SQLite answers like
 * PostgreSQL where SQLite's built-ins fall short: `svc_lower(text)` is Unicode lower-casing (JS
 * `toLowerCase`, the Unicode default case mapping), the same as PostgreSQL's
 * `lower(x COLLATE "und-x-icu")`. SQLite's own `lower()` only maps ASCII.
 *
 * And the transaction's capture context (`capture-context.ts`, DESIGN §12): `svc_set_context(caller,
 * depth)` sets it, `svc_caller()` (text or NULL) and `svc_depth()` (integer, 0 when unset) read it.
 * PostgreSQL keeps the same in transaction-local settings.
 */
import type { Database as SqliteDatabase } from 'better-sqlite3';

/** The connection's capture context; the owner clears it when a transaction begins or ends. */
export interface SqliteSessionState {
  clearContext(): void;
}

/**
 * Registers svc's functions on a better-sqlite3 connection (once per connection).
 * @param stopped - asked on every call: when it answers true the function throws, which ends the
 *   statement calling it with an error (how a worker thread stops a statement past its time limit
 *   without being terminated: `sqlite-lane.ts`)
 */
export function registerSqliteFunctions(db: SqliteDatabase, stopped: () => boolean = () => false): SqliteSessionState {
  db.function('svc_lower', { deterministic: true }, (value: unknown) => {
    if (stopped()) throw new Error('the statement was stopped');
    return (typeof value === 'string' ? value.toLowerCase() : value) as string | null;
  });
  let caller: string | null = null;
  let depth = 0;
  db.function('svc_set_context', { deterministic: false, directOnly: true }, (id: unknown, d: unknown) => {
    caller = typeof id === 'string' ? id : null;
    depth = typeof d === 'number' && Number.isInteger(d) ? d : typeof d === 'bigint' ? Number(d) : 0;
    return 1;
  });
  db.function('svc_caller', { deterministic: false }, () => caller);
  db.function('svc_depth', { deterministic: false }, () => depth);
  return {
    clearContext() {
      caller = null;
      depth = 0;
    },
  };
}
