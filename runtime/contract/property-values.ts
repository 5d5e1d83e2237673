/**
 * @module Plain value helpers the property-type table (`./property-types.ts`) is written with: decimal
 * strings, ISO dates as filters and definition defaults spell them, and a blob column's stored JSON
 * (SPEC §4.5). No imports outside this folder (DESIGN §2), so the generator may use them too.
 */
import { DECIMAL_INTEGER_DIGITS } from './limits.js';

/** Decimal strings: an optional minus, 1–35 digits, optionally a point and digits (no exponent). */
export const DECIMAL_STRING_PATTERN = `^-?\\d{1,${DECIMAL_INTEGER_DIGITS}}(\\.\\d+)?$`;

/** A GUID in any case. */
export const GUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const FILTER_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** Whether `v` is a real calendar date `YYYY-MM-DD` (no 2023-02-30). */
export function isValidDate(v: string): boolean {
  const m = DATE.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/**
 * Parses an ISO 8601 date or date-time (`2024-01-31`, `2024-01-31T10:00`, `...:00.123+02:00`) as a
 * UTC instant; no offset means UTC. `dateOnly` accepts `YYYY-MM-DD` only. Undefined when invalid.
 * The spelling filter values take (SPEC §4.3).
 */
export function parseFilterDate(text: string, dateOnly: boolean): Date | undefined {
  const m = FILTER_DATE_TIME.exec(text);
  if (!m || (dateOnly && m[4] !== undefined)) return undefined;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? '0'));
  const ms = Number((m[7] ?? '0').slice(0, 3).padEnd(3, '0'));
  const zone = (m[8] ?? 'Z').toUpperCase().replace(':', '');
  const offset = zone === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3)));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (zone !== 'Z' && (Number(zone.slice(1, 3)) > 23 || Number(zone.slice(3)) > 59)) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1) return undefined; // e.g. 2023-02-30
  date.setUTCHours(hour, minute, second, ms);
  return new Date(date.getTime() - offset * 60_000);
}

/** A blob property as rows show it: `url` is the download path (with the version, so it changes with the file). */
export interface BlobMetadata {
  /** The file name the client sent (at most 255 characters). */
  name: string;
  /** Bytes. */
  size: number;
  contentType: string;
  /** Hex SHA-256 of the bytes; the download's ETag. */
  sha256: string;
  /**
   * `/api/<collection>/<id>/<field>?v=<version>` as stored; rows read it signed, `…&exp=<unix s>&sig=<HMAC>`
   * (DESIGN §11): GET it to download, without credentials until `exp`.
   */
  url: string;
}

/**
 * The stored form: the public metadata, the key prefix of this upload's files (its version) and the
 * upload time (ISO 8601, the download's Last-Modified).
 */
export interface StoredBlob extends BlobMetadata {
  prefix: string;
  uploadedAt: string;
}

/** The public part of a stored blob column (JSON text or already parsed); null for null. */
export function publicMetadata(column: unknown): BlobMetadata | null {
  const stored = parseStoredBlob(column);
  if (!stored) return null;
  const { name, size, contentType, sha256, url } = stored;
  return { name, size, contentType, sha256, url };
}

/** A blob column's value → the stored blob, or null (null column, or a value that is not ours). */
export function parseStoredBlob(column: unknown): StoredBlob | null {
  if (column === null || column === undefined) return null;
  const value = typeof column === 'string' ? (JSON.parse(column) as unknown) : column;
  if (typeof value !== 'object' || value === null || typeof (value as StoredBlob).prefix !== 'string') return null;
  return value as StoredBlob;
}
