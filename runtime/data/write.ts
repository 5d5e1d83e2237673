/**
 * @module Writes of a collection (SPEC §4.1): create one or many (atomic), replace (PUT), merge
 * (PATCH), delete one, bulk delete (atomic), with nested children (SPEC §4.4). Each request is one
 * unit of work (`unit-of-work.ts`): a rejected or failed write changes nothing, and what it changed is
 * reported after the commit. Statements are compiled SQL with bound values.
 *
 * Lookup targets: a lookup may name only a row the caller could GET (its collection's GET rule,
 * `_CREATOR` and policies, as `WriteAccess.readable` says). When the caller could GET every row of
 * the target, the foreign key checks them (no extra round trip) and a violation is explained
 * afterwards by `lookupProblems`; otherwise the ids are checked inside the transaction, so a row the
 * caller cannot GET counts as missing.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Collection } from '../manifest.js';
import { HttpError, type ErrorDetail } from '../errors.js';
import { UUID } from '../query/list-params.js';
import { andAll, ident, join, sql, type Sql } from '../query/sql.js';
import type { Database, Tx } from './database.js';
import { validationFailed, type InputChecker, type WriteMode } from './input.js';
import { planChildren, writeChildren, type ChildPlan, type CollectionWriter, type WriteAccess } from './children.js';
import { notFound } from './read.js';
import { insertRows, lookupValues, rowValues, setList, type Row } from './row-sql.js';
import { isForeignKeyViolation, mapDatabaseError } from './db-errors.js';
import { runUnitOfWork, type UnitOfWork, type WorkOptions } from './unit-of-work.js';
import type { Change, ChangeSink } from './changes.js';
import { MAX_BULK_ROWS } from '../contract/limits.js';

/** What a write needs: the database, the collection, its checker, the caller and the change sink. */
export interface WriteScope {
  db: Database;
  collection: Collection;
  checker: InputChecker;
  /** The caller's identity id, stored in `createdBy` on create (null for anonymous). */
  callerId: string | null;
  /** Conditions on alias `t0` a row must meet to be changed (a view's filter, policies); others are 404. */
  conditions?: Sql[];
  /** `_CREATOR` condition on alias `t0` (from `authorize`): a visible row failing it is 403. */
  owner?: Sql | null;
  /** Rules and policies of other collections, for nested children and lookup targets; absent: unrestricted. */
  access?: WriteAccess;
  /** Checker of any collection (for nested children). */
  writerOf: (collection: string) => CollectionWriter;
  /** Where the committed changes go, and the request they belong to. */
  sink: ChangeSink;
  reqId: string;
  /** The time of the request: `createdAt`, `updatedAt` and `now()` defaults. */
  now: Date;
  /** Aborted before the commit → nothing is written (a function that timed out). */
  signal?: AbortSignal;
  /** Deletes the stored files of blob values a committed write removed (see `UnitOfWork.released`). */
  releaseBlobs?: (values: unknown[]) => void;
  /**
   * Set when the app has triggers (DESIGN §12): the depth its writes are captured with (0 for a request,
   * n + 1 for a function run by an event of depth n). The capture triggers then learn the caller too.
   */
  captureDepth?: number;
}

const ids = (list: readonly string[]) =>
  join(
    list.map((id) => sql`${id}`),
    ', ',
  );

/**
 * The unit of work of a write. With triggers, it sets the capture context in its transaction, except
 * for a create at depth 0, whose capture takes the caller from the row's `createdBy` (so the hot path
 * of a create stays one statement).
 */
function work(scope: WriteScope, action: WorkOptions['action'], single = false): WorkOptions {
  const depth = scope.captureDepth;
  const capture = depth !== undefined && (action !== 'POST' || depth > 0) ? { callerId: scope.callerId, depth } : undefined;
  return {
    db: scope.db,
    action,
    sink: scope.sink,
    origin: { reqId: scope.reqId, callerId: scope.callerId },
    signal: scope.signal,
    single: single && !capture,
    releaseBlobs: scope.releaseBlobs,
    capture,
  };
}

/** Lookup properties whose target rows the caller may GET only in part (checked in the transaction). */
function restrictedLookups(scope: WriteScope, collection: Collection) {
  return collection.properties.filter((p) => p.type === 'lookup' && (scope.access?.readable(p.collection!).length ?? 0) > 0);
}

/**
 * Details of lookup values in `rows` that name no row of their target collection the caller could GET;
 * `only` limits the check to some properties.
 */
async function lookupProblems(
  scope: WriteScope,
  tx: Tx | undefined,
  collection: Collection,
  rows: Row[],
  paths: string[],
  only?: Set<string>,
): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  for (const p of collection.properties) {
    if (p.type !== 'lookup' || (only && !only.has(p.name))) continue;
    const wanted = [...new Set(rows.map((r) => r[p.name]).filter((v): v is string => typeof v === 'string'))];
    if (wanted.length === 0) continue;
    const visible = andAll(scope.access?.readable(p.collection!) ?? []);
    const found = await scope.db.query<{ id: string }>(
      sql`SELECT "t0"."id" FROM ${ident(p.collection!)} AS "t0" WHERE "t0"."id" IN (${ids(wanted)})${visible}`,
      tx,
    );
    const existing = new Set(found.map((r) => String(r.id)));
    rows.forEach((r, i) => {
      const v = r[p.name];
      if (typeof v === 'string' && !existing.has(v))
        details.push({ path: `${paths[i]}/${p.name}`, message: `${p.name}: no ${p.collection} with id ${JSON.stringify(v)}` });
    });
  }
  return details;
}

/** Checks the lookups the foreign key cannot judge for this caller (targets it may GET only in part). */
async function checkRestrictedLookups(scope: WriteScope, tx: Tx | undefined, collection: Collection, rows: Row[], paths: string[]): Promise<void> {
  const restricted = restrictedLookups(scope, collection);
  if (restricted.length === 0) return;
  const details = await lookupProblems(scope, tx, collection, rows, paths, new Set(restricted.map((p) => p.name)));
  if (details.length > 0) throw validationFailed(details);
}

/**
 * Runs a write; a foreign-key violation (a dangling lookup) becomes a 400 naming the properties,
 * found by re-checking `explain` after the rollback; other database errors map as `mapDatabaseError`.
 */
async function guarded<T>(scope: WriteScope, id: string | undefined, run: () => Promise<T>, explain?: () => Promise<ErrorDetail[]>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (explain && isForeignKeyViolation(err)) {
      const details = await explain();
      if (details.length > 0) throw validationFailed(details);
    }
    throw mapDatabaseError(err, scope.collection.name, id);
  }
}

/** 404 unless the row exists and meets the scope's conditions; 403 when it fails `owner`. */
async function requireVisible(scope: WriteScope, tx: Tx | undefined, id: string): Promise<void> {
  const where = [sql`"t0"."id" = ${id}`, ...(scope.conditions ?? []).map((c) => sql`(${c})`)];
  const rows = await scope.db.query<{ id: string; owned?: unknown }>(
    sql`SELECT "t0"."id"${scope.owner ? sql`, CASE WHEN ${scope.owner} THEN 1 ELSE 0 END AS "owned"` : sql``} FROM ${ident(scope.collection.name)} AS "t0" WHERE ${join(where, ' AND ')}`,
    tx,
  );
  if (rows.length === 0) throw notFound(scope.collection.name, id);
  if (scope.owner && Number(rows[0].owned) !== 1) throw new HttpError('FORBIDDEN', `${scope.collection.name} ${JSON.stringify(id)} belongs to another caller`);
}

/** Refuses (403) when some of the visible `rowIds` fail the scope's `_CREATOR` condition. */
async function requireOwned(scope: WriteScope, tx: Tx | undefined, rowIds: string[]): Promise<void> {
  if (!scope.owner) return;
  const owned = await scope.db.query<{ id: string }>(
    sql`SELECT "t0"."id" FROM ${ident(scope.collection.name)} AS "t0" WHERE "t0"."id" IN (${ids(rowIds)}) AND ${scope.owner}`,
    tx,
  );
  if (owned.length !== rowIds.length) {
    throw new HttpError(
      'FORBIDDEN',
      rowIds.length === 1
        ? `${scope.collection.name} ${JSON.stringify(rowIds[0])} belongs to another caller`
        : `some of the ${scope.collection.name} rows belong to another caller; nothing was changed`,
    );
  }
}

/** Checks a body and its child arrays; every problem is collected. */
function checkBody(scope: WriteScope, body: unknown, mode: WriteMode, basePath: string): { details: ErrorDetail[]; plans: ChildPlan[] } {
  const details = scope.checker.check(body, mode, basePath);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { details, plans: [] };
  const children = planChildren(scope.collection, body as Record<string, unknown>, basePath, scope.writerOf, scope.now);
  return { details: [...details, ...children.details], plans: children.plans };
}

/** Writes the children of one parent, after checking their policy-restricted lookups. */
async function writeChildrenOf(scope: WriteScope, w: UnitOfWork, parentId: string, plans: ChildPlan[], replaceMissing: boolean): Promise<void> {
  for (const plan of plans) {
    const rows = [...plan.creates, ...plan.updates];
    await checkRestrictedLookups(
      scope,
      w.tx,
      plan.writer.collection,
      rows.map((r) => r.data),
      rows.map((r) => r.path),
    );
  }
  const details = await writeChildren(scope.db, w, parentId, plans, { replaceMissing, callerId: scope.callerId, access: scope.access, now: scope.now });
  if (details.length > 0) throw validationFailed(details);
}

/** Every lookup problem of a body's children (to explain a foreign-key violation). */
async function childLookupProblems(scope: WriteScope, plans: ChildPlan[]): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  for (const plan of plans) {
    const rows = [...plan.creates, ...plan.updates];
    details.push(
      ...(await lookupProblems(
        scope,
        undefined,
        plan.writer.collection,
        rows.map((r) => r.data),
        rows.map((r) => r.path),
      )),
    );
  }
  return details;
}

/**
 * POST: creates one row (object body) or several (array body, at most `MAX_BULK_ROWS`), all or nothing.
 * @returns the new ids in request order, and the committed changes
 * @throws HttpError PAYLOAD_TOO_LARGE (413) over the row limit; VALIDATION_FAILED (400) listing every bad
 *   value, with `/index/property` paths for arrays
 * Source: SPEC §4.1 rule 1.
 */
export async function createItems(scope: WriteScope, body: unknown): Promise<{ ids: string[]; changes: Change[] }> {
  const items = Array.isArray(body) ? body : [body];
  if (Array.isArray(body) && body.length === 0) throw validationFailed([{ path: '/', message: 'the array must hold at least one object' }]);
  if (items.length > MAX_BULK_ROWS)
    throw new HttpError('PAYLOAD_TOO_LARGE', `a request may create at most ${MAX_BULK_ROWS} rows (got ${items.length}); split it into several requests`);
  const basePaths = Array.isArray(body) ? items.map((_, i) => `/${i}`) : [''];
  const checked = items.map((item, i) => checkBody(scope, item, 'create', basePaths[i]));
  const details = checked.flatMap((c) => c.details);
  if (details.length > 0) throw validationFailed(details);
  const rows: Row[] = items.map((item) => ({
    id: uuidv7(),
    ...rowValues(scope.collection, item as Record<string, unknown>, 'create', scope.now),
    createdAt: scope.now,
    updatedAt: scope.now,
    createdBy: scope.callerId,
  }));
  const hasChildren = checked.some((c) => c.plans.length > 0);
  const single = !hasChildren && restrictedLookups(scope, scope.collection).length === 0;
  const { changes } = await guarded(
    scope,
    undefined,
    () =>
      runUnitOfWork(work(scope, 'POST', single), async (w) => {
        await checkRestrictedLookups(scope, w.tx, scope.collection, rows, basePaths);
        // One row: one statement shape per collection, kept prepared (PostgreSQL).
        await scope.db.query(insertRows(scope.collection, rows), w.tx, { prepare: rows.length === 1 });
        w.changes.record(
          scope.collection.name,
          rows.map((r) => r.id as string),
          rows.flatMap((r) => lookupValues(scope.collection, r)),
        );
        for (const [i, c] of checked.entries()) if (c.plans.length > 0) await writeChildrenOf(scope, w, rows[i].id as string, c.plans, false);
      }),
    async () => [
      ...(await lookupProblems(scope, undefined, scope.collection, rows, basePaths)),
      ...(await childLookupProblems(
        scope,
        checked.flatMap((c) => c.plans),
      )),
    ],
  );
  return { ids: rows.map((r) => r.id as string), changes };
}

/**
 * PUT (`replace`: omitted properties become their default or null) or PATCH (`merge`).
 * @throws HttpError NOT_FOUND (404) when no visible row has the id; FORBIDDEN (403) for another
 *   caller's row under `_CREATOR`; VALIDATION_FAILED (400)
 * Source: SPEC §4.1 rule 3.
 */
export async function updateItem(scope: WriteScope, rawId: string, body: unknown, mode: Exclude<WriteMode, 'create'>): Promise<Change[]> {
  if (!UUID.test(rawId)) throw notFound(scope.collection.name, rawId);
  const id = rawId.toLowerCase();
  const { details, plans } = checkBody(scope, body, mode, '');
  if (details.length > 0) throw validationFailed(details);
  const data: Row = { ...rowValues(scope.collection, body as Record<string, unknown>, mode, scope.now), updatedAt: scope.now };
  // A blob set to null is cleared (its files go after the commit); an omitted one stays, even on PUT.
  const cleared = blobProperties(scope.collection).filter((p) => (body as Record<string, unknown>)[p.name] === null);
  for (const p of cleared) data[p.name] = null;
  const { changes } = await guarded(
    scope,
    id,
    () =>
      runUnitOfWork(work(scope, mode === 'replace' ? 'PUT' : 'PATCH'), async (w) => {
        if (scope.conditions?.length || scope.owner) await requireVisible(scope, w.tx, id);
        await checkRestrictedLookups(scope, w.tx, scope.collection, [data], ['']);
        if (cleared.length > 0)
          w.released.push(
            ...(await lockBlobColumns(
              scope,
              w.tx,
              id,
              cleared.map((p) => p.name),
            )),
          );
        const lookups = scope.collection.properties.filter((p) => p.type === 'lookup');
        const returning = join([ident('id'), ...lookups.map((p) => ident(p.name))], ', ');
        const updated = await scope.db.query<Row>(
          sql`UPDATE ${ident(scope.collection.name)} SET ${setList(data)} WHERE "id" = ${id} RETURNING ${returning}`,
          w.tx,
        );
        if (updated.length === 0) throw notFound(scope.collection.name, id);
        w.changes.record(scope.collection.name, [id], lookupValues(scope.collection, updated[0]));
        if (plans.length > 0) await writeChildrenOf(scope, w, id, plans, true);
      }),
    async () => [...(await lookupProblems(scope, undefined, scope.collection, [data], [''])), ...(await childLookupProblems(scope, plans))],
  );
  return changes;
}

const blobProperties = (collection: Collection) => collection.properties.filter((p) => p.type === 'blob');

/** The columns a delete reads back: the id, every lookup (the change's `lookupIds`) and every blob (its files go too). */
function deletedColumns(collection: Collection): Sql {
  return join([ident('id'), ...collection.properties.filter((p) => p.type === 'lookup' || p.type === 'blob').map((p) => ident(p.name))], ', ');
}

/** Hands the blob values of removed rows to the unit of work, whose files are deleted after the commit. */
function releaseRowBlobs(w: UnitOfWork, collection: Collection, rows: Row[]): void {
  for (const p of blobProperties(collection)) for (const r of rows) w.released.push(r[p.name]);
}

/** DELETE one. @throws HttpError NOT_FOUND (404); FORBIDDEN (403); CONFLICT (409) when a required lookup still points at it. */
export async function deleteItem(scope: WriteScope, rawId: string): Promise<Change[]> {
  if (!UUID.test(rawId)) throw notFound(scope.collection.name, rawId);
  const id = rawId.toLowerCase();
  const narrowed = !!(scope.conditions?.length || scope.owner);
  const { changes } = await guarded(scope, id, () =>
    runUnitOfWork(work(scope, 'DELETE', !narrowed), async (w) => {
      if (narrowed) await requireVisible(scope, w.tx, id);
      const deleted = await scope.db.query<Row>(
        sql`DELETE FROM ${ident(scope.collection.name)} WHERE "id" = ${id} RETURNING ${deletedColumns(scope.collection)}`,
        w.tx,
      );
      if (deleted.length === 0) throw notFound(scope.collection.name, id);
      w.changes.record(scope.collection.name, [id], lookupValues(scope.collection, deleted[0]));
      releaseRowBlobs(w, scope.collection, deleted);
    }),
  );
  return changes;
}

/**
 * Bulk DELETE with a JSON array of ids (at most `MAX_BULK_ROWS`): all are deleted or none.
 * @throws HttpError VALIDATION_FAILED (400) for a body that is not a non-empty array of GUIDs;
 *   PAYLOAD_TOO_LARGE (413) over the limit; NOT_FOUND (404) when some ids do not exist (nothing deleted)
 * Source: SPEC §4.1 rule 2; DESIGN §4 (bulk DELETE with an unknown id → 404).
 */
export async function deleteItems(scope: WriteScope, body: unknown): Promise<Change[]> {
  if (!Array.isArray(body) || body.length === 0) throw validationFailed([{ path: '/', message: 'the body must be a non-empty JSON array of ids' }]);
  if (body.length > MAX_BULK_ROWS)
    throw new HttpError('PAYLOAD_TOO_LARGE', `a request may delete at most ${MAX_BULK_ROWS} rows (got ${body.length}); split it into several requests`);
  const bad = body.map((v, i) => [v, i] as const).filter(([v]) => typeof v !== 'string' || !UUID.test(v));
  if (bad.length > 0) throw validationFailed(bad.map(([, i]) => ({ path: `/${i}`, message: 'must be a GUID' })));
  const wanted = [...new Set((body as string[]).map((v) => v.toLowerCase()))];
  const notAll = () => new HttpError('NOT_FOUND', `some of the ${wanted.length} ${scope.collection.name} ids were not found; nothing was deleted`);
  const { changes } = await guarded(scope, undefined, () =>
    runUnitOfWork(work(scope, 'DELETE'), async (w) => {
      if (scope.conditions?.length) {
        const where = [sql`"t0"."id" IN (${ids(wanted)})`, ...scope.conditions.map((c) => sql`(${c})`)];
        const visible = await scope.db.query(sql`SELECT "t0"."id" FROM ${ident(scope.collection.name)} AS "t0" WHERE ${join(where, ' AND ')}`, w.tx);
        if (visible.length !== wanted.length) throw notAll();
      }
      await requireOwned(scope, w.tx, wanted);
      const deleted = await scope.db.query<Row>(
        sql`DELETE FROM ${ident(scope.collection.name)} WHERE "id" IN (${ids(wanted)}) RETURNING ${deletedColumns(scope.collection)}`,
        w.tx,
      );
      // Throwing inside the transaction rolls the partial delete back.
      if (deleted.length !== wanted.length) throw notAll();
      releaseRowBlobs(w, scope.collection, deleted);
      w.changes.record(
        scope.collection.name,
        deleted.map((r) => String(r.id)),
        deleted.flatMap((r) => lookupValues(scope.collection, r)),
      );
    }),
  );
  return changes;
}

/** The current values of some blob columns of a row, locked until the transaction ends (PostgreSQL; SQLite's writer is serial). */
async function lockBlobColumns(scope: WriteScope, tx: Tx | undefined, id: string, fields: string[]): Promise<unknown[]> {
  const lock = scope.db.provider === 'postgresql' ? sql` FOR UPDATE` : sql``;
  const columns = join(
    fields.map((f) => ident(f)),
    ', ',
  );
  const rows = await scope.db.query<Row>(sql`SELECT ${columns} FROM ${ident(scope.collection.name)} WHERE "id" = ${id}${lock}`, tx);
  return rows.length === 0 ? [] : fields.map((f) => rows[0][f]);
}

/**
 * Stores a new value in one blob column of a visible row (an upload, SPEC §4.5), as a PATCH of the row:
 * `updatedAt` moves, the change is reported as PATCH after the commit, and the previous value's files
 * are released. The row is checked inside the transaction (a row deleted meanwhile is 404).
 * @param value - the stored blob as JSON text (see `runtime/blobs/metadata.ts`)
 * @throws HttpError NOT_FOUND (404) when no visible row has the id; FORBIDDEN (403) under `_CREATOR`
 */
export async function setBlobColumn(scope: WriteScope, rawId: string, field: string, value: string): Promise<Change[]> {
  if (!UUID.test(rawId)) throw notFound(scope.collection.name, rawId);
  const id = rawId.toLowerCase();
  const { changes } = await guarded(scope, id, () =>
    runUnitOfWork(work(scope, 'PATCH'), async (w) => {
      await requireVisible(scope, w.tx, id);
      const [previous] = await lockBlobColumns(scope, w.tx, id, [field]);
      const lookups = scope.collection.properties.filter((p) => p.type === 'lookup');
      const returning = join([ident('id'), ...lookups.map((p) => ident(p.name))], ', ');
      const updated = await scope.db.query<Row>(
        sql`UPDATE ${ident(scope.collection.name)} SET ${setList({ [field]: value, updatedAt: scope.now })} WHERE "id" = ${id} RETURNING ${returning}`,
        w.tx,
      );
      if (updated.length === 0) throw notFound(scope.collection.name, id);
      w.changes.record(scope.collection.name, [id], lookupValues(scope.collection, updated[0]));
      w.released.push(previous);
    }),
  );
  return changes;
}
