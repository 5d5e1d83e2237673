/**
 * @module PostgreSQL `SqlDriver` over our own `pg.Pool` (interim version; see driver.ts).
 */
import pg from 'pg';
import type { SqlDriver, SqlRow, SqlTransaction, TransactionOptions } from './driver.js';
import { unavailable } from './driver.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03']);

function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return CONNECTION_CODES.has(e?.code ?? '') || (e?.code ?? '').startsWith('08') || /Connection terminated|timeout exceeded when trying to connect/i.test(e?.message ?? '');
}

function mapError(err: unknown): unknown {
  return isConnectionError(err) ? unavailable(err) : err;
}

/** Creates the pool of `url`. */
export function createPgDriver(url: string, options: { statementTimeoutMs?: number; max?: number } = {}): SqlDriver & { pool: pg.Pool } {
  const types = new pg.TypeOverrides();
  types.setTypeParser(1082, (v: string) => v);
  const pool = new pg.Pool({
    connectionString: url, max: options.max ?? 10, types, connectionTimeoutMillis: 5000,
    options: `-c TimeZone=UTC -c statement_timeout=${options.statementTimeoutMs ?? 10_000}`,
  });
  pool.on('error', () => {});
  pool.on('connect', (c) => c.on('error', () => {}));
  const run = async (client: pg.Pool | pg.PoolClient, text: string, values: readonly unknown[]): Promise<SqlRow[]> => {
    try {
      return (await client.query(text, values as unknown[])).rows as SqlRow[];
    } catch (err) {
      throw mapError(err);
    }
  };
  return {
    provider: 'postgresql',
    pool,
    query: (text, values) => run(pool, text, values),
    async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw mapError(err);
      }
      let broken: unknown;
      try {
        await run(client, 'BEGIN', []);
        const result = await fn({ query: (text, values) => run(client, text, values) });
        opts.signal?.throwIfAborted();
        await run(client, 'COMMIT', []);
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: unknown) => { broken = e; });
        if (isConnectionError(err)) broken = err;
        throw err;
      } finally {
        client.release(broken as Error | undefined);
      }
    },
    async ping() { await run(pool, 'SELECT 1', []); },
    close: () => pool.end(),
  };
}
