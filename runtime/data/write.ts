/**
 * @module Writes of a collection (SPEC §4.1): create one or many (atomic), replace (PUT), merge
 * (PATCH), delete one, bulk delete (atomic), with nested children (SPEC §4.4). Each request is one
 * transaction: a rejected or failed
 * write changes nothing. Lookup targets are checked inside the transaction so a dangling id is a 400
 * naming the property, not a database error.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Collection } from '../manifest.js';
import { HttpError, type ErrorDetail } from '../errors.js';
import { UUID } from '../query/list-params.js';
import { andAll, ident, join, sql, type Sql } from '../query/sql.js';
import type { Database, PrismaLike } from './database.js';
import { toPrismaData, validationFailed, type InputChecker, type WriteMode } from './input.js';
import { planChildren, writeChildren, type ChildPlan, type CollectionWriter, type WriteAccess } from './children.js';
import { notFound } from './read.js';

/** What a write needs: the database, the collection, its Prisma delegate and input checker. */
export interface WriteScope {
  db: Database;
  collection: Collection;
  delegate: string;
  checker: InputChecker;
  /** The caller's identity id, stored in `createdBy` on create (null for anonymous). */
  callerId: string | null;
  /** Conditions on alias `t0` a row must meet to be changed (a view's filter, policies); others are 404. */
  conditions?: Sql[];
  /** `_CREATOR` condition on alias `t0` (from `authorize`): a visible row failing it is 403. */
  owner?: Sql | null;
  /** Rules and policies of other collections, for nested children and lookup targets; absent: unrestricted. */
  access?: WriteAccess;
  /** Delegate and checker of any collection (for nested children). */
  writerOf: (collection: string) => CollectionWriter;
}

interface Delegate {
  create(args: object): Promise<unknown>;
  createMany(args: object): Promise<unknown>;
  update(args: object): Promise<unknown>;
  delete(args: object): Promise<unknown>;
  deleteMany(args: object): Promise<{ count: number }>;
}

const delegateOf = (tx: PrismaLike, name: string) => tx[name] as Delegate;

/** Fails with 400 when a lookup value names no row of its target collection (or one its policies hide from the caller). */
async function checkLookups(scope: WriteScope, tx: PrismaLike, rows: Record<string, unknown>[], basePaths: string[], collection = scope.collection): Promise<void> {
  const details: ErrorDetail[] = [];
  for (const p of collection.properties) {
    if (p.type !== 'lookup') continue;
    const ids = [...new Set(rows.map((r) => r[p.name]).filter((v): v is string => typeof v === 'string'))];
    if (ids.length === 0) continue;
    const visible = andAll(scope.access?.visibility(p.collection!) ?? []);
    const found = await scope.db.query<{ id: string }>(
      sql`SELECT "t0"."id" FROM ${ident(p.collection!)} AS "t0" WHERE "t0"."id" IN (${join(ids.map((id) => sql`${id}`), ', ')})${visible}`, tx);
    const existing = new Set(found.map((r) => String(r.id)));
    rows.forEach((r, i) => {
      const v = r[p.name];
      if (typeof v === 'string' && !existing.has(v)) {
        details.push({ path: `${basePaths[i]}/${p.name}`, message: `${p.name}: no ${p.collection} with id ${JSON.stringify(v)}` });
      }
    });
  }
  if (details.length > 0) throw validationFailed(details);
}

/** Maps Prisma and driver errors that requests can cause; anything else stays a 500. */
export function mapDatabaseError(err: unknown, collection: string, id?: string): unknown {
  const e = err as { code?: string; cause?: { kind?: string }; meta?: { driverAdapterError?: { cause?: { kind?: string } } } };
  const kind = e.meta?.driverAdapterError?.cause?.kind ?? e.cause?.kind;
  if (e.code === 'P2025') return notFound(collection, id ?? '');
  if (e.code === 'P2003' || kind === 'ForeignKeyConstraintViolation') {
    return new HttpError('CONFLICT', `${collection}${id ? ` ${JSON.stringify(id)}` : ''} is still referenced by a required lookup of another row; delete or change those rows first`);
  }
  if (e.code === 'P2002' || kind === 'UniqueConstraintViolation') return new HttpError('CONFLICT', `a ${collection} row with the same unique value exists`);
  return err;
}

/** The subset of `ids` that exist and meet the scope's conditions, read inside the transaction. */
async function visibleIds(scope: WriteScope, tx: PrismaLike, ids: string[]): Promise<Set<string>> {
  const where = [sql`"t0"."id" IN (${join(ids.map((id) => sql`${id}`), ', ')})`, ...(scope.conditions ?? []).map((c) => sql`(${c})`)];
  const rows = await scope.db.query<{ id: string }>(sql`SELECT "t0"."id" FROM ${ident(scope.collection.name)} AS "t0" WHERE ${join(where, ' AND ')}`, tx);
  return new Set(rows.map((r) => String(r.id)));
}

/** Refuses (403) when some of the visible `ids` fail the scope's `_CREATOR` condition. */
async function requireOwned(scope: WriteScope, tx: PrismaLike, ids: string[]): Promise<void> {
  if (!scope.owner) return;
  const owned = await scope.db.query<{ id: string }>(
    sql`SELECT "t0"."id" FROM ${ident(scope.collection.name)} AS "t0" WHERE "t0"."id" IN (${join(ids.map((id) => sql`${id}`), ', ')}) AND ${scope.owner}`, tx);
  if (owned.length !== ids.length) {
    throw new HttpError('FORBIDDEN', ids.length === 1
      ? `${scope.collection.name} ${JSON.stringify(ids[0])} belongs to another caller`
      : `some of the ${scope.collection.name} rows belong to another caller; nothing was changed`);
  }
}

/** 404 unless the row exists and meets the scope's conditions (views, policies); 403 when it fails `owner`. */
async function requireVisible(scope: WriteScope, tx: PrismaLike, id: string): Promise<void> {
  if (!scope.conditions?.length && !scope.owner) return; // the write itself answers P2025 → 404
  if ((await visibleIds(scope, tx, [id])).size === 0) throw notFound(scope.collection.name, id);
  await requireOwned(scope, tx, [id]);
}

async function inTransaction<T>(scope: WriteScope, fn: (tx: PrismaLike) => Promise<T>, id?: string): Promise<T> {
  try {
    return await scope.db.client.$transaction(fn, { timeout: 30_000, maxWait: 10_000 }); // ms
  } catch (err) {
    throw mapDatabaseError(err, scope.collection.name, id);
  }
}

/** Checks the lookups of every planned child row, then writes the children of one parent. */
async function writeChildrenOf(scope: WriteScope, tx: PrismaLike, parentId: string, plans: ChildPlan[], replaceMissing: boolean): Promise<void> {
  for (const plan of plans) {
    const rows = [...plan.creates, ...plan.updates];
    await checkLookups(scope, tx, rows.map((r) => r.data), rows.map((r) => r.path), plan.writer.collection);
  }
  const details = await writeChildren(scope.db, tx, parentId, plans, { replaceMissing, callerId: scope.callerId, access: scope.access });
  if (details.length > 0) throw validationFailed(details);
}

/** Checks a body and its child arrays; every problem is collected. */
function checkBody(scope: WriteScope, body: unknown, mode: WriteMode, basePath: string): { details: ErrorDetail[]; plans: ChildPlan[] } {
  const details = scope.checker.check(body, mode, basePath);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { details, plans: [] };
  const children = planChildren(scope.collection, body as Record<string, unknown>, basePath, scope.writerOf);
  return { details: [...details, ...children.details], plans: children.plans };
}

/**
 * POST: creates one row (object body) or several (array body), all or nothing.
 * @returns the new ids in request order
 * @throws HttpError VALIDATION_FAILED (400) listing every bad value, with `/index/property` paths for arrays
 * Source: SPEC §4.1 rule 1.
 */
export async function createItems(scope: WriteScope, body: unknown): Promise<string[]> {
  const items = Array.isArray(body) ? body : [body];
  if (Array.isArray(body) && body.length === 0) throw validationFailed([{ path: '/', message: 'the array must hold at least one object' }]);
  const basePaths = Array.isArray(body) ? items.map((_, i) => `/${i}`) : [''];
  const checked = items.map((item, i) => checkBody(scope, item, 'create', basePaths[i]));
  const details = checked.flatMap((c) => c.details);
  if (details.length > 0) throw validationFailed(details);
  const rows = items.map((item) => ({
    id: uuidv7(),
    ...toPrismaData(scope.collection, item as Record<string, unknown>, 'create'),
    createdBy: scope.callerId,
  }));
  await inTransaction(scope, async (tx) => {
    await checkLookups(scope, tx, rows, basePaths);
    if (rows.length === 1) await delegateOf(tx, scope.delegate).create({ data: rows[0] });
    else await delegateOf(tx, scope.delegate).createMany({ data: rows });
    for (const [i, c] of checked.entries()) if (c.plans.length > 0) await writeChildrenOf(scope, tx, rows[i].id, c.plans, false);
  });
  return rows.map((r) => r.id);
}

/**
 * PUT (`replace`: omitted properties become their default or null) or PATCH (`merge`).
 * @throws HttpError NOT_FOUND (404) when no row has the id; VALIDATION_FAILED (400)
 * Source: SPEC §4.1 rule 3.
 */
export async function updateItem(scope: WriteScope, id: string, body: unknown, mode: Exclude<WriteMode, 'create'>): Promise<void> {
  if (!UUID.test(id)) throw notFound(scope.collection.name, id);
  const { details, plans } = checkBody(scope, body, mode, '');
  if (details.length > 0) throw validationFailed(details);
  const data = toPrismaData(scope.collection, body as Record<string, unknown>, mode);
  await inTransaction(scope, async (tx) => {
    await requireVisible(scope, tx, id.toLowerCase());
    await checkLookups(scope, tx, [data], ['']);
    await delegateOf(tx, scope.delegate).update({ where: { id: id.toLowerCase() }, data });
    if (plans.length > 0) await writeChildrenOf(scope, tx, id.toLowerCase(), plans, true);
  }, id);
}

/** DELETE one. @throws HttpError NOT_FOUND (404); CONFLICT (409) when a required lookup still points at it. */
export async function deleteItem(scope: WriteScope, id: string): Promise<void> {
  if (!UUID.test(id)) throw notFound(scope.collection.name, id);
  await inTransaction(scope, async (tx) => {
    await requireVisible(scope, tx, id.toLowerCase());
    await delegateOf(tx, scope.delegate).delete({ where: { id: id.toLowerCase() } });
  }, id);
}

/**
 * Bulk DELETE with a JSON array of ids: all are deleted or none.
 * @throws HttpError VALIDATION_FAILED (400) for a body that is not a non-empty array of GUIDs;
 *   NOT_FOUND (404) naming the ids that do not exist (nothing deleted)
 * Source: SPEC §4.1 rule 2; DESIGN §4 (bulk DELETE with an unknown id → 404).
 */
export async function deleteItems(scope: WriteScope, body: unknown): Promise<void> {
  if (!Array.isArray(body) || body.length === 0) {
    throw validationFailed([{ path: '/', message: 'the body must be a non-empty JSON array of ids' }]);
  }
  const bad = body.map((v, i) => [v, i] as const).filter(([v]) => typeof v !== 'string' || !UUID.test(v));
  if (bad.length > 0) throw validationFailed(bad.map(([, i]) => ({ path: `/${i}`, message: 'must be a GUID' })));
  const ids = [...new Set((body as string[]).map((v) => v.toLowerCase()))];
  await inTransaction(scope, async (tx) => {
    if ((scope.conditions?.length || scope.owner) && (await visibleIds(scope, tx, ids)).size !== ids.length) {
      throw new HttpError('NOT_FOUND', `some of the ${ids.length} ${scope.collection.name} ids were not found; nothing was deleted`);
    }
    await requireOwned(scope, tx, ids);
    const { count } = await delegateOf(tx, scope.delegate).deleteMany({ where: { id: { in: ids } } });
    if (count !== ids.length) {
      // Throwing inside the transaction rolls the partial delete back.
      throw new HttpError('NOT_FOUND', `${ids.length - count} of the ${ids.length} ${scope.collection.name} ids were not found; nothing was deleted`);
    }
  });
}
