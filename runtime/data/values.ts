/**
 * @module Bound values as each database stores them. Every statement's values pass through
 * `encodeValue` before they reach a `SqlDriver`, so the rest of the runtime binds plain JS values
 * (Date, boolean, number, string, null) and never thinks about providers.
 *
 * - SQLite: a Date is ISO 8601 text with a `+00:00` offset (the format Prisma's SQLite adapter writes, so
 *   rows written before and after compare alike), a boolean is 0/1, a bigint stays a bigint.
 * - PostgreSQL: a Date is `YYYY-MM-DD HH:MM:SS.mmm` in UTC (sessions run with `TimeZone=UTC`), which a
 *   `date`, `timestamp` or `timestamptz` parameter all accept; booleans stay booleans.
 */
import type { DatabaseProvider } from '../manifest.js';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A Date as PostgreSQL text in UTC, e.g. `2024-01-31 10:00:00.000`. */
function pgDateTime(d: Date): string {
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
}

/** One bound value in the form `provider` stores; `undefined` becomes null. */
export function encodeValue(value: unknown, provider: DatabaseProvider): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return provider === 'sqlite' ? value.toISOString().replace('Z', '+00:00') : pgDateTime(value);
  if (typeof value === 'boolean' && provider === 'sqlite') return value ? 1 : 0;
  return value;
}

/** Every value of a statement, encoded for `provider`. */
export function encodeValues(values: readonly unknown[], provider: DatabaseProvider): unknown[] {
  const out = new Array<unknown>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = encodeValue(values[i], provider);
  return out;
}
