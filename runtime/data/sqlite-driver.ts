/**
 * @module SQLite `SqlDriver` (interim version: one in-process better-sqlite3 connection; see driver.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Sqlite from 'better-sqlite3';
import type { SqlDriver, SqlRow, SqlTransaction, TransactionOptions } from './driver.js';
import { registerSqliteFunctions } from './sqlite-functions.js';

/** Opens the SQLite file at `path`. */
export async function createSqliteDriver(path: string, _options: { statementTimeoutMs?: number } = {}): Promise<SqlDriver> {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Sqlite(path);
  // Not WAL: the migration engine's exclusive locking mode cannot share a WAL database with a running server.
  db.pragma('journal_mode = DELETE');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  registerSqliteFunctions(db);
  const statements = new Map<string, Sqlite.Statement>();
  const run = async (text: string, values: readonly unknown[]): Promise<SqlRow[]> => {
    let stmt = statements.get(text);
    if (!stmt) {
      stmt = db.prepare(text);
      if (statements.size > 500) statements.clear();
      statements.set(text, stmt);
    }
    if (stmt.reader) return stmt.all(...values) as SqlRow[];
    stmt.run(...values);
    return [];
  };
  let queue: Promise<unknown> = Promise.resolve();
  return {
    provider: 'sqlite',
    query: run,
    transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
      const next = queue.then(async () => {
        db.exec('BEGIN IMMEDIATE');
        try {
          const result = await fn({ query: run });
          opts.signal?.throwIfAborted();
          db.exec('COMMIT');
          return result;
        } catch (err) {
          db.exec('ROLLBACK');
          throw err;
        }
      });
      queue = next.catch(() => {});
      return next;
    },
    async ping() { db.prepare('SELECT 1').get(); },
    async close() { db.close(); },
  };
}
