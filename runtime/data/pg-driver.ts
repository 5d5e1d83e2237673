/**
 * @module The PostgreSQL `SqlDriver` (driver.ts): our own `pg.Pool`, so that a database restart never
 * crashes the process. Every client has a permanent 'error' listener (idle clients in the pool and
 * checked-out ones), a broken connection is discarded and the next call opens a fresh one — there is
 * no backoff, so service resumes as soon as the server accepts connections again.
 *
 * Every connection runs with `TimeZone=UTC` and `statement_timeout` (startup options). Type parsing is
 * per pool, never the global `pg.types`: `date` stays the text `YYYY-MM-DD`, `numeric` and `int8`
 * stay strings, `timestamptz` becomes a `Date`.
 * Errors: connection-level failures reject with `unavailable(err)`; statement errors reject with the
 * pg error (`code` = SQLSTATE; `57014` = statement timeout). Source: DESIGN §5, issues 9 and 10.
 */
import pg from 'pg';
import { untilAborted } from './abort.js';
import { unavailable, type SqlDriver, type SqlRow, type SqlTransaction, type TransactionOptions } from './driver.js';

/** Options of `createPgDriver`. */
export interface PgDriverOptions {
  /** Per-statement limit, in ms (`statement_timeout`). Default 10000. */
  statementTimeoutMs?: number;
  /** Pool size. Default 10. */
  max?: number;
  /** `application_name` shown in `pg_stat_activity`. */
  applicationName?: string;
  /** How long a call waits for a connection (new or pooled) before it rejects as unavailable, in ms. Default 5000. */
  connectionTimeoutMs?: number;
  /** Told about errors of connections nobody is waiting on (an idle client's server went away). */
  onConnectionError?: (err: Error) => void;
}

const OID = { int8: 20, date: 1082, numeric: 1700, timestamptz: 1184 } as const;
const SQLSTATE_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '53300']);
const ERRNO_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const MESSAGE_UNAVAILABLE =
  /Connection terminated|timeout exceeded when trying to connect|connection error and is not queryable|Client was closed and is not queryable|Connection ended/i;

/** True when `err` means "the connection or the server is gone" rather than "this statement failed". */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (SQLSTATE_UNAVAILABLE.has(code) || ERRNO_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (err instanceof AggregateError && err.errors.some(isConnectionError)) return true;
  return MESSAGE_UNAVAILABLE.test(err.message);
}

function classify(err: unknown): unknown {
  return isConnectionError(err) ? unavailable(err) : err;
}

/** Texts kept prepared at most (per process; each connection prepares those it runs, once). */
const MAX_PREPARED = 200;
/** "cached plan must not change result type": a table a prepared statement reads was altered. */
const PLAN_CHANGED = '0A000';
/** A connection pooler that moves sessions between server connections (PgBouncer in transaction mode). */
const POOLER_LOST_STATEMENT = new Set(['26000', '42P05']);

/**
 * Names of the texts run prepared (`QueryOptions.prepare`), as PostgreSQL named statements: a text is
 * parsed and planned once per connection instead of on every call (a read by id costs PostgreSQL about a
 * third: bench/README.md "Issue 35"). At most `MAX_PREPARED` texts get a name; later ones run unnamed,
 * so texts a client can vary (`select=`) never grow the server's memory without bound. Two failures
 * change course: a plan that no longer fits an altered table (`0A000`, a migration while serving)
 * starts a new generation of names; a statement a pooler lost (`26000`, `42P05`) turns preparing off.
 * Either way the statement runs once more, unnamed (it failed before doing anything).
 */
class PreparedNames {
  private names = new Map<string, string>();
  private generation = 0;
  private off = false;

  /** The name to run `text` under, or undefined to run it unnamed. */
  nameOf(text: string): string | undefined {
    if (this.off) return undefined;
    let name = this.names.get(text);
    if (name === undefined && this.names.size < MAX_PREPARED) this.names.set(text, (name = `svc${this.generation}_${this.names.size}`));
    return name;
  }

  /** Whether `err` of a named statement calls for a retry unnamed; adjusts what comes next. */
  retry(err: unknown): boolean {
    const code = (err as { code?: unknown })?.code;
    if (code === PLAN_CHANGED) {
      this.generation += 1;
      this.names = new Map();
      return true;
    }
    if (typeof code === 'string' && POOLER_LOST_STATEMENT.has(code)) {
      this.off = true;
      return true;
    }
    return false;
  }
}

/**
 * The per-pool type parsers (see the module comment); everything else as pg parses it by default.
 * `timesAsText`: `timestamptz` stays its text too (`2024-01-31 10:00:00.5+00`), for the row codec.
 */
function typeParsers(timesAsText = false): pg.CustomTypesConfig {
  const keep = (value: string) => value;
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      if (oid === OID.date || oid === OID.numeric || oid === OID.int8 || (timesAsText && oid === OID.timestamptz)) return keep;
      return pg.types.getTypeParser(oid, format ?? 'text');
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}
const TIMES_AS_TEXT = typeParsers(true);

/**
 * Opens a pool on `url` (`postgres://` or `postgresql://`). The pool connects lazily: creating the
 * driver never fails because the server is down. `pool` is exposed for Prisma's `PrismaPg` adapter
 * (migrations, system work); it shares the error handling and session settings.
 */
export function createPgDriver(url: string, options: PgDriverOptions = {}): SqlDriver & { pool: pg.Pool } {
  const statementTimeoutMs = options.statementTimeoutMs ?? 10_000;
  const onConnectionError = options.onConnectionError ?? (() => {});
  const broken = new WeakSet<object>();
  const config: pg.PoolConfig = {
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName,
    options: `-c TimeZone=UTC -c statement_timeout=${statementTimeoutMs}`,
    types: typeParsers(),
  };
  const pool = new pg.Pool(config);
  // An idle client whose server went away: pg-pool removes it and emits here.
  pool.on('error', (err) => onConnectionError(err));
  // A checked-out client whose connection breaks between statements emits on the client itself.
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      broken.add(client);
      onConnectionError(err);
    });
  });

  const checkout = async (): Promise<pg.PoolClient> => {
    try {
      return await pool.connect();
    } catch (err) {
      throw unavailable(err);
    }
  };

  const prepared = new PreparedNames();
  /** Runs one statement on `client` (named when `name` is given); a connection failure marks the client broken (discarded on release). */
  const run = async (client: pg.PoolClient, text: string, values?: readonly unknown[], timesAsText = false, name?: string): Promise<SqlRow[]> => {
    try {
      const result = await client.query<SqlRow>({
        text,
        values: values as unknown[] | undefined,
        ...(timesAsText && { types: TIMES_AS_TEXT }),
        ...(name !== undefined && { name }),
      });
      return result.rows;
    } catch (err) {
      if (isConnectionError(err)) broken.add(client);
      if (name !== undefined && !broken.has(client) && prepared.retry(err)) return run(client, text, values, timesAsText);
      throw classify(err);
    }
  };

  const release = (client: pg.PoolClient) => {
    // release(err) destroys the client instead of returning it to the pool.
    if (broken.has(client)) client.release(new Error('connection broken'));
    else client.release();
  };

  return {
    provider: 'postgresql',
    pool,

    async query(text, values, opts) {
      const client = await checkout();
      try {
        return await run(client, text, values, opts?.timesAsText, opts?.prepare ? prepared.nameOf(text) : undefined);
      } finally {
        release(client);
      }
    },

    async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
      const { signal } = opts;
      signal?.throwIfAborted();
      const client = await checkout();
      let open = true;
      try {
        await run(client, 'BEGIN');
        const tx: SqlTransaction = {
          query: async (text, values) => {
            if (!open) throw new Error('the transaction is over');
            signal?.throwIfAborted();
            return run(client, text, values);
          },
        };
        const result = await untilAborted(fn(tx), signal);
        signal?.throwIfAborted();
        open = false; // from here on, a late tx.query from fn is refused
        await run(client, 'COMMIT');
        return result;
      } catch (err) {
        // pg queues statements per client: a ROLLBACK runs after whatever fn still has in flight.
        if (open && !broken.has(client)) {
          open = false;
          await run(client, 'ROLLBACK').catch(() => {});
        }
        throw err;
      } finally {
        open = false;
        release(client);
      }
    },

    async ping() {
      // A connection of its own with a short connect timeout, so a saturated pool does not read as down.
      const client = new pg.Client({ ...config, connectionTimeoutMillis: 2000, query_timeout: 2000 } as pg.ClientConfig);
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
      } catch (err) {
        throw unavailable(err);
      } finally {
        await client.end().catch(() => {});
      }
    },

    async close() {
      await pool.end();
    },
  };
}
