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
import { sql } from '../query/sql.js';
import { decodeRefreshToken, first, TABLE, type RefreshTokenRow } from './store.js';

/** Who a refresh token was issued to, and for which client (`client_id`: a client id or a username). */
export interface RefreshSubject {
  subjectKind: 'user' | 'serviceAccount';
  subjectId: string;
  clientId: string;
}

/** A newly issued refresh token and when its family expires. */
export interface IssuedRefreshToken {
  token: string;
  expiresAt: Date;
}

/** Starts a new family (a sign-in): the token expires `ttlDays` from now. */
export async function issueRefreshToken(db: Database, subject: RefreshSubject, ttlDays: number): Promise<IssuedRefreshToken> {
  const expiresAt = new Date(Date.now() + ttlDays * 86_400_000); // ms per day
  return insert(db, { ...subject, familyId: uuidv7(), expiresAt });
}

async function insert(db: Database, row: RefreshSubject & { familyId: string; expiresAt: Date }): Promise<IssuedRefreshToken> {
  const token = randomToken(32);
  await db.query(sql`INSERT INTO ${TABLE.refreshTokens} ("id", "tokenHash", "familyId", "subjectKind", "subjectId", "clientId", "expiresAt", "createdAt")
    VALUES (${uuidv7()}, ${sha256(token)}, ${row.familyId}, ${row.subjectKind}, ${row.subjectId}, ${row.clientId}, ${row.expiresAt}, ${new Date()})`);
  return { token, expiresAt: row.expiresAt };
}

/** Why a rotation failed (RFC 6749 `invalid_grant` in every case; the reason is for logs). */
export type RotationFailure = 'unknown' | 'expired' | 'reused' | 'wrong-client' | 'identity-gone';

/**
 * Spends `token` and issues the next one of its family.
 * @param clientId - the `client_id` the caller presented; null when the token came from a cookie
 * @param subjectActive - asked before the token is spent; false (the identity was deleted or disabled)
 *   fails with `identity-gone` and revokes the family
 * @returns the subject and the new token, or the failure (a reused token has revoked its family)
 */
export async function rotateRefreshToken(
  db: Database,
  token: string,
  clientId: string | null,
  subjectActive: (s: RefreshSubject) => Promise<boolean>,
): Promise<{ subject: RefreshSubject; next: IssuedRefreshToken } | { failure: RotationFailure }> {
  const row = await first(db, sql`SELECT * FROM ${TABLE.refreshTokens} WHERE "tokenHash" = ${sha256(token)}`, decodeRefreshToken);
  if (!row) return { failure: 'unknown' };
  if (row.usedAt || row.revokedAt) {
    await revokeFamily(db, row.familyId);
    return { failure: 'reused' };
  }
  if (row.expiresAt.getTime() <= Date.now()) return { failure: 'expired' };
  if (clientId !== null && clientId !== row.clientId) return { failure: 'wrong-client' };
  const subject = subjectOf(row);
  if (!(await subjectActive(subject))) {
    await revokeFamily(db, row.familyId);
    return { failure: 'identity-gone' };
  }
  // Spend it in one statement: of two concurrent uses only one updates the row; the other is a reuse.
  const spent = await db.query(sql`UPDATE ${TABLE.refreshTokens} SET "usedAt" = ${new Date()}
    WHERE "id" = ${row.id} AND "usedAt" IS NULL AND "revokedAt" IS NULL RETURNING "id"`);
  if (spent.length !== 1) {
    await revokeFamily(db, row.familyId);
    return { failure: 'reused' };
  }
  return { subject, next: await insert(db, { ...subject, familyId: row.familyId, expiresAt: row.expiresAt }) };
}

function subjectOf(row: RefreshTokenRow): RefreshSubject {
  return { subjectKind: row.subjectKind as RefreshSubject['subjectKind'], subjectId: row.subjectId, clientId: row.clientId };
}

/** Revokes every token of a family. */
export async function revokeFamily(db: Database, familyId: string): Promise<void> {
  await db.query(sql`UPDATE ${TABLE.refreshTokens} SET "revokedAt" = ${new Date()} WHERE "familyId" = ${familyId} AND "revokedAt" IS NULL`);
}

/** Revokes the family of `token` (sign-out), in one statement; unknown tokens are ignored. */
export async function revokeRefreshToken(db: Database, token: string): Promise<void> {
  await db.query(sql`UPDATE ${TABLE.refreshTokens} SET "revokedAt" = ${new Date()} WHERE "revokedAt" IS NULL
    AND "familyId" IN (SELECT "familyId" FROM ${TABLE.refreshTokens} WHERE "tokenHash" = ${sha256(token)})`);
}

/** Revokes every refresh token of one identity (it was disabled). */
export async function revokeSubjectTokens(db: Database, subjectKind: RefreshSubject['subjectKind'], subjectId: string): Promise<void> {
  await db.query(sql`UPDATE ${TABLE.refreshTokens} SET "revokedAt" = ${new Date()}
    WHERE "subjectKind" = ${subjectKind} AND "subjectId" = ${subjectId} AND "revokedAt" IS NULL`);
}

/** Deletes every refresh token of one identity (it was deleted). */
export async function deleteSubjectTokens(db: Database, subjectKind: RefreshSubject['subjectKind'], subjectId: string): Promise<void> {
  await db.query(sql`DELETE FROM ${TABLE.refreshTokens} WHERE "subjectKind" = ${subjectKind} AND "subjectId" = ${subjectId}`);
}
