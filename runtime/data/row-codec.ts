/**
 * @module Turns database rows into the JSON items of SPEC §2: types normalised the same on SQLite
 * and PostgreSQL (decimals as numbers, dates as `YYYY-MM-DD`, date-times as ISO 8601 UTC, lookups
 * as `{ id }` until expanded), keys in a fixed order: `id`, properties, system fields.
 */
import type { Collection, Property } from '../manifest.js';
import { SYSTEM_COLUMN_NAMES } from '../contract/system-fields.js';
import { PROPERTY_TYPE_TABLE } from '../contract/property-types.js';
import type { BlobMetadata } from '../contract/property-values.js';
import { signedMetadata } from '../blobs/signed-url.js';

export type Item = Record<string, unknown>;
export const SYSTEM_COLUMNS = SYSTEM_COLUMN_NAMES;

/** One stored value → its JSON form for the property's type (the type's `decode`, `contract/property-types.ts`). */
export function decodeValue(p: Pick<Property, 'type'>, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  return PROPERTY_TYPE_TABLE[p.type].decode(v);
}

/**
 * Column names to read for a collection, optionally restricted to `fields` (always with `id`).
 * `system: false` leaves out `createdAt`, `updatedAt`, `createdBy` (query rows have none).
 */
export function columnsOf(c: Collection, fields?: ReadonlySet<string>, system = true): string[] {
  const all = ['id', ...c.properties.map((p) => p.name), ...(system ? SYSTEM_COLUMNS : [])];
  return fields ? all.filter((name) => fields.has(name)) : all;
}

/** How one column of a row becomes a value of the item. */
export type ColumnDecoder = (v: unknown) => unknown;
/** A raw row → an item; see `rowDecoder`. */
export type RowDecoder = (row: Record<string, unknown>) => Item;

const idJson: ColumnDecoder = (v) => (v === null || v === undefined ? null : String(v));
const decodeDateTime = PROPERTY_TYPE_TABLE['date-time'].decode;
const dateTimeColumn: ColumnDecoder = (v) => (v === null || v === undefined ? null : decodeDateTime(v));

const propertyDecoders = new WeakMap<Collection, Map<string, ColumnDecoder>>();

/** The decoder of one column of `c` (a property or a system field). @throws Error when `c` has no such column */
export function columnDecoder(c: Collection, name: string): ColumnDecoder {
  if (name === 'id' || name === 'createdBy') return idJson;
  if (name === 'createdAt' || name === 'updatedAt') return dateTimeColumn;
  let byName = propertyDecoders.get(c);
  if (!byName) propertyDecoders.set(c, (byName = new Map()));
  let decode = byName.get(name);
  if (!decode) {
    const p = c.properties.find((q) => q.name === name);
    if (!p) throw new Error(`${c.name} has no column ${name}`);
    const typed = PROPERTY_TYPE_TABLE[p.type].decode;
    // A blob's url is signed as it is read (DESIGN §11 "Blob URLs"): its expiry moves with the clock.
    decode =
      p.type === 'blob'
        ? (v) => (v === null || v === undefined ? null : signedMetadata(c, typed(v) as BlobMetadata | null))
        : (v) => (v === null || v === undefined ? null : typed(v));
    byName.set(name, decode);
  }
  return decode;
}

/**
 * Builds a decoder of rows holding exactly `columns` (in `columnsOf` order, each with its decoder
 * `steps[i]`). The row object itself becomes the item: its keys are already the columns in item order,
 * so each value is replaced in place (no second object per row). A column missing from a row reads as null.
 */
export function decoderOf(columns: readonly string[], steps: readonly ColumnDecoder[]): RowDecoder {
  const names = [...columns];
  return (row) => {
    for (let i = 0; i < names.length; i++) {
      const v = row[names[i]];
      row[names[i]] = steps[i](v === undefined ? null : v);
    }
    return row;
  };
}

const decoders = new WeakMap<Collection, Map<string, RowDecoder>>();

/**
 * The decoder of rows of `c` holding exactly `columns` (see `decoderOf`): the same item as `decodeRow`,
 * with the per-column work chosen once per collection and column list, then cached.
 * @throws Error for a column `c` does not have
 */
export function rowDecoder(c: Collection, columns: readonly string[]): RowDecoder {
  let byColumns = decoders.get(c);
  if (!byColumns) decoders.set(c, (byColumns = new Map()));
  const key = columns.join(',');
  let decode = byColumns.get(key);
  if (!decode) {
    decode = decoderOf(
      columns,
      columns.map((n) => columnDecoder(c, n)),
    );
    byColumns.set(key, decode);
  }
  return decode;
}

/** A raw row (only the columns read) → an item with normalised values. */
export function decodeRow(c: Collection, row: Record<string, unknown>): Item {
  // A query group whose key is null has a null id; every table row has one.
  const item: Item = { id: row.id === null ? null : String(row.id) };
  for (const p of c.properties) if (p.name in row) item[p.name] = decodeValue(p, row[p.name]);
  if ('createdAt' in row) item.createdAt = decodeValue({ type: 'date-time' }, row.createdAt);
  if ('updatedAt' in row) item.updatedAt = decodeValue({ type: 'date-time' }, row.updatedAt);
  if ('createdBy' in row) item.createdBy = row.createdBy === null ? null : String(row.createdBy);
  return item;
}
