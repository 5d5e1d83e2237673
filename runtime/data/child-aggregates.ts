/**
 * @module Child aggregates of a query (DESIGN §3 "Child aggregates"): a field such as
 * `{ "count": "id", "of": "Rsvp", "via": "event" }` counts (sums, averages…) the rows of `of` whose
 * lookup `via` points at the query's `from` row. Each one is a correlated scalar subquery in the
 * query's select list, so it is a column of the query's row like any other (filter, sortBy, select,
 * paging and count apply to it) and every read stays one statement:
 *
 *   `(SELECT COUNT("c1"."id") FROM "Rsvp" AS "c1" WHERE "c1"."event" = "t0"."id" AND (<filter>) AND (<caller's GET conditions>))`
 *
 * The path may walk the child's lookups (`{ "sum": "product.price", "of": "OrderLine", "via": "order" }`):
 * one LEFT JOIN per hop inside the subquery.
 *
 * An aggregate over no rows is the outer join DESIGN asks for, on both databases: `COUNT` gives 0,
 * `SUM AVG MIN MAX` give null. Child rows are joined rows: read as the query exposes them, or, with
 * `"joins": "caller"`, only those the caller could GET (rules incl. `_CREATOR`, and policies) — the
 * same `readableOf` conditions lookup joins use (`query-source.ts`).
 */
import type { AppManifest, ChildAggregateField, Collection, DatabaseProvider, PropertyType } from '../manifest.js';
import { compileFilter, resolvePath } from '../query/filter-compile.js';
import { parseFilter } from '../query/filter-parser.js';
import { andAll, ident, join, raw, sql, type Sql } from '../query/sql.js';
import { typeBehaviour } from '../contract/property-types.js';

/** Per-request inputs of a child aggregate. */
export interface ChildAggregateOptions {
  /** The request time, for `now()` in the child filter. */
  now?: Date;
  /** The caller's id, for `me()` in the child filter. */
  callerId?: string | null;
  /**
   * Set only for `"joins": "caller"`: the conditions (on `alias`) under which the caller could GET
   * rows of a collection, or null when it may GET none (`readableConditions`). Absent: every child
   * row counts.
   */
  readableOf?: (collection: string, alias: string) => Sql[] | null;
}

/**
 * `fn(expr)` for a query aggregate, with the casts PostgreSQL needs (no min/max over uuid or boolean
 * there). Shared by grouped aggregates (`query-source.ts`) and child aggregates.
 */
export function aggregateSql(provider: DatabaseProvider, fn: string, expr: Sql, type: PropertyType): Sql {
  const name = raw(fn.toUpperCase());
  const minMax = provider === 'postgresql' && (fn === 'min' || fn === 'max') ? typeBehaviour(type).postgresMinMax : undefined;
  if (minMax === 'cast-text') return sql`${name}(CAST(${expr} AS TEXT))`;
  if (minMax === 'bool-and-or') return fn === 'min' ? sql`BOOL_AND(${expr})` : sql`BOOL_OR(${expr})`;
  return sql`${name}(${expr})`;
}

/**
 * The scalar subquery of one child aggregate, correlated with the `from` row at `parentAlias`.
 * @param alias - the child rows' alias, unique in the statement (e.g. `c1`)
 * @throws HttpError INVALID_FILTER (400) only if the definition's child filter is invalid (`svc generate` checks it)
 * Source: DESIGN §3 (child aggregates: `of`, `via`, `filter`; 0 / null for a row without children), §4 "Queries" (joins).
 */
export function childAggregateSql(
  manifest: AppManifest,
  provider: DatabaseProvider,
  field: ChildAggregateField,
  parentAlias: string,
  alias: string,
  options: ChildAggregateOptions = {},
): Sql {
  const child = manifest.collections.find((c) => c.name === field.of)!;
  const { joins, expr, type } = childPath(manifest, child, field.path, alias, options);
  const conditions: Sql[] = [];
  if (field.filter) {
    conditions.push(
      compileFilter(parseFilter(field.filter), {
        manifest,
        collection: child,
        provider,
        alias,
        now: options.now,
        callerId: options.callerId,
        ...(options.readableOf && { readableOf: options.readableOf }),
      }),
    );
  }
  if (options.readableOf) {
    const readable = options.readableOf(child.name, alias);
    conditions.push(...(readable === null ? [raw('1=0')] : readable));
  }
  const value = aggregateSql(provider, field.aggregate, expr, type);
  return sql`(SELECT ${value} FROM ${ident(child.name)} AS ${ident(alias)}${joins} WHERE ${ident(alias, field.via)} = ${ident(parentAlias, 'id')}${andAll(conditions)})`;
}

/**
 * The column a child aggregate's path reaches from the child row at `alias`: the child's own column,
 * or, for a dot path (`product.price`), a LEFT JOIN per lookup hop (`<alias>_j1`, …). With caller
 * joins a looked-up row the caller could not GET joins as nulls, as in the query's own joins.
 */
function childPath(
  manifest: AppManifest,
  child: Collection,
  path: string,
  alias: string,
  options: ChildAggregateOptions,
): { joins: Sql; expr: Sql; type: PropertyType } {
  const resolved = resolvePath({ manifest, collection: child }, path.split('.'));
  const joins: Sql[] = [];
  let current = alias;
  resolved.hops.forEach((hop, i) => {
    const next = `${alias}_j${i + 1}`;
    const readable = options.readableOf ? options.readableOf(hop.target.name, next) : [];
    const caller = readable === null ? raw(' AND 1=0') : andAll(readable);
    joins.push(sql` LEFT JOIN ${ident(hop.target.name)} AS ${ident(next)} ON ${ident(next, 'id')} = ${ident(current, hop.column)}${caller}`);
    current = next;
  });
  return { joins: join(joins, ''), expr: ident(current, resolved.column), type: resolved.type };
}
