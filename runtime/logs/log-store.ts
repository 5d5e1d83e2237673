/**
 * @module The log store of the console (DESIGN §9): request log entries, client `_log` entries and
 * function output lines kept in the system table `_svc_logs`. `record` only pushes onto an in-memory
 * buffer (no I/O, never throws), so the request path stays cheap; a timer flushes the buffer every
 * `flushMs` (500 ms: an entry is at most about 1 s late), each batch one INSERT with a single JSON
 * parameter (`json_to_recordset` on PostgreSQL, `json_each` on SQLite). While the database is
 * down the buffer is kept up to `maxBuffer` entries, the oldest dropped beyond that and counted
 * (`dropped`); a failed flush is retried with the next tick. Another timer prunes entries older than
 * `logs.retentionDays` and beyond `logs.maxRows` (newest kept).
 *
 * Callers hand in what may be stored: paths go through `redactPath` first (redact.ts), and no
 * header, token or body is ever recorded.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { sql } from '../query/sql.js';
import { TABLE } from '../auth/store.js';
import { LOGS_DEFAULTS, type LogsSettings } from '../contract/settings.js';

/** What an entry is: a request's line, a client `_log` event, or a line a function printed. */
export type LogKind = 'request' | 'client' | 'function';
export const LOG_KINDS: readonly LogKind[] = ['request', 'client', 'function'];

/** One entry as recorded; every field but `kind` may be absent. */
export interface LogEntry {
  kind: LogKind;
  reqId?: string | null;
  method?: string | null;
  /** The path with its query string, secret values already replaced (`redactPath`). */
  path?: string | null;
  status?: number | null;
  durationMs?: number | null;
  identityId?: string | null;
  identityKind?: string | null;
  /** Client entries: 0 fatal … 5 trace; function lines: 2 (stderr) or 3 (stdout). */
  severity?: number | null;
  /** Function lines: the function's name. */
  source?: string | null;
  message?: string | null;
}

/** Options of `LogStore` (tests shorten the periods). */
export interface LogStoreOptions {
  /** Flush period, ms (default 500). */
  flushMs?: number;
  /** Prune period, ms (default 60,000). */
  pruneMs?: number;
  /** Most entries held while the database does not take them (default 20,000). */
  maxBuffer?: number;
  /** The clock (default `Date.now`). */
  now?: () => number;
}

/** Rows per INSERT statement (one JSON parameter each). */
const ROWS_PER_INSERT = 1000;
/** Longest wait for the last flush when the store closes, ms. */
const CLOSE_WAIT_MS = 2000;
/** Longest stored message, characters. */
const MAX_MESSAGE = 10_000;

interface Pending {
  id: string;
  /** Epoch ms. */
  time: number;
  entry: LogEntry;
}

/**
 * Entry ids: UUIDv7-shaped text that sorts by time and, within this process, by record order (so
 * `maxRows` keeps the newest and `id DESC` pages newest first, next to older uuidv7 ids), made without
 * randomness per entry: the ms time in hex (cached per ms), a process counter, a random process tail.
 */
export class LogIds {
  private readonly tail = randomBytes(6).toString('hex');
  private lastMs = -1;
  private prefix = '';
  private seq = 0;

  /** The next id for an entry recorded at `ms` (epoch ms; never goes back: an earlier clock reuses the last ms). */
  next(ms: number): string {
    if (ms > this.lastMs) {
      this.lastMs = ms;
      const t = ms.toString(16).padStart(12, '0');
      this.prefix = `${t.slice(0, 8)}-${t.slice(8)}-7`;
    }
    const c = (this.seq++ & 0xffffff).toString(16).padStart(6, '0');
    return `${this.prefix}${c.slice(0, 3)}-8${c.slice(3)}-${this.tail}`;
  }
}

export class LogStore {
  private buffer: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private warnedAt = 0;
  private readonly ids = new LogIds();
  private closed = false;
  /** Entries dropped since start because the buffer was full (the database did not take them). */
  dropped = 0;
  readonly settings: LogsSettings;

  constructor(
    private readonly db: Database,
    /** This instance's id (stored on every entry). */
    readonly instance: string,
    settings: LogsSettings | undefined,
    private readonly logger: Logger,
    private readonly options: LogStoreOptions = {},
  ) {
    this.settings = { ...LOGS_DEFAULTS, ...settings };
  }

  /** Starts the flush and prune timers (unref'd: they never keep the process alive). */
  start(): this {
    const flush = setInterval(() => void this.flush(), this.options.flushMs ?? 500);
    const prune = setInterval(() => void this.prune().catch((err: unknown) => this.warn('pruning the log store failed', err)), this.options.pruneMs ?? 60_000);
    flush.unref();
    prune.unref();
    this.timers.push(flush, prune);
    return this;
  }

  /** Queues one entry; never throws, never waits. */
  record(entry: LogEntry): void {
    if (this.closed) return;
    const now = this.options.now?.() ?? Date.now();
    // Ids are time-ordered and monotonic in this process (LogIds), so `maxRows` keeps the newest.
    this.buffer.push({ id: this.ids.next(now), time: now, entry });
    const max = this.options.maxBuffer ?? 20_000;
    if (this.buffer.length > max) {
      const over = this.buffer.length - max;
      this.buffer.splice(0, over);
      this.dropped += over;
    }
  }

  /** Writes what is buffered (one flush at a time); a failure keeps the entries for the next one. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.buffer.length === 0) return Promise.resolve();
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.write(batch)
      .catch((err: unknown) => {
        // Put back in front of what came meanwhile; the bound applies at the next record.
        this.buffer = batch.concat(this.buffer);
        this.warn('the log store could not be written; entries are kept in memory and tried again', err);
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  private async write(batch: Pending[]): Promise<void> {
    const sqlite = this.db.provider === 'sqlite';
    for (let i = 0; i < batch.length; i += ROWS_PER_INSERT) {
      const rows = batch
        .slice(i, i + ROWS_PER_INSERT)
        .map(({ id, time, entry: e }) => [
          id,
          isoTime(time, sqlite),
          e.kind,
          e.reqId ?? null,
          e.method ?? null,
          e.path ?? null,
          e.status ?? null,
          e.durationMs ?? null,
          e.identityId ?? null,
          e.identityKind ?? null,
          e.severity ?? null,
          e.source ?? null,
          e.message == null ? null : e.message.length > MAX_MESSAGE ? e.message.slice(0, MAX_MESSAGE) : e.message,
        ]);
      await this.db.query(sqlite ? insertSqlite(JSON.stringify(rows), this.instance) : insertPg(JSON.stringify(rows), this.instance));
    }
  }

  /**
   * Deletes entries older than `retentionDays` and all but the newest `maxRows`.
   * @returns how many entries were deleted
   * @throws the database's error
   */
  async prune(): Promise<number> {
    const now = this.options.now?.() ?? Date.now();
    const cutoff = new Date(now - this.settings.retentionDays * 86_400_000);
    const old = await this.db.query<{ id: unknown }>(sql`DELETE FROM ${TABLE.logs} WHERE "time" < ${cutoff} RETURNING "id"`);
    const [edge] = await this.db.query<{ id: unknown }>(sql`SELECT "id" FROM ${TABLE.logs} ORDER BY "id" DESC LIMIT 1 OFFSET ${this.settings.maxRows}`);
    if (!edge) return old.length;
    const over = await this.db.query<{ id: unknown }>(sql`DELETE FROM ${TABLE.logs} WHERE "id" <= ${String(edge.id)} RETURNING "id"`);
    return old.length + over.length;
  }

  /** Stops the timers and writes what is left (best effort: at most `CLOSE_WAIT_MS`, so a database that is down never holds up a stop). */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((ok) => (timer = setTimeout(ok, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** Logs a problem of the store at most every 10 s, with the count of dropped entries. */
  private warn(message: string, err: unknown): void {
    const t = Date.now();
    if (t - this.warnedAt < 10_000) return;
    this.warnedAt = t;
    this.logger.warn({ err: (err as Error)?.message, buffered: this.buffer.length, dropped: this.dropped }, message);
  }
}

const COLUMNS = sql`("id", "time", "instance", "kind", "reqId", "method", "path", "status", "durationMs", "identityId", "identityKind", "severity", "source", "message")`;

/** One batch on PostgreSQL: `rows` is a JSON array of 13-element arrays (every column but `instance`). */
function insertPg(rows: string, instance: string) {
  return sql`INSERT INTO ${TABLE.logs} ${COLUMNS}
    SELECT r->>0, (r->>1)::timestamptz, ${instance}, r->>2, r->>3, r->>4, r->>5, (r->>6)::int, (r->>7)::float8, r->>8, r->>9, (r->>10)::int, r->>11, r->>12
    FROM json_array_elements(${rows}::json) AS r`;
}

/** One batch on SQLite (`json_each` over the same JSON). */
function insertSqlite(rows: string, instance: string) {
  return sql`INSERT INTO ${TABLE.logs} ${COLUMNS}
    SELECT value->>0, value->>1, ${instance}, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9, value->>10, value->>11, value->>12
    FROM json_each(${rows})`;
}

let isoMs = -1;
let isoText = '';
/** An entry's time as the provider stores it (SQLite: ISO 8601 with `+00:00`, see data/values.ts); cached per ms. */
function isoTime(ms: number, sqlite: boolean): string {
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return sqlite ? `${isoText.slice(0, -1)}+00:00` : isoText;
}
