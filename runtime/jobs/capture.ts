/**
 * @module Capture of trigger events by SQL triggers (DESIGN §12): for every svc trigger, DDL that
 * writes a `svc_trigger` job in the writing transaction itself (AFTER INSERT/UPDATE, BEFORE DELETE),
 * so a committed change always has its job and a rolled-back one never. The storage shapes are those
 * of `engine.ts`. The `filter` is compiled by the runtime's own filter compiler against alias `t0`,
 * its bound values inlined as SQL literals (`sqlLiteral`). Names: `svc_trg_<collection>_<trigger>`
 * (PostgreSQL functions `svc_trg_fn_<collection>_<trigger>`), so svc's own can be found and dropped.
 */
import type { AppManifest, Collection, DatabaseProvider, Trigger, TriggerOperation } from '../manifest.js';
import { columnsOf } from '../data/row-codec.js';
import { compileFilter } from '../query/filter-compile.js';
import { parseFilter } from '../query/filter-parser.js';
import { SQLITE_CAPTURE_TRIGGERS, TRIGGER_PREFIX } from '../data/capture-context.js';
import type { Database } from '../data/database.js';
import { raw, sql } from '../query/sql.js';

export { TRIGGER_PREFIX };

/**
 * A bound filter value as a SQL literal: strings quoted with `'` doubled, finite numbers, booleans
 * (`1`/`0` on SQLite, `TRUE`/`FALSE` on PostgreSQL), null.
 * @throws TypeError for anything else (objects, bigints beyond numbers, NaN, strings with NUL)
 */
export function sqlLiteral(value: unknown, provider: DatabaseProvider): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'boolean') return provider === 'sqlite' ? (value ? '1' : '0') : value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string' && !value.includes('\0')) return `'${value.replace(/'/g, "''")}'`;
  throw new TypeError(`cannot inline ${typeof value} ${String(value)} into a trigger's SQL`);
}

/** The SQL trigger name of a svc trigger. */
export function sqlTriggerName(t: Pick<Trigger, 'collection' | 'name'>): string {
  return `${TRIGGER_PREFIX}${t.collection}_${t.name}`;
}

/**
 * The trigger's condition on row `ref` (`NEW` or `OLD`) for `op`: the filter (an `EXISTS` over the
 * row's table, so lookups and every filter form work) and, for updates, `changed`.
 * @throws Error when the filter uses `exp(...)`: `now()` and `me()` have no value inside a trigger
 */
function conditionOf(manifest: AppManifest, c: Collection, t: Trigger, op: TriggerOperation): string {
  const ref = op === 'delete' ? 'OLD' : 'NEW';
  const parts: string[] = [];
  if (t.filter) {
    if (/\bexp\s*\(/.test(t.filter)) throw new Error(`trigger ${t.name}: exp(...) cannot be used in a trigger filter`);
    const compiled = compileFilter(parseFilter(t.filter), { manifest, collection: c, provider: manifest.provider, alias: 't0' });
    let i = 0;
    const inlined = compiled.text.replace(/\?/g, () => sqlLiteral(compiled.values[i++], manifest.provider));
    parts.push(`EXISTS (SELECT 1 FROM "${c.name}" AS "t0" WHERE "t0"."id" = ${ref}."id" AND (${inlined}))`);
  }
  if (op === 'update' && t.changed?.length) {
    const neq = manifest.provider === 'sqlite' ? 'IS NOT' : 'IS DISTINCT FROM';
    parts.push(`(${t.changed.map((p) => `OLD."${p}" ${neq} NEW."${p}"`).join(' OR ')})`);
  }
  return parts.length ? parts.join(' AND ') : 'TRUE';
}

const SQLITE_EVENT = { create: 'AFTER INSERT', update: 'AFTER UPDATE', delete: 'BEFORE DELETE' } as const;
const NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/** `json_object('col', ref."col", …)` over every column of `c` (SQLite). */
function sqliteRow(c: Collection, ref: 'NEW' | 'OLD'): string {
  return `json_object(${columnsOf(c)
    .map((n) => `'${n}', ${ref}."${n}"`)
    .join(', ')})`;
}

/**
 * SQLite DDL of one trigger: one `CREATE TRIGGER` per operation, named `svc_trg_<C>_<T>_<op>`. The
 * caller and depth are `svc_caller()` and `svc_depth()`, functions the driver registers on every connection
 * (`data/capture-context.ts`; the caller falls back to `NEW.createdBy` on create).
 */
function sqliteDdl(manifest: AppManifest, c: Collection, t: Trigger): string[] {
  return t.on.map((op) => {
    const ref = op === 'delete' ? 'OLD' : 'NEW';
    const caller = op === 'create' ? 'COALESCE(svc_caller(), NEW."createdBy")' : 'svc_caller()';
    const payload =
      `json_object('trigger', ${sqlLiteral(t.name, 'sqlite')}, 'event', json_object(` +
      `'id', lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))), ` +
      `'op', '${op}', 'collection', ${sqlLiteral(c.name, 'sqlite')}, 'rowId', ${ref}."id", ` +
      `'before', ${op === 'create' ? 'NULL' : sqliteRow(c, 'OLD')}, 'after', ${op === 'delete' ? 'NULL' : sqliteRow(c, 'NEW')}, ` +
      `'at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'callerId', ${caller}), 'depth', svc_depth())`;
    return (
      `CREATE TRIGGER "${sqlTriggerName(t)}_${op}" ${SQLITE_EVENT[op]} ON "${c.name}" FOR EACH ROW BEGIN ` +
      `INSERT INTO "_svc_jobs" ("id", "task", "payload", "key", "runAt", "attempts", "maxAttempts", "lastError", "lockedAt", "lockedBy", "createdAt") ` +
      `SELECT lower(hex(randomblob(16))), 'svc_trigger', ${payload}, NULL, ${NOW_MS}, 0, ${t.maxAttempts}, NULL, NULL, NULL, ${NOW_MS} ` +
      `WHERE ${conditionOf(manifest, c, t, op)}; END`
    );
  });
}

/**
 * PostgreSQL DDL of one trigger: a plpgsql function `svc_trg_fn_<C>_<T>` inserting the `svc_trigger` job
 * into Graphile Worker's jobs table and the triggers using it (AFTER INSERT OR UPDATE, BEFORE DELETE).
 * Not `graphile_worker.add_job`: that sends a NOTIFY inside the writing transaction, and PostgreSQL
 * commits transactions that notified one at a time (POST with a trigger measured 0.32× of the same POST
 * without it, bench/README.md "Jobs"). The row is the same one `add_job` writes (no key, no queue,
 * priority 0, run now); the server that wrote wakes the runners after its commit (`JobEngine.wake`),
 * and a change made outside svc is found by the runners' poll. The caller and depth are the transaction's `svc.caller` and `svc.depth` settings (the caller falls
 * back to `NEW."createdBy"` on create).
 */
function postgresDdl(manifest: AppManifest, c: Collection, t: Trigger): string[] {
  const fn = `svc_trg_fn_${c.name}_${t.name}`;
  const branch = (op: TriggerOperation): string => {
    const tgOp = { create: 'INSERT', update: 'UPDATE', delete: 'DELETE' }[op];
    const ref = op === 'delete' ? 'OLD' : 'NEW';
    const caller =
      op === 'create' ? `COALESCE(NULLIF(current_setting('svc.caller', true), ''), NEW."createdBy"::text)` : `NULLIF(current_setting('svc.caller', true), '')`;
    return (
      `IF TG_OP = '${tgOp}' THEN IF ${conditionOf(manifest, c, t, op)} THEN ` +
      `INSERT INTO graphile_worker._private_jobs (task_id, payload, max_attempts) VALUES (` +
      `(SELECT id FROM graphile_worker._private_tasks WHERE identifier = 'svc_trigger'), json_build_object('trigger', ${sqlLiteral(t.name, 'postgresql')}, 'event', json_build_object(` +
      `'id', gen_random_uuid(), 'op', '${op}', 'collection', ${sqlLiteral(c.name, 'postgresql')}, 'rowId', ${ref}."id"::text, ` +
      `'before', ${op === 'create' ? 'NULL' : 'to_jsonb(OLD)'}, 'after', ${op === 'delete' ? 'NULL' : 'to_jsonb(NEW)'}, ` +
      `'at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'callerId', ${caller}), 'depth', COALESCE(NULLIF(current_setting('svc.depth', true), '')::int, 0)), ${t.maxAttempts}); END IF; END IF;`
    );
  };
  const body = t.on.map(branch).join(' ');
  const out = [
    `CREATE OR REPLACE FUNCTION "${fn}"() RETURNS trigger LANGUAGE plpgsql AS $svc$ BEGIN ${body} ` +
      `IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $svc$`,
  ];
  const writes = t.on.filter((op) => op !== 'delete').map((op) => (op === 'create' ? 'INSERT' : 'UPDATE'));
  if (writes.length) out.push(`CREATE TRIGGER "${sqlTriggerName(t)}" AFTER ${writes.join(' OR ')} ON "${c.name}" FOR EACH ROW EXECUTE FUNCTION "${fn}"()`);
  if (t.on.includes('delete')) out.push(`CREATE TRIGGER "${sqlTriggerName(t)}_delete" BEFORE DELETE ON "${c.name}" FOR EACH ROW EXECUTE FUNCTION "${fn}"()`);
  return out;
}

/**
 * The statements installing every trigger of `manifest` (after svc's existing ones are dropped, see
 * `dropStatements`), in order.
 * @throws Error for a trigger whose collection is missing or whose filter cannot be compiled
 * Source: DESIGN §12 (capture), `engine.ts` (storage contract).
 */
export function installStatements(manifest: AppManifest): string[] {
  const out: string[] = [];
  for (const t of manifest.triggers ?? []) {
    const c = manifest.collections.find((x) => x.name === t.collection);
    if (!c) throw new Error(`trigger ${t.name}: collection ${t.collection} does not exist`);
    out.push(...(manifest.provider === 'sqlite' ? sqliteDdl(manifest, c, t) : postgresDdl(manifest, c, t)));
  }
  return out;
}

/** SQL listing svc's installed triggers: rows `{ name, tbl }` (SQLite) / `{ name, tbl, fn }` (PostgreSQL). */
export function listInstalledSql(provider: DatabaseProvider): string {
  return provider === 'sqlite'
    ? SQLITE_CAPTURE_TRIGGERS
    : `SELECT t.tgname AS name, c.relname AS tbl, p.proname AS fn FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid ` +
        `JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal AND t.tgname LIKE '${TRIGGER_PREFIX}%'`;
}

/** Statements dropping the installed svc triggers (and their PostgreSQL functions) listed by `listInstalledSql`. */
export function dropStatements(provider: DatabaseProvider, installed: { name: string; tbl: string; fn?: string }[]): string[] {
  const out = installed.map((r) => (provider === 'sqlite' ? `DROP TRIGGER IF EXISTS "${r.name}"` : `DROP TRIGGER IF EXISTS "${r.name}" ON "${r.tbl}"`));
  for (const fn of new Set(installed.map((r) => r.fn).filter((f): f is string => !!f))) out.push(`DROP FUNCTION IF EXISTS "${fn}"()`);
  return out;
}

/** Key of the advisory lock that serialises trigger installs across instances (PostgreSQL). */
const INSTALL_LOCK = 0x5f74726773; // "_trgs"

/**
 * Installs the capture triggers of `manifest` in one transaction: drops svc's installed ones (those of
 * removed triggers too) and creates the current ones, so no write between the two goes uncaptured. Run
 * after the migrations and the job engine's `prepare()`, at start and on every `svc dev` swap. On
 * PostgreSQL an advisory lock keeps instances that start together from interleaving.
 * @returns how many SQL triggers were dropped and how many statements created them
 * @throws Error for a trigger whose collection is missing or whose filter cannot be compiled (nothing changed)
 */
export async function installTriggers(db: Database, manifest: AppManifest): Promise<{ dropped: number; created: number }> {
  const create = installStatements(manifest);
  return db.transaction(async (tx) => {
    if (db.provider === 'postgresql') await db.query(sql`SELECT pg_advisory_xact_lock(${INSTALL_LOCK})`, tx);
    const installed = await db.query<{ name: string; tbl: string; fn?: string }>(raw(listInstalledSql(db.provider)), tx);
    if (installed.length === 0 && create.length === 0) return { dropped: 0, created: 0 };
    for (const text of [...dropStatements(db.provider, installed), ...create]) await db.query(raw(text), tx);
    return { dropped: installed.length, created: create.length };
  });
}
