/**
 * @module The system tables (DESIGN §3 access model, SPEC §4.6, §4.9) read and written with compiled
 * SQL through `db.query(sql\`…\`)`, never through the Prisma client. Table and column names follow the
 * system models the generator emits (`generator/emit/system-models.ts`); `manifest.json` does not
 * carry them, so both sides name them, here and there.
 *
 * Values are bound as JS values (Date objects, booleans); the database driver encodes them for its
 * provider. What comes back differs by provider — SQLite answers DATETIME columns as ISO strings (or
 * epoch milliseconds) and booleans as 0/1, PostgreSQL answers Date objects and booleans — so every
 * row is decoded here with `toDate` and `toBool` before the rest of the runtime sees it.
 */
import type { Database } from '../data/database.js';
import { ident, type Sql } from '../query/sql.js';

/** Quoted table names of the system tables. */
export const TABLE = {
  users: ident('_svc_users'),
  serviceAccounts: ident('_svc_service_accounts'),
  refreshTokens: ident('_svc_refresh_tokens'),
  signingKeys: ident('_svc_signing_keys'),
  mailTokens: ident('_svc_mail_tokens'),
  mailSent: ident('_svc_mail_sent'),
  userProviders: ident('_svc_user_providers'),
  log: ident('_log'),
} as const;

export interface UserRow {
  id: string;
  username: string;
  passwordHash: string;
  roles: string[];
  disabledAt: Date | null;
  /** The address as given; null when the user has none. */
  email: string | null;
  emailVerified: boolean;
  /** An admin user bypasses access rules and policies (DESIGN §9). */
  admin: boolean;
  createdAt: Date;
  lastSignInAt: Date | null;
}
export interface ServiceAccountRow {
  id: string;
  name: string;
  clientId: string;
  secretHash: string;
  roles: string[];
  admin: boolean;
  disabledAt: Date | null;
  createdAt: Date;
  lastSignInAt: Date | null;
}
export interface RefreshTokenRow {
  id: string;
  tokenHash: string;
  familyId: string;
  subjectKind: string;
  subjectId: string;
  clientId: string;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
}
export interface SigningKeyRow {
  id: string;
  algorithm: string;
  privateJwk: string;
  publicJwk: string;
}

export type Raw = Record<string, unknown>;

/** A stored date-time (Date, ISO string or epoch ms) as a Date. */
export function toDate(v: unknown): Date {
  if (v instanceof Date) return v;
  if (typeof v === 'number' || typeof v === 'bigint') return new Date(Number(v));
  return new Date(String(v));
}

/** A nullable stored date-time; null and undefined stay null. */
export function toDateOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : toDate(v);
}

/** A stored boolean (PostgreSQL `true`, SQLite `1`/`1n`) as a boolean. */
export function toBool(v: unknown): boolean {
  return v === true || v === 1 || v === 1n || v === '1' || v === 't' || v === 'true';
}

/** Roles are stored as a JSON array of names; anything else reads as no roles. */
export function parseRoles(text: unknown): string[] {
  try {
    const v = JSON.parse(String(text)) as unknown;
    return Array.isArray(v) ? v.filter((r): r is string => typeof r === 'string') : [];
  } catch {
    return [];
  }
}

export function decodeUser(r: Raw): UserRow {
  return {
    id: String(r.id),
    username: String(r.username),
    passwordHash: String(r.passwordHash),
    roles: parseRoles(r.roles),
    disabledAt: toDateOrNull(r.disabledAt),
    email: r.email === null || r.email === undefined ? null : String(r.email),
    emailVerified: toBool(r.emailVerified),
    admin: toBool(r.admin),
    createdAt: toDate(r.createdAt),
    lastSignInAt: toDateOrNull(r.lastSignInAt),
  };
}

export function decodeServiceAccount(r: Raw): ServiceAccountRow {
  return {
    id: String(r.id),
    name: String(r.name),
    clientId: String(r.clientId),
    secretHash: String(r.secretHash),
    roles: parseRoles(r.roles),
    admin: toBool(r.admin),
    disabledAt: toDateOrNull(r.disabledAt),
    createdAt: toDate(r.createdAt),
    lastSignInAt: toDateOrNull(r.lastSignInAt),
  };
}

export function decodeRefreshToken(r: Raw): RefreshTokenRow {
  return {
    id: String(r.id),
    tokenHash: String(r.tokenHash),
    familyId: String(r.familyId),
    subjectKind: String(r.subjectKind),
    subjectId: String(r.subjectId),
    clientId: String(r.clientId),
    expiresAt: toDate(r.expiresAt),
    usedAt: toDateOrNull(r.usedAt),
    revokedAt: toDateOrNull(r.revokedAt),
  };
}

export function decodeSigningKey(r: Raw): SigningKeyRow {
  return { id: String(r.id), algorithm: String(r.algorithm), privateJwk: String(r.privateJwk), publicJwk: String(r.publicJwk) };
}

/**
 * Runs `statement` (a read of one row by a unique key: a point read, which never waits behind a scan)
 * and decodes its first row, or answers null when it returned none.
 */
export async function first<T>(db: Database, statement: Sql, decode: (r: Raw) => T): Promise<T | null> {
  const rows = await db.query<Raw>(statement, undefined, { point: true });
  return rows.length > 0 ? decode(rows[0]) : null;
}
