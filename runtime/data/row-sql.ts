/**
 * @module Rows as SQL: a validated body → column values (defaults applied, values converted to what
 * the column stores), and the INSERT / SET fragments built from them. Column names are the property
 * names (DESIGN §3); blob columns are written by the blob endpoints only.
 */
import type { Collection, Property } from '../manifest.js';
import { ident, join, sql, type Sql } from '../query/sql.js';
import type { WriteMode } from './input.js';
import { PROPERTY_TYPE_TABLE } from '../contract/property-types.js';

/** Column name → value (JS values; the database layer encodes them per provider). */
export type Row = Record<string, unknown>;

const writable = (c: Collection) => c.properties.filter((p) => p.type !== 'blob');

/** A body value → the column's value (the type's `encode`, `contract/property-types.ts`). */
function convert(p: Property, v: unknown, now: Date): unknown {
  return v === null ? null : PROPERTY_TYPE_TABLE[p.type].encode(v, now);
}

/**
 * Column values of one checked body: `create` and `replace` give every writable property (its
 * default or null when omitted); `merge` only those present.
 */
export function rowValues(c: Collection, body: Record<string, unknown>, mode: WriteMode, now: Date): Row {
  const row: Row = {};
  for (const p of writable(c)) {
    let v = body[p.name];
    if (v === undefined) {
      if (mode === 'merge') continue;
      v = p.default === undefined ? null : p.default;
    }
    row[p.name] = convert(p, v, now);
  }
  return row;
}

/** The lookup values of a row (for a change's `lookupIds`). */
export function lookupValues(c: Collection, row: Row): unknown[] {
  const out: unknown[] = [];
  for (const p of c.properties) if (p.type === 'lookup' && row[p.name] != null) out.push(String(row[p.name]));
  return out;
}

/** The `INSERT … VALUES (?, …)` text of one row, by collection and column list (a bounded set: the manifest's). */
const oneRowTexts = new Map<string, string>();

/** `INSERT INTO "C" (cols) VALUES (...), (...)`: one statement for every row (same keys in each). */
export function insertRows(c: Collection, rows: Row[]): Sql {
  const columns = Object.keys(rows[0]);
  if (rows.length === 1) {
    const key = `${c.name}\0${columns.join('\0')}`;
    let text = oneRowTexts.get(key);
    if (text === undefined) {
      text = insertRowsText(c, rows).text;
      if (oneRowTexts.size < 1000) oneRowTexts.set(key, text);
    }
    const row = rows[0];
    return { text, values: columns.map((k) => row[k]) };
  }
  return insertRowsText(c, rows);
}

function insertRowsText(c: Collection, rows: Row[]): Sql {
  const columns = Object.keys(rows[0]);
  const values = rows.map(
    (r) =>
      sql`(${join(
        columns.map((k) => sql`${r[k]}`),
        ', ',
      )})`,
  );
  return sql`INSERT INTO ${ident(c.name)} (${join(
    columns.map((k) => ident(k)),
    ', ',
  )}) VALUES ${join(values, ', ')}`;
}

/** `"a" = ?, "b" = ?` for an UPDATE. */
export function setList(row: Row): Sql {
  return join(
    Object.entries(row).map(([k, v]) => sql`${ident(k)} = ${v}`),
    ', ',
  );
}
