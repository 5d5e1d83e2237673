/**
 * @module Turns database rows into the JSON items of SPEC §2: types normalised the same on SQLite
 * and PostgreSQL (decimals as numbers, dates as `YYYY-MM-DD`, date-times as ISO 8601 UTC, lookups
 * as `{ id }` until expanded), keys in a fixed order: `id`, properties, system fields.
 */
import type { Collection, Property } from '../manifest.js';
import { SYSTEM_COLUMN_NAMES } from '../contract/system-fields.js';
import { PROPERTY_TYPE_TABLE } from '../contract/property-types.js';

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
