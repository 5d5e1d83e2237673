/**
 * @module Lookup expansion (`lookups=full`, SPEC §4.2) inside the read's own statement: each expanded
 * lookup is one more column of the page query, a scalar subselect that builds the looked-up row as a
 * JSON object (`json_build_object` on PostgreSQL, `json_object` on SQLite) under the caller's read
 * conditions on the target collection. A target the caller may not read, or a row the conditions hide,
 * gives NULL, and the lookup stays `{ id }`, as with the separate `IN (...)` read (`expandLookups`).
 * The object's values are the stored ones (SQLite decimals as 17-digit text, so no digit is lost in the
 * JSON) and are decoded by the target's row decoder, so an expanded row reads exactly as a row of the
 * target read on its own.
 */
import type { Collection, DatabaseProvider, Property } from '../manifest.js';
import type { Selection } from '../query/select.js';
import { andAll, ident, join, raw, sql, type Sql } from '../query/sql.js';
import { columnDecoder, columnsOf, decoderOf, type ColumnDecoder, type RowDecoder } from './row-codec.js';
import type { ReadScope } from './read-scope.js';

/** At most this many properties per JSON object (PostgreSQL functions take at most 100 arguments). */
const MAX_PAIRS = 50;

/** The lookups of a read expanded in its own statement, and how to decode its rows. */
export interface SqlLookups {
  /** Select-list entry of each expanded lookup column, by property name (aliased with that name). */
  columns: Map<string, Sql>;
  /** True when every subselect is unconditioned (no read rules on the target): still a point read. */
  plain: boolean;
  /** Decodes a row of the read (`columns` of the collection, expanded lookups included), in place. */
  decode: RowDecoder;
}

/**
 * The JSON value of one stored column: PostgreSQL date-times as ISO 8601 UTC text, SQLite REALs as 17
 * significant digits (its JSON keeps only 15); the rest as stored (decoded by the row codec).
 */
function jsonValue(provider: DatabaseProvider, target: Collection, alias: string, column: string): Sql {
  const ref = ident(alias, column);
  const type = target.properties.find((q) => q.name === column)?.type ?? (column === 'createdAt' || column === 'updatedAt' ? 'date-time' : 'string');
  if (provider === 'postgresql' && type === 'date-time') return sql`to_char(${ref} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  if (provider === 'sqlite' && type === 'decimal') return sql`CASE WHEN typeof(${ref}) = 'real' THEN printf('%!.17g', ${ref}) ELSE ${ref} END`;
  return ref;
}

const objectFunction = (provider: DatabaseProvider) => raw(provider === 'postgresql' ? 'json_build_object' : 'json_object');

/** What a lookup's expansion needs that does not depend on the caller: built once per target and columns. */
interface Expansion {
  /** `json_build_object(...)`/`json_object(...)` of the target's row under `alias`. */
  object: Sql;
  decode: ColumnDecoder;
}

const expansions = new WeakMap<Collection, Map<string, Expansion>>();

function expansionOf(provider: DatabaseProvider, target: Collection, alias: string, columns: readonly string[]): Expansion {
  let byKey = expansions.get(target);
  if (!byKey) expansions.set(target, (byKey = new Map()));
  const key = `${provider} ${alias} ${columns.join(',')}`;
  let expansion = byKey.get(key);
  if (!expansion) {
    const pairs = columns.map((c) => sql`'${raw(c)}', ${jsonValue(provider, target, alias, c)}`);
    expansion = { object: sql`${objectFunction(provider)}(${join(pairs, ', ')})`, decode: expandedDecoder(target, columns) };
    byKey.set(key, expansion);
  }
  return expansion;
}

/**
 * The decoder of an expanded lookup column: the JSON object (parsed by pg; text from SQLite) decoded
 * in place by the target's row codec, or `{ id }` when the subselect found no row it may show.
 */
function expandedDecoder(target: Collection, columns: readonly string[]): ColumnDecoder {
  const decode = decoderOf(
    columns,
    columns.map((c) => columnDecoder(target, c)),
  );
  // The full object always has every selected key; the `{ id }` fallback has only `id`.
  const probe = columns.find((c) => c !== 'id');
  return (v) => {
    if (v === null) return null;
    const o = (typeof v === 'string' ? JSON.parse(v) : v) as Record<string, unknown>;
    return probe === undefined || probe in o ? decode(o) : { id: String(o.id) };
  };
}

/**
 * The lookups of `scope.collection` among `columns` (row alias `t0`) to expand in the read's statement:
 * each one whose target the caller may read (a target with more than 50 selected columns is left to
 * `expandLookups`). Each becomes `COALESCE((SELECT <object> FROM <target> WHERE id = t0.<lookup> AND
 * <read conditions>), <{ id }>)`, aliased with the lookup's name.
 */
export function sqlLookups(scope: ReadScope, columns: readonly string[], selection: Selection | undefined): SqlLookups {
  const { provider } = scope.db;
  const expressions = new Map<string, Sql>();
  const steps = columns.map((c) => columnDecoder(scope.collection, c));
  let plain = true;
  const lookupProperties = scope.rows ? [] : scope.collection.properties.filter((p: Property) => p.type === 'lookup' && columns.includes(p.name));
  for (const p of lookupProperties) {
    const target = scope.manifest.collections.find((c) => c.name === p.collection)!;
    const targetColumns = columnsOf(target, selection?.nested.get(p.name));
    if (targetColumns.length > MAX_PAIRS) continue;
    const alias = `t0_lk${expressions.size + 1}`;
    const readable = scope.readableOf ? scope.readableOf(target.name, alias) : [];
    if (readable === null) continue; // the caller may not read the target: lookups stay { id }
    if (readable.length > 0) plain = false;
    const key = ident('t0', p.name);
    const expansion = expansionOf(provider, target, alias, targetColumns);
    const row = sql`(SELECT ${expansion.object} FROM ${ident(target.name)} AS ${ident(alias)} WHERE ${ident(alias, 'id')} = ${key}${andAll(readable)})`;
    const bare = sql`CASE WHEN ${key} IS NULL THEN NULL ELSE ${objectFunction(provider)}('id', ${key}) END`;
    expressions.set(p.name, sql`COALESCE(${row}, ${bare}) AS ${ident(p.name)}`);
    steps[columns.indexOf(p.name)] = expansion.decode;
  }
  return { columns: expressions, plain, decode: decoderOf(columns, steps) };
}
