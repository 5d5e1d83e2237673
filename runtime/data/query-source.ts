/**
 * @module The SQL of a query definition (DESIGN §3 "Query"): one row per `from` row (join) or per
 * group (aggregate), as a subquery whose columns are `id` and the query's output fields. Reads of a
 * query are reads of that subquery (`runtime/data/read.ts` with `ReadScope.rows`), so `filter`,
 * `sortBy`, `select`, paging and `count` apply to output fields exactly as they do to properties.
 *
 * Joins (`LEFT JOIN` per lookup hop, shared by paths with a common prefix) read every target row as
 * the query's author exposed it; with `"joins": "caller"` the join's condition also holds the
 * caller's GET conditions on the target (rules, `_CREATOR`, policies), so a row the caller could not
 * GET joins as nulls, and a `groupBy` through it groups under null (DESIGN §4 "Queries").
 *
 * Child aggregates (`of`/`via`) are correlated subqueries of their own (`child-aggregates.ts`).
 *
 * Group ids are text in one canonical form on both databases: a lookup or guid key as the id itself,
 * integers as digits, booleans `true`/`false`, decimals without trailing zeros, dates `YYYY-MM-DD`,
 * date-times ISO 8601 UTC with milliseconds; several keys are joined with `|` (null → empty).
 */
import type { AppManifest, Collection, DatabaseProvider, Property, PropertyType, Query } from '../manifest.js';
import { compileFilter, resolvePath } from '../query/filter-compile.js';
import { parseFilter } from '../query/filter-parser.js';
import { andAll, ident, join, raw, sql, type Sql } from '../query/sql.js';
import { typeBehaviour } from '../contract/property-types.js';
import { isChildAggregate } from '../contract/manifest.js';
import { aggregateSql, childAggregateSql, type ChildAggregateOptions } from './child-aggregates.js';

/** Per-request inputs: conditions on the `from` rows (policies, alias `t0`), clock and caller. */
export interface QueryOptions {
  conditions?: Sql[];
  now?: Date;
  callerId?: string | null;
  /**
   * For `"joins": "caller"`: the conditions (on `alias`) under which the caller could GET rows of a
   * collection, or null when it may GET none (`readableConditions`). Absent: every joined row is read.
   */
  readableOf?: (collection: string, alias: string) => Sql[] | null;
}

const FROM_ALIAS = 't0';

/**
 * The output row of a query as a collection, so the list code, filter compiler and row codec read it
 * like a table: one property per output field (lookups keep their target). Built once per query.
 */
export function queryRowCollection(query: Query): Collection {
  const properties: Property[] = Object.entries(query.fields).map(([name, f]) => ({
    name,
    type: f.type,
    required: false,
    ...('collection' in f && f.collection ? { collection: f.collection } : {}),
  }));
  return { name: query.name, properties, search: false, access: query.access, policies: [], children: [] };
}

/**
 * Builds the subquery of `query` for one request: `(SELECT id, <fields> ...)`, to be aliased by the
 * reader; its `id` has the type `query.idType`.
 * @throws HttpError INVALID_FILTER (400) only if the definition's filter is invalid (checked at start-up)
 * Source: DESIGN §3 (queries: join without groupBy, aggregate with groupBy; `count sum avg min max`).
 */
export function querySource(manifest: AppManifest, query: Query, provider: DatabaseProvider, options: QueryOptions = {}): Sql {
  const from = manifest.collections.find((c) => c.name === query.from)!;
  const joins: Sql[] = [];
  const aliasOf = new Map<string, string>();
  /** `"joins": "caller"`: a joined row must be one the caller could GET, else the join finds nothing (nulls). */
  const callerJoin = (collection: string, alias: string): Sql => {
    if (query.joins !== 'caller' || !options.readableOf) return raw('');
    const readable = options.readableOf(collection, alias);
    return readable === null ? raw(' AND 1=0') : andAll(readable);
  };

  /** The column a dot path reaches, adding LEFT JOINs for its lookups (shared by paths with a common prefix). */
  const pathExpr = (path: string): { expr: Sql; type: PropertyType } => {
    const resolved = resolvePath({ manifest, collection: from }, path.split('.'));
    let alias = FROM_ALIAS;
    resolved.hops.forEach((hop, i) => {
      const key = resolved.hops
        .slice(0, i + 1)
        .map((h) => h.column)
        .join('.');
      let next = aliasOf.get(key);
      if (!next) {
        next = `j${aliasOf.size + 1}`;
        aliasOf.set(key, next);
        const on = sql`${ident(next, 'id')} = ${ident(alias, hop.column)}${callerJoin(hop.target.name, next)}`;
        joins.push(sql`LEFT JOIN ${ident(hop.target.name)} AS ${ident(next)} ON ${on}`);
      }
      alias = next;
    });
    return { expr: ident(alias, resolved.column), type: resolved.type };
  };

  const columns: Sql[] = [];
  const groupBy: Sql[] = [];
  if (query.groupBy?.length) {
    const keys = query.groupBy.map(pathExpr);
    groupBy.push(...keys.map((k) => k.expr));
    if (query.idType === 'guid') {
      columns.push(sql`${keys[0].expr} AS "id"`);
    } else {
      const texts = keys.map((k) => canonicalText(provider, k.expr, k.type));
      const id =
        texts.length === 1
          ? texts[0]
          : join(
              texts.map((t) => sql`COALESCE(${t}, '')`),
              ` || '|' || `,
            );
      columns.push(sql`${id} AS "id"`);
    }
  } else {
    columns.push(sql`${ident(FROM_ALIAS, 'id')} AS "id"`);
  }
  let children = 0;
  for (const [name, field] of Object.entries(query.fields)) {
    if (isChildAggregate(field)) {
      columns.push(sql`${childAggregateSql(manifest, provider, field, FROM_ALIAS, `c${++children}`, childOptions(query, options))} AS ${ident(name)}`);
      continue;
    }
    const { expr, type } = pathExpr(field.path);
    if ('aggregate' in field) {
      columns.push(sql`${aggregateSql(provider, field.aggregate, expr, type)} AS ${ident(name)}`);
    } else {
      columns.push(sql`${expr} AS ${ident(name)}`);
      if (query.groupBy?.length) groupBy.push(expr);
    }
  }

  const conditions = [...(options.conditions ?? [])];
  if (query.filter) {
    conditions.push(
      compileFilter(parseFilter(query.filter), {
        manifest,
        collection: from,
        provider,
        alias: FROM_ALIAS,
        now: options.now,
        callerId: options.callerId,
        // With caller joins, a dot path of the definition's filter sees only rows the caller could GET.
        ...(query.joins === 'caller' && options.readableOf && { readableOf: options.readableOf }),
      }),
    );
  }
  const where = conditions.length
    ? sql` WHERE ${join(
        conditions.map((c) => sql`(${c})`),
        ' AND ',
      )}`
    : raw('');
  const grouped = groupBy.length ? sql` GROUP BY ${join(groupBy, ', ')}` : raw('');
  const joined = joins.length ? sql` ${join(joins, ' ')}` : raw('');
  return sql`(SELECT ${join(columns, ', ')} FROM ${ident(from.name)} AS ${ident(FROM_ALIAS)}${joined}${where}${grouped})`;
}

/** What a child aggregate needs of the request: clock, caller, and the caller's GET conditions with `"joins": "caller"`. */
function childOptions(query: Query, options: QueryOptions): ChildAggregateOptions {
  return {
    now: options.now,
    callerId: options.callerId,
    ...(query.joins === 'caller' && options.readableOf && { readableOf: options.readableOf }),
  };
}

/** A group key as canonical text (see the module comment; the type's `groupKey`); null stays null. */
function canonicalText(provider: DatabaseProvider, expr: Sql, type: PropertyType): Sql {
  const pieces = typeBehaviour(type).groupKey[provider].split('{}');
  return join(
    pieces.flatMap((text, i) => (i === 0 ? [raw(text)] : [expr, raw(text)])),
    '',
  );
}
