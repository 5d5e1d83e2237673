/**
 * @module The log store of the console (DESIGN §9): request log entries, client `_log` entries and
 * function output lines kept in the system table `_svc_logs`. `record` only pushes onto an in-memory
 * buffer (no I/O, never throws), so the request path stays cheap; a timer flushes the buffer every
 * `flushMs` (500 ms: an entry is at most about 1 s late), each batch one row of `_svc_log_batches`
 * (log-batches.ts: its entries as one JSON array; readers see one row per entry in the view
 * `_svc_logs`). On PostgreSQL the table is `UNLOGGED` (`prepareLogStore`, at start): no write-ahead
 * log for log lines, and a crash of PostgreSQL may empty the table (never the app's tables; an
 * unlogged table is not on streaming replicas either). Every text field is made storable first
 * (`storableText`: lone surrogates and NUL, which PostgreSQL refuses, become U+FFFD).
 * Each kind has its own buffer budget (`maxBuffer` entries each), so client `_log` events and function
 * lines can never push request lines out. While the database is down the buffers are kept, the oldest
 * entries of a kind dropped beyond its budget and counted (`dropped`, `droppedByKind`); a failed
 * flush is retried with the next tick. A batch the database refuses while it answers `SELECT 1` is
 * split in halves until the entry it refuses alone is found: that entry is dropped and counted
 * (`rejected`), the others are stored. Another timer prunes entries older than `logs.retentionDays`
 * and beyond `logs.maxRows` (newest kept), and rows of the client log table `_log` older than
 * `logs.clientLog.retentionDays` and beyond `logs.clientLog.maxRows` (log-batches.ts `pruneBatches`:
 * whole batches, the one astride a bound rewritten).
 *
 * Callers hand in what may be stored: paths go through `redactPath` first (redact.ts), and no
 * header, token or body is ever recorded.
 */
import { randomBytes } from 'node:crypto';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { sql } from '../query/sql.js';
import { TABLE } from '../auth/store.js';
import { insertBatch, pruneBatches, type StoredEntry } from './log-batches.js';
import { CLIENT_LOG_DEFAULTS, LOGS_DEFAULTS, type ClientLogSettings, type LogsSettings } from '../contract/settings.js';

/** What an entry is: a request's line, a client `_log` event, or a line a function printed. */
export type LogKind = 'request' | 'client' | 'function' | 'job';
export const LOG_KINDS: readonly LogKind[] = ['request', 'client', 'function', 'job'];

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
  /** Most entries of each kind held while the database does not take them (default 10,000 per kind). */
  maxBuffer?: number;
  /** The clock (default `Date.now`). */
  now?: () => number;
}

/** Most entries in one batch row. */
const ENTRIES_PER_BATCH = 1000;
/** Most characters of paths and messages in one batch row (a batch is cut before it would pass this). */
const CHARS_PER_BATCH = 1_000_000;
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

/** Lone UTF-16 surrogates (a high one not followed by a low one, a low one not after a high one) and NUL. */
const UNSTORABLE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\0/g;

/**
 * `text` as every provider stores it: each lone surrogate and each NUL (which PostgreSQL's `text` and
 * `json` refuse: "unsupported Unicode escape sequence", "invalid byte sequence") replaced by U+FFFD;
 * other text returned as it is (the same string). Also used for the rows of `_log`.
 */
export function storableText(text: string): string {
  UNSTORABLE.lastIndex = 0;
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE, '\uFFFD') : text;
}

/** A text field of an entry made storable (`storableText`), absent or null as null. */
function textOf(value: string | null | undefined, max?: number): string | null {
  if (value == null) return null;
  // Cut first: a cut between the halves of a surrogate pair leaves a lone one, made storable next.
  return storableText(max !== undefined && value.length > max ? value.slice(0, max) : value);
}

/** Counts per kind. */
type PerKind = Record<LogKind, number>;

export class LogStore {
  /** What waits to be written, per kind (each bounded by `maxBuffer`). */
  private buffers: Record<LogKind, Pending[]> = { request: [], client: [], function: [], job: [] };
  private flushing: Promise<void> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private warnedAt = 0;
  private readonly ids = new LogIds();
  private closed = false;
  /** Entries dropped since start because their kind's buffer was full (the database did not take them). */
  dropped = 0;
  /** `dropped` per kind. */
  readonly droppedByKind: PerKind = { request: 0, client: 0, function: 0, job: 0 };
  /** Entries the database refused alone while it answered (dropped; see the module note), since start. */
  rejected = 0;
  readonly settings: LogsSettings;
  /** `logs.clientLog` with its defaults: the limits of `POST /api/_log` and the retention of `_log`. */
  readonly clientLog: ClientLogSettings;

  constructor(
    private readonly db: Database,
    /** This instance's id (stored on every entry). */
    readonly instance: string,
    settings: LogsSettings | undefined,
    private readonly logger: Logger,
    private readonly options: LogStoreOptions = {},
  ) {
    this.settings = { ...LOGS_DEFAULTS, ...settings };
    this.clientLog = { ...CLIENT_LOG_DEFAULTS, ...settings?.clientLog };
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

  /** Entries waiting to be written, all kinds. */
  get buffered(): number {
    return LOG_KINDS.reduce((sum, kind) => sum + this.buffers[kind].length, 0);
  }

  /** Queues one entry; never throws, never waits. */
  record(entry: LogEntry): void {
    if (this.closed) return;
    const now = this.options.now?.() ?? Date.now();
    // Ids are time-ordered and monotonic in this process (LogIds), so `maxRows` keeps the newest.
    const buffer = this.buffers[entry.kind] ?? this.buffers.client;
    buffer.push({ id: this.ids.next(now), time: now, entry });
    this.bound(entry.kind in this.buffers ? entry.kind : 'client');
  }

  /** Drops the oldest entries of `kind` beyond its budget, counting them. */
  private bound(kind: LogKind): void {
    const buffer = this.buffers[kind];
    const max = this.options.maxBuffer ?? 10_000;
    if (buffer.length > max) {
      const over = buffer.length - max;
      buffer.splice(0, over);
      this.dropped += over;
      this.droppedByKind[kind] += over;
    }
  }

  /** Puts entries that were not written back in front of what came meanwhile; each kind's budget applies. */
  private requeue(entries: Pending[]): void {
    for (const kind of LOG_KINDS) {
      const back = entries.filter((p) => p.entry.kind === kind || (kind === 'client' && !LOG_KINDS.includes(p.entry.kind)));
      if (back.length === 0) continue;
      this.buffers[kind] = back.concat(this.buffers[kind]);
      this.bound(kind);
    }
  }

  /** Writes what is buffered (one flush at a time); entries not written (the database is down) are kept for the next one. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.buffered === 0) return Promise.resolve();
    // Request lines first: they are what a flood of the others must not hold up.
    const batch = [...this.buffers.request, ...this.buffers.job, ...this.buffers.client, ...this.buffers.function];
    this.buffers = { request: [], client: [], function: [], job: [] };
    this.flushing = this.write(batch)
      .catch((err: unknown) => {
        // write() puts back what it did not store; this is a last guard (never throws out of a timer).
        this.warn('the log store could not be written', err);
      })
      .finally(() => {
        this.flushing = null;
      });
    return this.flushing;
  }

  /** Writes `batch` in rows of at most `ENTRIES_PER_BATCH` entries and `CHARS_PER_BATCH` characters; on a refusal see `settle`. Puts back what it could not write. */
  private async write(batch: Pending[]): Promise<void> {
    for (let i = 0, end = 0; i < batch.length; i = end) {
      let chars = 0;
      for (end = i; end < batch.length && end - i < ENTRIES_PER_BATCH && (end === i || chars < CHARS_PER_BATCH); end++) {
        chars += (batch[end].entry.message?.length ?? 0) + (batch[end].entry.path?.length ?? 0);
      }
      const chunk = batch.slice(i, end);
      try {
        await this.insert(chunk);
      } catch (err) {
        if (!(await this.answers())) {
          this.requeue(batch.slice(i));
          this.warn('the log store could not be written; entries are kept in memory and tried again', err);
          return;
        }
        await this.settle(chunk, err);
      }
    }
  }

  /**
   * A chunk the database refused while it answers: written in halves, recursively; an entry refused
   * alone is dropped and counted in `rejected` (or put back when the database stopped answering).
   */
  private async settle(rows: Pending[], err: unknown): Promise<void> {
    if (rows.length === 1) {
      if (!(await this.answers())) {
        this.requeue(rows);
        return;
      }
      this.rejected++;
      this.warn('the log store refused an entry; it is dropped', err);
      return;
    }
    const half = rows.length >> 1;
    for (const part of [rows.slice(0, half), rows.slice(half)]) {
      try {
        await this.insert(part);
      } catch (partErr) {
        await this.settle(part, partErr);
      }
    }
  }

  /** Whether the database answers `SELECT 1` (a refusal then lies in the rows, not the connection). */
  private async answers(): Promise<boolean> {
    try {
      await this.db.query(sql`SELECT 1`);
      return true;
    } catch {
      return false;
    }
  }

  /** One batch row holding `rows` (log-batches.ts); entries that cannot be stored are counted in `rejected`. */
  private async insert(rows: Pending[]): Promise<void> {
    const sqlite = this.db.provider === 'sqlite';
    const entries: StoredEntry[] = [];
    for (const { id, time, entry } of rows) {
      const stored = storedEntry(id, isoTime(time, sqlite), entry);
      if (stored) entries.push(stored);
    }
    if (entries.length > 0) await insertBatch(this.db, this.instance, entries);
    // Counted once written: a batch put back (the database is down) is tried again whole.
    if (entries.length < rows.length) {
      this.rejected += rows.length - entries.length;
      this.warn('the log store refused an entry; it is dropped', new Error('an entry without a kind'));
    }
  }

  /**
   * Deletes entries older than `retentionDays` and all but the newest `maxRows`, then rows of `_log`
   * older than `clientLog.retentionDays` and all but the newest `clientLog.maxRows`.
   * @returns how many entries and rows were deleted
   * @throws the database's error
   */
  async prune(): Promise<number> {
    const now = this.options.now?.() ?? Date.now();
    const cutoff = new Date(now - this.settings.retentionDays * 86_400_000);
    const deleted = await pruneBatches(this.db, cutoff, this.settings.maxRows);
    return deleted + (await this.pruneClientLog(now));
  }

  /** Rows of `_log` past `clientLog.retentionDays` (by `createdAt`) and beyond `clientLog.maxRows` (uuidv7 ids: the newest kept). */
  private async pruneClientLog(now: number): Promise<number> {
    const cutoff = new Date(now - this.clientLog.retentionDays * 86_400_000);
    const old = await this.db.query<{ id: unknown }>(sql`DELETE FROM ${TABLE.log} WHERE "createdAt" < ${cutoff} RETURNING "id"`);
    const [edge] = await this.db.query<{ id: unknown }>(sql`SELECT "id" FROM ${TABLE.log} ORDER BY "id" DESC LIMIT 1 OFFSET ${this.clientLog.maxRows}`);
    if (!edge) return old.length;
    const over = await this.db.query<{ id: unknown }>(sql`DELETE FROM ${TABLE.log} WHERE "id" <= ${edge.id} RETURNING "id"`);
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
    this.logger.warn({ err: (err as Error)?.message, buffered: this.buffered, dropped: this.dropped, rejected: this.rejected }, message);
  }
}

/** A whole number PostgreSQL's `int` holds, else undefined (the view would fail on every read of its batch). */
const int4 = (v: number | null | undefined): number | undefined => (Number.isInteger(v) && Math.abs(v!) < 2 ** 31 ? v! : undefined);

/**
 * An entry as a batch stores it: text fields made storable, absent fields left out, numbers the view
 * cannot read as their column's type (`status`, `severity`: whole numbers; `durationMs`: finite) left
 * out too.
 * @returns null for an entry without a kind (dropped and counted as `rejected`, as a refused row was)
 */
function storedEntry(id: string, time: string, e: LogEntry): StoredEntry | null {
  if (typeof e.kind !== 'string') return null;
  const out: StoredEntry = { id, time, kind: textOf(e.kind)! };
  const put = <K extends keyof StoredEntry>(key: K, value: StoredEntry[K] | null | undefined) => {
    if (value != null) out[key] = value;
  };
  put('reqId', textOf(e.reqId));
  put('method', textOf(e.method));
  put('path', textOf(e.path));
  put('status', int4(e.status));
  put('durationMs', Number.isFinite(e.durationMs) ? e.durationMs : undefined);
  put('identityId', textOf(e.identityId));
  put('identityKind', textOf(e.identityKind));
  put('severity', int4(e.severity));
  put('source', textOf(e.source));
  put('message', textOf(e.message, MAX_MESSAGE));
  return out;
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
