/**
 * @module What every admin endpoint (DESIGN §9) shares: the admin check (401 anonymous, 403 any other
 * caller but admin users and admin service accounts), the paging of lists (`pageSize`, default 50,
 * at most 1000; `pageToken`, the opaque `nextPageToken` of the previous page), and checked query
 * parameters (one value each; 400 `INVALID_PARAMETER` naming the parameter otherwise).
 */
import { callerOf, type Caller } from '../../auth/caller.js';
import { HttpError } from '../../errors.js';
import { MAX_PAGE_SIZE } from '../../contract/limits.js';
import { invalidParameter } from '../../query/list-params.js';

/** Rows of a page when `pageSize` is not given. */
export const ADMIN_PAGE_SIZE = 50;

/** The caller of `res` when it is an admin. @throws HttpError UNAUTHORIZED (anonymous), FORBIDDEN (not an admin) */
export function requireAdmin(res: { locals: Record<string, unknown> }): Caller {
  const caller = callerOf(res);
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'the admin endpoints require an admin user or admin service account');
  if (!caller.admin) throw new HttpError('FORBIDDEN', 'only admin users and admin service accounts may use the admin endpoints');
  return caller;
}

type Query = Record<string, unknown>;

/** One string parameter, or undefined when absent. @throws HttpError INVALID_PARAMETER when repeated or longer than `max` */
export function textParam(query: Query, name: string, max = 500): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalidParameter(name, 'give it once, as one value');
  if (v.length > max) throw invalidParameter(name, `at most ${max} characters`);
  if (v.includes('\u0000')) throw invalidParameter(name, 'may not contain NUL characters');
  return v;
}

/** A path segment (an id) fit for a lookup: NUL (which PostgreSQL text refuses) or over 200 characters finds nothing. */
export function idParam(value: unknown): string | null {
  const v = String(value);
  return v.length > 200 || v.includes('\u0000') ? null : v;
}

/** One whole-number parameter in [min, max]. @throws HttpError INVALID_PARAMETER otherwise */
export function intParam(query: Query, name: string, min: number, max: number): number | undefined {
  const v = textParam(query, name, 20);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) throw invalidParameter(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

/** A date-time parameter (ISO 8601, e.g. `2026-11-27T10:00:00Z`, or epoch milliseconds). @throws HttpError INVALID_PARAMETER otherwise */
export function timeParam(query: Query, name: string): Date | undefined {
  const v = textParam(query, name, 40);
  if (v === undefined) return undefined;
  const t = /^\d{1,15}$/.test(v) ? new Date(Number(v)) : /^\d{4}-\d{2}-\d{2}/.test(v) ? new Date(v) : new Date(NaN);
  if (Number.isNaN(t.getTime())) throw invalidParameter(name, 'must be an ISO 8601 date-time (2026-11-27T10:00:00Z) or epoch milliseconds');
  return t;
}

/** One of `values`. @throws HttpError INVALID_PARAMETER otherwise */
export function enumParam<T extends string>(query: Query, name: string, values: readonly T[]): T | undefined {
  const v = textParam(query, name, 40);
  if (v === undefined) return undefined;
  if (!(values as readonly string[]).includes(v)) throw invalidParameter(name, `must be one of ${values.join(', ')}`);
  return v as T;
}

/** A page request: how many rows, and where the previous page ended (its decoded token). */
export interface PageRequest<K> {
  pageSize: number;
  after?: K;
}

/** Parses `pageSize` and `pageToken`; `check` tells whether a decoded token has the endpoint's shape. */
export function pageParams<K>(query: Query, check: (key: unknown) => key is K): PageRequest<K> {
  const pageSize = intParam(query, 'pageSize', 1, MAX_PAGE_SIZE) ?? ADMIN_PAGE_SIZE;
  const token = textParam(query, 'pageToken', 1000);
  if (token === undefined) return { pageSize };
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    key = undefined;
  }
  if (!check(key)) throw invalidParameter('pageToken', 'is not a token this list gave (use nextPageToken of the previous page)');
  return { pageSize, after: key };
}

/** The opaque token of the page after the one that ended at `key`. */
export function pageToken(key: unknown): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/**
 * A list answer `{ data, nextPageToken? }` from up to `pageSize + 1` fetched rows: the extra row only
 * tells that another page exists; `keyOf` gives the key the next page starts after.
 */
export function pageOf<T>(rows: T[], pageSize: number, keyOf: (row: T) => unknown): { data: T[]; nextPageToken?: string } {
  if (rows.length <= pageSize) return { data: rows };
  const data = rows.slice(0, pageSize);
  return { data, nextPageToken: pageToken(keyOf(data[data.length - 1])) };
}

/** A string key check for `pageParams`. */
export const isKey = (key: unknown): key is string => typeof key === 'string' && key.length > 0 && key.length <= 200;
/** An offset key check for `pageParams`. */
export const isOffset = (key: unknown): key is number => typeof key === 'number' && Number.isSafeInteger(key) && key > 0;
