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
import { columnsOf, rowDecoder, type Item, type RowDecoder } from './row-codec.js';
import type { ReadScope } from './read.js';

/** At most this many properties per JSON object (PostgreSQL functions take at most 100 arguments). */
const MAX_PAIRS = 50;

/** One lookup expanded in SQL: the row key of its JSON column and how to decode the object. */
interface SqlLookup {
  property: string;
  column: string;
  decode: RowDecoder;
}

/** The extra select-list columns of a read, and what to do with them once the rows are back. */
export interface SqlLookups {
  /** Select-list entries to append (each `(SELECT ...) AS "<property>.row"`). */
  columns: Sql[];
  /** Names of the lookup properties expanded here (the others, if any, are left to `expandLookups`). */
  expanded: Set<string>;
  /** True when every subselect is unconditioned (no read rules on the target): still a point read. */
  plain: boolean;
  /** Replaces each expanded lookup `{ id }` of the decoded `items` with its row, from the raw `rows`. */
  apply(rows: readonly Record<string, unknown>[], items: Item[]): void;
}

/** The JSON value of one stored column: SQLite REALs as 17 significant digits (its JSON keeps only 15). */
function jsonValue(provider: DatabaseProvider, target: Collection, alias: string, column: string): Sql {
  const ref = ident(alias, column);
  const p = target.properties.find((q) => q.name === column);
  if (provider === 'sqlite' && p?.type === 'decimal') return sql`CASE WHEN typeof(${ref}) = 'real' THEN printf('%.17g', ${ref}) ELSE ${ref} END`;
  return ref;
}

function jsonObject(provider: DatabaseProvider, target: Collection, alias: string, columns: readonly string[]): Sql {
  const pairs = columns.map((c) => sql`'${raw(c)}', ${jsonValue(provider, target, alias, c)}`);
  return sql`${raw(provider === 'postgresql' ? 'json_build_object' : 'json_object')}(${join(pairs, ', ')})`;
}

/**
 * The lookups of `scope.collection` to expand in the read's statement (row alias `t0`): those read
 * (`selection`, when given, names them) whose target the caller may read. A target with more than 50
 * selected columns is left to `expandLookups`.
 */
export function sqlLookups(scope: ReadScope, selection: Selection | undefined): SqlLookups {
  const columns: Sql[] = [];
  const lookups: SqlLookup[] = [];
  let plain = true;
  const lookupProperties = scope.rows ? [] : scope.collection.properties.filter((p: Property) => p.type === 'lookup');
  for (const p of lookupProperties) {
    if (selection && !selection.fields.has(p.name)) continue;
    const target = scope.manifest.collections.find((c) => c.name === p.collection)!;
    const targetColumns = columnsOf(target, selection?.nested.get(p.name));
    if (targetColumns.length > MAX_PAIRS) continue;
    const alias = `t0_lk${lookups.length + 1}`;
    const readable = scope.readableOf ? scope.readableOf(target.name, alias) : [];
    if (readable === null) continue; // the caller may not read the target: lookups stay { id }
    if (readable.length > 0) plain = false;
    const column = `${p.name}.row`;
    columns.push(
      sql`(SELECT ${jsonObject(scope.db.provider, target, alias, targetColumns)} FROM ${ident(target.name)} AS ${ident(alias)} WHERE ${ident(alias, 'id')} = ${ident('t0', p.name)}${andAll(readable)}) AS ${raw(`"${column}"`)}`,
    );
    lookups.push({ property: p.name, column, decode: rowDecoder(target, targetColumns) });
  }
  return {
    columns,
    expanded: new Set(lookups.map((l) => l.property)),
    plain,
    apply(rows, items) {
      for (let i = 0; i < rows.length; i++) {
        for (const l of lookups) {
          const value = rows[i][l.column];
          if (value === null || value === undefined) continue; // no row, or hidden: stays { id }
          items[i][l.property] = l.decode((typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>);
        }
      }
    },
  };
}
