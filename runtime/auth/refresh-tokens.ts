/**
 * @module Refresh tokens (SPEC §4.6, §5.4–5.5): random 256-bit strings, stored only as SHA-256
 * digests. Each belongs to a family started by one sign-in; the family expires 70 days (svc.json
 * `auth.refreshTokenTtlDays`) after the sign-in, and rotation never extends it. Every use spends the
 * token and issues the next one of its family; presenting a spent (or revoked) token again is taken
 * as theft and revokes the whole family, so the thief's and the victim's tokens both stop working.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Database } from '../data/database.js';
import { randomToken, sha256 } from './secrets.js';
import { systemTables, type RefreshTokenRow } from './store.js';

/** Who a refresh token was issued to, and for which client (`client_id`: a client id or a username). */
export interface RefreshSubject { subjectKind: 'user' | 'serviceAccount'; subjectId: string; clientId: string }

/** A newly issued refresh token and when its family expires. */
export interface IssuedRefreshToken { token: string; expiresAt: Date }

/** Starts a new family (a sign-in): the token expires `ttlDays` from now. */
export async function issueRefreshToken(db: Database, subject: RefreshSubject, ttlDays: number): Promise<IssuedRefreshToken> {
  const expiresAt = new Date(Date.now() + ttlDays * 86_400_000); // ms per day
  return insert(db, { ...subject, familyId: uuidv7(), expiresAt });
}

async function insert(db: Database, row: RefreshSubject & { familyId: string; expiresAt: Date }): Promise<IssuedRefreshToken> {
  const token = randomToken(32);
  await systemTables(db.client).refreshTokens.create({ data: { id: uuidv7(), tokenHash: sha256(token), ...row } });
  return { token, expiresAt: row.expiresAt };
}

/** Why a rotation failed (RFC 6749 `invalid_grant` in every case; the reason is for logs). */
export type RotationFailure = 'unknown' | 'expired' | 'reused' | 'wrong-client';

/**
 * Spends `token` and issues the next one of its family.
 * @param clientId - the `client_id` the caller presented; null when the token came from a cookie
 * @returns the subject and the new token, or the failure (a reused token has revoked its family)
 */
export async function rotateRefreshToken(db: Database, token: string, clientId: string | null): Promise<{ subject: RefreshSubject; next: IssuedRefreshToken } | { failure: RotationFailure }> {
  const table = systemTables(db.client).refreshTokens;
  const row = await table.findUnique({ where: { tokenHash: sha256(token) } });
  if (!row) return { failure: 'unknown' };
  if (row.usedAt || row.revokedAt) {
    await revokeFamily(db, row.familyId);
    return { failure: 'reused' };
  }
  if (row.expiresAt.getTime() <= Date.now()) return { failure: 'expired' };
  if (clientId !== null && clientId !== row.clientId) return { failure: 'wrong-client' };
  // Spend it atomically: of two concurrent uses only one updates the row; the other is a reuse.
  const { count } = await table.updateMany({ where: { id: row.id, usedAt: null, revokedAt: null }, data: { usedAt: new Date() } });
  if (count !== 1) {
    await revokeFamily(db, row.familyId);
    return { failure: 'reused' };
  }
  const subject = subjectOf(row);
  return { subject, next: await insert(db, { ...subject, familyId: row.familyId, expiresAt: row.expiresAt }) };
}

function subjectOf(row: RefreshTokenRow): RefreshSubject {
  return { subjectKind: row.subjectKind as RefreshSubject['subjectKind'], subjectId: row.subjectId, clientId: row.clientId };
}

/** Revokes every token of a family. */
export async function revokeFamily(db: Database, familyId: string): Promise<void> {
  await systemTables(db.client).refreshTokens.updateMany({ where: { familyId, revokedAt: null }, data: { revokedAt: new Date() } });
}

/** Revokes the family of `token` (sign-out); unknown tokens are ignored. */
export async function revokeRefreshToken(db: Database, token: string): Promise<void> {
  const row = await systemTables(db.client).refreshTokens.findUnique({ where: { tokenHash: sha256(token) } });
  if (row) await revokeFamily(db, row.familyId);
}
