/**
 * @module Nested children (SPEC §4.4): the body key `<Child>.<lookup>` in POST, PUT and PATCH holds
 * the parent's child rows. Children with `id` are updated (merge), without `id` created; on PUT and
 * PATCH, existing children missing from the array are deleted. One level deep only. The parent's
 * transaction covers every child write, so any failure leaves the database as it was.
 */
import { v7 as uuidv7 } from 'uuid';
import type { ChildRelation, Collection } from '../manifest.js';
import type { ErrorDetail } from '../errors.js';
import { pointerSegment } from '../errors.js';
import { HttpError } from '../errors.js';
import { UUID } from '../query/list-params.js';
import { andAll, ident, join, sql, type Sql } from '../query/sql.js';
import type { Database, Tx } from './database.js';
import type { InputChecker } from './input.js';
import { insertRows, lookupValues, rowValues, setList, type Row } from './row-sql.js';
import type { UnitOfWork } from './unit-of-work.js';
import { MAX_CHILDREN_PER_PARENT } from '../contract/limits.js';

const PLACEHOLDER_ID = '00000000-0000-4000-8000-000000000000';

/**
 * How writes reach rows of other collections for a caller (nested children, lookup targets), from the
 * authorization point. Absent: no restriction.
 */
export interface WriteAccess {
  /** Policy conditions (alias `t0`) on rows of `collection`: rows failing them count as absent. */
  visibility(collection: string): Sql[];
  /**
   * Conditions (alias `t0`) on rows of `collection` the caller could GET under its own rules and
   * policies (`_CREATOR`: own rows only; no GET rule: `1=0`). A lookup may name only such rows.
   */
  readable(collection: string): Sql[];
  /**
   * Admits `method` on `collection` under its own rules (throws 401/403), returning the `_CREATOR`
   * condition (alias `t0`) rows must meet, or null.
   */
  grant(collection: Collection, method: 'POST' | 'PATCH' | 'DELETE'): Sql | null;
}

/** What a write needs to know about any collection it touches: the collection and its input checker. */
export interface CollectionWriter {
  collection: Collection;
  checker: InputChecker;
}

/** One child relation's array from a body, checked and ready to write. */
export interface ChildPlan {
  relation: ChildRelation;
  writer: CollectionWriter;
  creates: { data: Record<string, unknown>; path: string }[];
  updates: { id: string; data: Record<string, unknown>; path: string }[];
}

/**
 * Checks the child arrays of one parent body (at `basePath`).
 * @returns the plans and every problem found (paths like `/OrderLine.order/2/quantity`)
 */
export function planChildren(
  parent: Collection,
  body: Record<string, unknown>,
  basePath: string,
  writerOf: (name: string) => CollectionWriter,
  now: Date,
): { plans: ChildPlan[]; details: ErrorDetail[] } {
  const plans: ChildPlan[] = [];
  const details: ErrorDetail[] = [];
  for (const relation of parent.children) {
    if (!(relation.key in body)) continue;
    const keyPath = `${basePath}/${pointerSegment(relation.key)}`;
    const value = body[relation.key];
    if (!Array.isArray(value)) {
      details.push({ path: keyPath, message: `${relation.key} must be an array of ${relation.collection} objects` });
      continue;
    }
    if (value.length > MAX_CHILDREN_PER_PARENT) {
      details.push({ path: keyPath, message: `${relation.key} may hold at most ${MAX_CHILDREN_PER_PARENT} rows (got ${value.length})` });
      continue;
    }
    const writer = writerOf(relation.collection);
    const plan: ChildPlan = { relation, writer, creates: [], updates: [] };
    value.forEach((child, i) => {
      const path = `${keyPath}/${i}`;
      if (typeof child !== 'object' || child === null || Array.isArray(child)) {
        details.push({ path, message: `must be a ${relation.collection} object` });
        return;
      }
      const row = child as Record<string, unknown>;
      const nested = writer.collection.children.find((r) => r.key in row);
      if (nested) {
        details.push({ path: `${path}/${pointerSegment(nested.key)}`, message: 'nested children are limited to one level of depth' });
        return;
      }
      // The child's pointer to the parent is set by the service; whatever the body says is replaced
      // (by a placeholder while checking, by the parent's id when writing).
      const rest: Record<string, unknown> = { ...row, [relation.field]: { id: PLACEHOLDER_ID } };
      const id = row.id;
      if (id !== undefined && (typeof id !== 'string' || !UUID.test(id))) {
        details.push({ path: `${path}/id`, message: 'id must be the GUID of an existing child row' });
        return;
      }
      const problems = writer.checker.check(rest, id === undefined ? 'create' : 'merge', path);
      if (problems.length > 0) {
        details.push(...problems);
        return;
      }
      const data = rowValues(writer.collection, rest, id === undefined ? 'create' : 'merge', now);
      delete data[relation.field];
      if (id === undefined) plan.creates.push({ data, path });
      else plan.updates.push({ id: id.toLowerCase(), data, path });
    });
    plans.push(plan);
  }
  return { plans, details };
}

/** Refuses when some of `ids` fail the `_CREATOR` condition `owner`. */
async function requireOwned(db: Database, tx: Tx | undefined, collection: string, ids: string[], owner: Sql | null, verb: string): Promise<void> {
  if (!owner || ids.length === 0) return;
  const owned = await db.query<{ id: string }>(
    sql`SELECT "t0"."id" FROM ${ident(collection)} AS "t0" WHERE "t0"."id" IN (${join(
      ids.map((id) => sql`${id}`),
      ', ',
    )}) AND ${owner}`,
    tx,
  );
  if (owned.length !== ids.length) throw new HttpError('FORBIDDEN', `${verb} ${collection} rows created by another caller is not allowed`);
}

/**
 * Writes the planned children of one parent inside the caller's unit of work, registering every child
 * created, updated or deleted in its change set (under the child collection). With `access`, the child
 * collection's own rules apply: POST for creates, PATCH for updates, DELETE for removals (`_CREATOR`:
 * own rows only, else 403), and children hidden by its policies count as absent (never updated or removed).
 * @param replaceMissing - PUT/PATCH: delete existing children not named in the array
 * @returns details of children that belong to another parent (the caller turns them into a 400)
 * @throws HttpError UNAUTHORIZED / FORBIDDEN from `access.grant`
 */
export async function writeChildren(
  db: Database,
  work: UnitOfWork,
  parentId: string,
  plans: ChildPlan[],
  options: { replaceMissing: boolean; callerId: string | null; access?: WriteAccess; now: Date },
): Promise<ErrorDetail[]> {
  const details: ErrorDetail[] = [];
  const { access } = options;
  const { tx, changes } = work;
  for (const plan of plans) {
    const { relation, writer } = plan;
    const child = writer.collection;
    const table = ident(child.name);
    if (plan.creates.length > 0) access?.grant(child, 'POST');
    const visible = andAll(access?.visibility(relation.collection) ?? []);
    const existing = new Set(
      (await db.query<{ id: string }>(sql`SELECT "t0"."id" FROM ${table} AS "t0" WHERE ${ident('t0', relation.field)} = ${parentId}${visible}`, tx)).map((r) =>
        String(r.id),
      ),
    );
    for (const u of plan.updates) {
      if (!existing.has(u.id)) details.push({ path: `${u.path}/id`, message: `${relation.collection} ${u.id} is not a child of this row` });
    }
    if (details.length > 0) continue;
    if (plan.updates.length > 0 && access) {
      await requireOwned(
        db,
        tx,
        relation.collection,
        plan.updates.map((u) => u.id),
        access.grant(child, 'PATCH'),
        'updating',
      );
    }
    const returning = join([ident('id'), ...child.properties.filter((p) => p.type === 'lookup').map((p) => ident(p.name))], ', ');
    if (options.replaceMissing) {
      const keep = new Set(plan.updates.map((u) => u.id));
      const remove = [...existing].filter((id) => !keep.has(id));
      if (remove.length > 0 && access) await requireOwned(db, tx, relation.collection, remove, access.grant(child, 'DELETE'), 'deleting');
      if (remove.length > 0) {
        const blobs = child.properties.filter((p) => p.type === 'blob').map((p) => ident(p.name));
        const deleted = await db.query<Row>(
          sql`DELETE FROM ${table} WHERE "id" IN (${join(
            remove.map((id) => sql`${id}`),
            ', ',
          )}) RETURNING ${join([returning, ...blobs], ', ')}`,
          tx,
        );
        for (const r of deleted) for (const p of child.properties) if (p.type === 'blob') work.released.push(r[p.name]);
        changes.record(
          child.name,
          deleted.map((r) => String(r.id)),
          deleted.flatMap((r) => lookupValues(child, r)),
        );
      }
    }
    for (const u of plan.updates) {
      const updated = await db.query<Row>(
        sql`UPDATE ${table} SET ${setList({ ...u.data, updatedAt: options.now })} WHERE "id" = ${u.id} RETURNING ${returning}`,
        tx,
      );
      changes.record(
        child.name,
        [u.id],
        updated.flatMap((r) => lookupValues(child, r)),
      );
    }
    const rows: Row[] = plan.creates.map((c) => ({
      id: uuidv7(),
      ...c.data,
      [relation.field]: parentId,
      createdAt: options.now,
      updatedAt: options.now,
      createdBy: options.callerId,
    }));
    if (rows.length > 0) {
      await db.query(insertRows(child, rows), tx);
      changes.record(
        child.name,
        rows.map((r) => r.id as string),
        rows.flatMap((r) => lookupValues(child, r)),
      );
    }
  }
  return details;
}
