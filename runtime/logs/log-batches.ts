/**
 * @module How the log store keeps its entries in the database (DESIGN §9): one row of
 * `_svc_log_batches` per batch the store writes, its entries as one JSON array of objects (text), with
 * the id and time of its oldest (`firstId`, `first`) and newest (`id`, `last`) entry. A batch costs the
 * database one small row whatever its size, so a request line costs PostgreSQL well under a
 * microsecond instead of a row with its index entries (bench/README.md "Figures of 2026-11-28 (later)").
 * Readers see one row per entry through the view `_svc_logs` (the columns of `logEntries`), made at start
 * by `prepareLogStore`; the console's search reads the same SELECT with batch-level bounds first
 * (`logEntries`), so a time range or a page cursor skips whole batches.
 */
import type { Database, Tx } from '../data/database.js';
import { andAll, raw, sql, type Sql } from '../query/sql.js';

/** One stored entry, as the JSON objects of a batch hold it (absent keys are null). */
export interface StoredEntry {
  id: string;
  /** ISO 8601, as the provider stores a time (SQLite: `+00:00`). */
  time: string;
  kind: string;
  reqId?: string;
  method?: string;
  path?: string;
  status?: number;
  durationMs?: number;
  identityId?: string;
  identityKind?: string;
  severity?: number;
  source?: string;
  message?: string;
}

export const BATCHES = raw('"_svc_log_batches"');
const VIEW = raw('"_svc_logs"');

/** ` WHERE TRUE AND (c1) …` (`andAll`), or nothing without conditions. */
const whereOf = (conditions: Sql[]): Sql => (conditions.length > 0 ? sql` WHERE TRUE${andAll(conditions)}` : raw(''));

/** The typed columns of an entry, in the order of the view. */
const ENTRY_COLUMNS: readonly [name: string, pgType: string][] = [
  ['id', 'text'],
  ['time', 'timestamptz'],
  ['kind', 'text'],
  ['reqId', 'text'],
  ['method', 'text'],
  ['path', 'text'],
  ['status', 'int'],
  ['durationMs', 'float8'],
  ['identityId', 'text'],
  ['identityKind', 'text'],
  ['severity', 'int'],
  ['source', 'text'],
  ['message', 'text'],
];

/**
 * One row per entry: `id, time, instance, kind, reqId, method, path, status, durationMs, identityId,
 * identityKind, severity, source, message`, from the batches matching `batchWhere` (conditions on the
 * batch alias `b`: `b."first"`, `b."last"`, `b."id"`, `b."firstId"`, `b."instance"`). Wrap it as a
 * subquery to filter and sort entries. Source: DESIGN §9 (log store).
 */
export function logEntries(provider: Database['provider'], batchWhere: Sql[] = []): Sql {
  const where = whereOf(batchWhere);
  if (provider === 'sqlite') {
    const cols = ENTRY_COLUMNS.map(([name]) => `e.value ->> '${name}' AS "${name}"`);
    cols.splice(2, 0, 'b."instance" AS "instance"');
    return sql`SELECT ${raw(cols.join(', '))} FROM ${BATCHES} AS b, json_each(b."entries") AS e${where}`;
  }
  const cols = ENTRY_COLUMNS.map(([name]) => `e."${name}"`);
  cols.splice(2, 0, 'b."instance"');
  const record = ENTRY_COLUMNS.map(([name, type]) => `"${name}" ${type}`).join(', ');
  return sql`SELECT ${raw(cols.join(', '))} FROM ${BATCHES} AS b CROSS JOIN LATERAL json_to_recordset(b."entries"::json) AS e(${raw(record)})${where}`;
}

/** What `newestEntries` looks for. */
export interface EntrySearch {
  /** Conditions on entries (columns of `logEntries`, unqualified). */
  where: Sql[];
  /** Conditions on the batches that may hold a match (alias `b`, see `logEntries`). */
  batches: Sql[];
  /** Text a matching entry's JSON holds verbatim (a `reqId`, an identity id): batches without it are skipped unparsed. */
  holds?: string[];
  /** Most entries answered. */
  limit: number;
}

/** Batches read by the first step of `newestEntries`; each next step reads eight times as many. */
const FIRST_STEP = 2;

/**
 * The newest `limit` entries matching `search`, newest first (by id), reading batches newest first
 * and only as many as it takes: after a step, an entry at or above the smallest batch id read so far
 * (a batch's id is its newest entry's) can no longer be outranked by a batch not read yet. So the
 * console's first page reads a few batches, not the whole store; a rare match reads them all once.
 * Source: DESIGN §9 (`GET /api/_admin/logs`).
 * @throws the database's error
 */
export async function newestEntries(db: Database, search: EntrySearch): Promise<Record<string, unknown>[]> {
  const like = (search.holds ?? []).map((text) => sql`b."entries" LIKE ${`%${JSON.stringify(text).replace(/[\\%_]/g, (c) => `\\${c}`)}%`} ESCAPE '\\'`);
  const found: Record<string, unknown>[] = [];
  let below: string | undefined;
  for (let step = FIRST_STEP; ; step *= 8) {
    const bound = below === undefined ? [] : [sql`b."id" < ${below}`];
    const batches = await db.query<{ id: unknown }>(
      sql`SELECT b."id" FROM ${BATCHES} AS b${whereOf([...search.batches, ...like, ...bound])} ORDER BY b."id" DESC LIMIT ${step}`,
    );
    if (batches.length === 0) break;
    const last = String(batches.at(-1)!.id);
    const ids = [sql`b."id" <= ${String(batches[0].id)}`, sql`b."id" >= ${last}`];
    const entries = logEntries(db.provider, [...search.batches, ...like, ...ids]);
    found.push(
      ...(await db.query<Record<string, unknown>>(sql`SELECT * FROM (${entries}) AS "l"${whereOf(search.where)} ORDER BY "id" DESC LIMIT ${search.limit}`)),
    );
    below = last;
    if (batches.length < step) break;
    if (found.filter((e) => String(e.id) >= last).length >= search.limit) break;
  }
  return found.sort((x, y) => (String(x.id) < String(y.id) ? 1 : -1)).slice(0, search.limit);
}

/**
 * Makes the log store ready, once per database (later calls find it done and change nothing): on
 * PostgreSQL `_svc_log_batches` becomes `UNLOGGED` (no write-ahead log; a crash of PostgreSQL may empty
 * it, never the app's tables) and its `entries` column is stored uncompressed (`STORAGE EXTERNAL`:
 * compressing a batch costs the database more than the disk it saves); on both providers the view
 * `_svc_logs` is made when nothing has that name. Prisma models neither, so migrations neither see nor
 * undo them.
 * @returns true when something was changed now
 * @throws the database's error (for instance when the database user does not own the table)
 */
export async function prepareLogStore(db: Database): Promise<boolean> {
  if (db.provider === 'sqlite') {
    const [view] = await db.query(sql`SELECT 1 AS "x" FROM sqlite_master WHERE name = ${'_svc_logs'}`);
    if (view) return false;
    await db.query(sql`CREATE VIEW IF NOT EXISTS ${VIEW} AS ${logEntries('sqlite')}`);
    return true;
  }
  const state = (tx?: Tx) =>
    db.query<{ p: string | null; s: string | null; v: string | null }>(
      sql`SELECT c.relpersistence AS "p", a.attstorage AS "s", to_regclass(${'"_svc_logs"'})::text AS "v"
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = ${'entries'}
        WHERE c.oid = to_regclass(${'"_svc_log_batches"'})`,
      tx,
    );
  const [seen] = await state();
  if (!seen || (seen.p !== 'p' && seen.s === 'e' && seen.v !== null)) return false;
  // Instances starting together take turns (their DDL would collide: "tuple concurrently updated");
  // the lock ends with the transaction, and the later ones find the work done.
  return db.transaction(async (tx) => {
    await db.query(sql`SELECT pg_advisory_xact_lock(${PREPARE_LOCK})`, tx);
    const [row] = await state(tx);
    if (!row) return false;
    let changed = false;
    if (row.p === 'p') {
      await db.query(sql`ALTER TABLE ${BATCHES} SET UNLOGGED`, tx);
      changed = true;
    }
    if (row.s !== 'e') {
      await db.query(sql`ALTER TABLE ${BATCHES} ALTER COLUMN "entries" SET STORAGE EXTERNAL`, tx);
      changed = true;
    }
    if (row.v === null) {
      await db.query(sql`CREATE OR REPLACE VIEW ${VIEW} AS ${logEntries('postgresql')}`, tx);
      changed = true;
    }
    return changed;
  });
}

/** The advisory lock `prepareLogStore` holds while it changes the store (any fixed number of svc's own). */
const PREPARE_LOCK = 0x5f73766c6f67; // "_svlog"

/**
 * Writes `entries` (at least one, already storable) as one batch row of `instance`.
 * @throws the database's error (nothing written)
 */
export async function insertBatch(db: Database, instance: string, entries: StoredEntry[]): Promise<void> {
  let first = entries[0];
  let last = entries[0];
  for (const e of entries) {
    if (e.id < first.id) first = e;
    if (e.id > last.id) last = e;
  }
  await db.query(
    sql`INSERT INTO ${BATCHES} ("id", "firstId", "first", "last", "instance", "count", "entries")
      VALUES (${last.id}, ${first.id}, ${new Date(first.time)}, ${new Date(last.time)}, ${instance}, ${entries.length}, ${JSON.stringify(entries)})`,
  );
}

/**
 * Deletes the entries recorded before `cutoff` and all but the newest `maxRows` (newest by batch: the
 * batches are counted from the one holding the newest entry down; entries of instances writing at the
 * same moment interleave). Whole batches are deleted; the one batch that straddles a bound is
 * rewritten without its older entries.
 * @returns how many entries were deleted
 * @throws the database's error
 */
export async function pruneBatches(db: Database, cutoff: Date, maxRows: number): Promise<number> {
  const old = await db.query<{ n: unknown }>(sql`DELETE FROM ${BATCHES} WHERE "last" < ${cutoff} RETURNING "count" AS "n"`);
  let deleted = old.reduce((sum, r) => sum + Number(r.n), 0);
  const cut = cutoff.getTime();
  for (const b of await db.query<{ id: unknown; entries: unknown }>(sql`SELECT "id", "entries" FROM ${BATCHES} WHERE "first" < ${cutoff}`)) {
    deleted += await keepOnly(db, String(b.id), String(b.entries), (entries) => entries.filter((e) => Date.parse(e.time) >= cut));
  }
  const [edge] = await db.query<{ id: unknown; count: unknown; upto: unknown }>(
    sql`SELECT "id", "count", "upto" FROM (SELECT "id", "count", SUM("count") OVER (ORDER BY "id" DESC) AS "upto" FROM ${BATCHES}) AS s
      WHERE "upto" > ${maxRows} ORDER BY "id" DESC LIMIT 1`,
  );
  if (!edge) return deleted;
  const keep = maxRows - (Number(edge.upto) - Number(edge.count));
  const older = await db.query<{ n: unknown }>(
    keep > 0
      ? sql`DELETE FROM ${BATCHES} WHERE "id" < ${String(edge.id)} RETURNING "count" AS "n"`
      : sql`DELETE FROM ${BATCHES} WHERE "id" <= ${String(edge.id)} RETURNING "count" AS "n"`,
  );
  deleted += older.reduce((sum, r) => sum + Number(r.n), 0);
  if (keep > 0) {
    const [b] = await db.query<{ entries: unknown }>(sql`SELECT "entries" FROM ${BATCHES} WHERE "id" = ${String(edge.id)}`);
    if (b) deleted += await keepOnly(db, String(edge.id), String(b.entries), (entries) => entries.sort((x, y) => (x.id < y.id ? 1 : -1)).slice(0, keep));
  }
  return deleted;
}

/** Rewrites batch `id` with the entries `pick` keeps (deletes it when none is left). @returns how many were removed */
async function keepOnly(db: Database, id: string, text: string, pick: (entries: StoredEntry[]) => StoredEntry[]): Promise<number> {
  const entries = JSON.parse(text) as StoredEntry[];
  const kept = pick([...entries]).sort((x, y) => (x.id < y.id ? -1 : 1));
  if (kept.length === entries.length) return 0;
  if (kept.length === 0) {
    await db.query(sql`DELETE FROM ${BATCHES} WHERE "id" = ${id}`);
  } else {
    const first = kept[0];
    await db.query(
      sql`UPDATE ${BATCHES} SET "entries" = ${JSON.stringify(kept)}, "count" = ${kept.length}, "firstId" = ${first.id}, "first" = ${new Date(first.time)} WHERE "id" = ${id}`,
    );
  }
  return entries.length - kept.length;
}
