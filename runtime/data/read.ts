/**
 * @module Reads of a collection (SPEC §4.1–4.2): list with filter, sort, paging, keyset cursor,
 * count and select; one item by id; lookup expansion (`lookups=full`). Every statement is compiled
 * SQL with bound values, run through the Prisma client.
 */
import type { AppManifest, ChildRelation, Collection } from '../manifest.js';
import { HttpError } from '../errors.js';
import { compileFilter } from '../query/filter-compile.js';
import { parseFilter } from '../query/filter-parser.js';
import type { ListParams, SortSpec } from '../query/list-params.js';
import type { Selection } from '../query/select.js';
import { andAll, ident, join, raw, sql, type Sql } from '../query/sql.js';
import { sqlLookups } from './lookup-sql.js';
import type { ReadScope } from './read-scope.js';
import { columnsOf, rowDecoder, type Item } from './row-codec.js';
import { searchCondition } from './search.js';

export type { ReadScope } from './read-scope.js';

const ALIAS = 't0';
/** The id column of the row being read: `"t0"."id"`. */
const ID = ident(ALIAS, 'id');

/** How one item is shaped: selected fields, lookup form, child relations to include. */
export interface ItemOptions {
  selection?: Selection;
  lookups: 'id' | 'full';
  include?: readonly ChildRelation[];
}

function collectionNamed(manifest: AppManifest, name: string): Collection {
  return manifest.collections.find((c) => c.name === name)!;
}

/** What a read selects from: the collection's table, or a query's subquery, as alias `t0`. */
function source(scope: ReadScope): Sql {
  return sql`${scope.rows ? scope.rows.source : ident(scope.collection.name)} AS "${raw(ALIAS)}"`;
}

/** What narrows a read besides the scope's conditions: the request's filter and search words. */
export interface WhereOptions {
  filter?: string;
  search?: string[];
  /** Include the scope's `owner` condition (default true; single-row reads check it apart, for a 403). */
  withOwner?: boolean;
}

/** The WHERE clause (without the keyword): the scope's conditions, `owner`, the request's filter and search. */
export function whereClause(scope: ReadScope, { filter, search, withOwner = true }: WhereOptions = {}): Sql {
  const parts: Sql[] = [...(scope.conditions ?? [])];
  if (withOwner && scope.owner) parts.push(scope.owner);
  if (filter !== undefined) {
    const node = parseFilter(filter);
    parts.push(
      compileFilter(node, {
        manifest: scope.manifest,
        collection: scope.collection,
        provider: scope.db.provider,
        alias: ALIAS,
        callerId: scope.callerId ?? null,
        readableOf: scope.readableOf,
        ...(scope.rows && { queryRow: { idType: scope.rows.idType } }),
      }),
    );
  }
  if (search) parts.push(searchCondition(scope.db.provider, scope.collection, ALIAS, search));
  return parts.length === 0
    ? raw('1=1')
    : join(
        parts.map((p) => sql`(${p})`),
        ' AND ',
      );
}

const TEXT_TYPES = new Set(['string', 'text']);

/** ORDER BY with NULLs sorting as the largest value and byte-wise string order on both databases. */
function orderBy(scope: ReadScope, sort: SortSpec | undefined): Sql {
  if (!sort || sort.property === 'id') {
    const id = scope.rows?.idType === 'string' && scope.db.provider === 'postgresql' ? sql`${ID} COLLATE "C"` : ID;
    return sort?.descending ? sql`${id} DESC` : id;
  }
  const column = ident(ALIAS, sort.property);
  const type = scope.collection.properties.find((p) => p.name === sort.property)?.type ?? (sort.property === 'createdBy' ? 'string' : 'date-time');
  const collate = scope.db.provider === 'postgresql' && TEXT_TYPES.has(type) ? raw(' COLLATE "C"') : raw('');
  const dir = raw(sort.descending ? ' DESC' : '');
  return sql`(${column} IS NULL)${dir}, ${column}${collate}${dir}, ${ID}`;
}

function selectList(columns: string[], scope?: ReadScope, replaced?: ReadonlyMap<string, Sql>): Sql {
  return join(
    columns.map((c) => {
      const entry = replaced?.get(c);
      if (entry) return entry;
      // SQLite gives computed query columns (sum, avg, max of decimals) no declared type; the driver
      // would then type the column by its first value and truncate later ones if that was whole.
      // As text, each value keeps its digits (decoded to a number by the row codec).
      const decimal = scope?.rows && scope.db.provider === 'sqlite' && scope.collection.properties.find((p) => p.name === c)?.type === 'decimal';
      return decimal ? sql`CAST(${ident(ALIAS, c)} AS TEXT) AS ${ident(c)}` : ident(ALIAS, c);
    }),
    ', ',
  );
}

/**
 * Replaces each lookup `{ id }` of `items` with the looked-up row (or the selected part of it).
 * The looked-up row's own lookups stay `{ id }`. `done`: lookups already expanded in the read's own
 * statement (`lookup-sql.ts`). Source: SPEC §4.2 `lookups`.
 */
export async function expandLookups(scope: ReadScope, items: Item[], selection?: Selection, done?: ReadonlyMap<string, unknown>): Promise<void> {
  for (const p of scope.collection.properties) {
    if (p.type !== 'lookup' || (selection && !selection.fields.has(p.name)) || done?.has(p.name)) continue;
    const ids = [...new Set(items.map((i) => (i[p.name] as { id: string } | null)?.id).filter((id): id is string => !!id))];
    if (ids.length === 0) continue;
    const target = collectionNamed(scope.manifest, p.collection!);
    const nested = selection?.nested.get(p.name);
    const readable = scope.readableOf ? scope.readableOf(target.name) : [];
    if (readable === null) continue; // the caller may not read the target: lookups stay { id }
    const targetColumns = columnsOf(target, nested);
    const rows = await scope.db.query(
      sql`SELECT ${selectList(targetColumns)} FROM ${ident(target.name)} AS "${raw(ALIAS)}" WHERE ${ID} IN (${join(
        ids.map((id) => sql`${id}`),
        ', ',
      )})${andAll(readable)}`,
      scope.tx,
      { point: !readable?.length },
    );
    const decode = rowDecoder(target, targetColumns);
    const byId = new Map(rows.map((r) => [String(r.id), decode(r)]));
    for (const item of items) {
      const ref = item[p.name] as { id: string } | null;
      if (ref) item[p.name] = byId.get(ref.id) ?? ref;
    }
  }
}

/**
 * Puts each item's child rows under the relation's key (`OrderLine.order`), ordered by id. The
 * children's own lookups are bare id strings (DESIGN §4 "include").
 * Source: SPEC §4.2 `include`.
 */
export async function includeChildren(scope: ReadScope, items: Item[], relations: readonly ChildRelation[]): Promise<void> {
  if (items.length === 0) return;
  const parentIds = items.map((i) => i.id as string);
  for (const relation of relations) {
    const child = collectionNamed(scope.manifest, relation.collection);
    // Children are read under the child collection's own GET rule and policies (the route checked the rule).
    const readable = scope.readableOf ? scope.readableOf(child.name) : [];
    const childColumns = columnsOf(child);
    const rows =
      readable === null
        ? []
        : await scope.db.query(
            sql`SELECT ${selectList(childColumns)} FROM ${ident(child.name)} AS "${raw(ALIAS)}" WHERE ${ident(ALIAS, relation.field)} IN (${join(
              parentIds.map((id) => sql`${id}`),
              ', ',
            )})${andAll(readable)} ORDER BY ${ID}`,
            scope.tx,
          );
    const byParent = new Map<string, Item[]>(parentIds.map((id) => [id, []]));
    const decode = rowDecoder(child, childColumns);
    for (const row of rows) {
      const parentId = String(row[relation.field]);
      const childItem = decode(row);
      for (const p of child.properties) {
        if (p.type === 'lookup' && childItem[p.name]) childItem[p.name] = (childItem[p.name] as { id: string }).id;
      }
      byParent.get(parentId)?.push(childItem);
    }
    for (const item of items) item[relation.key] = byParent.get(item.id as string) ?? [];
  }
}

/**
 * A page of items and, when asked, the total count.
 * @throws HttpError INVALID_FILTER (400) for a malformed filter
 * Source: SPEC §4.2 (paging, keyset cursor, count, select, lookups).
 */
export async function listItems(scope: ReadScope, params: ListParams): Promise<{ data: Item[]; count?: number }> {
  const where = whereClause(scope, { filter: params.filter, search: params.search });
  const from = sql`FROM ${source(scope)} WHERE ${where}`;
  let count: number | undefined;
  if (params.count !== 'none') {
    const [row] = await scope.db.query<{ n: unknown }>(sql`SELECT COUNT(*) AS "n" ${from}`, scope.tx);
    count = Number(row.n);
    if (params.count === 'only') return { data: [], count };
  }
  const columns = columnsOf(scope.collection, params.selection?.fields, !scope.rows);
  const lookups = params.lookups === 'full' ? sqlLookups(scope, columns, params.selection) : null;
  const select = selectList(columns, scope, lookups?.columns);
  let statement: Sql;
  if (params.lastKey !== undefined) {
    // Keyset paging: ordered by id, exclusive cursor, sortBy and pageNo ignored (SPEC §4.2).
    statement = sql`SELECT ${select} ${from} AND ${ID} > ${params.lastKey} ORDER BY ${ID} LIMIT ${params.pageSize}`;
  } else {
    const offset = (params.pageNo - 1) * params.pageSize;
    statement = sql`SELECT ${select} ${from} ORDER BY ${orderBy(scope, params.sort)} LIMIT ${params.pageSize} OFFSET ${offset}`;
  }
  const rows = await scope.db.query(statement, scope.tx, { timesAsText: true });
  const data = rows.map(lookups ? lookups.decode : rowDecoder(scope.collection, columns));
  if (lookups) await expandLookups(scope, data, params.selection, lookups.columns);
  await includeChildren(scope, data, params.include);
  return { data, count };
}

/**
 * One item by id, or null when no visible row has that id.
 * @throws HttpError FORBIDDEN (403) when the row is visible but fails the scope's `owner` condition
 * Source: SPEC §4.1 (GET one); DESIGN §4 (a `_CREATOR` miss on a single row is 403).
 */
export async function findItem(scope: ReadScope, id: string, options: ItemOptions): Promise<Item | null> {
  const where = whereClause(scope, { withOwner: false });
  const columns = columnsOf(scope.collection, options.selection?.fields, !scope.rows);
  const from = sql`FROM ${source(scope)} WHERE ${where} AND ${ID} = ${id}`;
  const lookups = options.lookups === 'full' ? sqlLookups(scope, columns, options.selection) : null;
  const select = selectList(columns, scope, lookups?.columns);
  // By primary key: a point read, unless conditions (policies, a view, a query's joins) may scan.
  const point = !scope.rows && !scope.conditions?.length && (lookups?.plain ?? true);
  // A point read has few shapes per collection (its select list): kept prepared (PostgreSQL).
  const rows = await scope.db.query(sql`SELECT ${select} ${from}`, scope.tx, { point, prepare: point, timesAsText: true });
  if (rows.length === 0) return null;
  if (scope.owner && (await scope.db.query(sql`SELECT ${ID} ${from} AND ${scope.owner}`, scope.tx)).length === 0) {
    throw new HttpError('FORBIDDEN', `${scope.collection.name} ${JSON.stringify(id)} belongs to another caller`);
  }
  const item = (lookups ? lookups.decode : rowDecoder(scope.collection, columns))(rows[0]);
  if (lookups) await expandLookups(scope, [item], options.selection, lookups.columns);
  await includeChildren(scope, [item], options.include ?? []);
  return item;
}

/** Like `findItem`, but a missing row is 404 naming the collection and id. */
export async function getItem(scope: ReadScope, id: string, options: ItemOptions): Promise<Item> {
  const item = await findItem(scope, id, options);
  if (!item) throw notFound(scope.collection.name, id);
  return item;
}

export function notFound(collection: string, id: string): HttpError {
  return new HttpError('NOT_FOUND', `${collection} ${JSON.stringify(id)} was not found`);
}

/**
 * The stored value of one blob column of a visible row: the column's raw value (JSON text or null),
 * or undefined when no visible row has the id.
 * @throws HttpError FORBIDDEN (403) when the row is visible but fails the scope's `owner` condition
 * Source: SPEC §4.5 (download under the GET rule); DESIGN §4 "Blob details".
 */
export async function readBlobColumn(scope: ReadScope, id: string, field: string): Promise<unknown> {
  const where = whereClause(scope, { withOwner: false });
  const from = sql`FROM ${source(scope)} WHERE ${where} AND ${ID} = ${id}`;
  const owned = scope.owner ? sql`, CASE WHEN ${scope.owner} THEN 1 ELSE 0 END AS "owned"` : sql``;
  const rows = await scope.db.query(sql`SELECT ${ident(ALIAS, field)} AS "value"${owned} ${from}`, scope.tx, { point: !scope.conditions?.length });
  if (rows.length === 0) return undefined;
  if (scope.owner && Number(rows[0].owned) !== 1) throw new HttpError('FORBIDDEN', `${scope.collection.name} ${JSON.stringify(id)} belongs to another caller`);
  return rows[0].value;
}
