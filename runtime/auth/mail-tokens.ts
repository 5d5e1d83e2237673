/**
 * @module Single-use tokens sent by mail (DESIGN §11): e-mail verification (valid 24 h) and password
 * reset (valid 1 h). A token is 256 random bits, stored only as its SHA-256 digest in
 * `_svc_mail_tokens`; using it marks it used in one statement, so of two concurrent uses one wins.
 * And the quota of mails per address: at most `MAILS_PER_HOUR` per address in any hour, counted in
 * `_svc_mail_sent`, which every instance shares through the database.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Database } from '../data/database.js';
import { sql } from '../query/sql.js';
import { randomToken, sha256 } from './secrets.js';
import { first, TABLE, toDate, toDateOrNull } from './store.js';

/** What a mail token is for. */
export type MailTokenPurpose = 'verify' | 'reset';

/** How long a token of each purpose is valid, ms: verification 24 h, reset 1 h. */
export const MAIL_TOKEN_TTL_MS: Readonly<Record<MailTokenPurpose, number>> = { verify: 24 * 3_600_000, reset: 3_600_000 };

/** Most mails sent to one address within an hour (DESIGN §11). */
export const MAILS_PER_HOUR = 5;

/**
 * Issues a token for `userId`.
 * @returns the token (sent by mail; only its digest is stored)
 */
export async function issueMailToken(db: Database, userId: string, purpose: MailTokenPurpose): Promise<string> {
  const token = randomToken(32);
  const now = new Date();
  await db.query(sql`INSERT INTO ${TABLE.mailTokens} ("id", "tokenHash", "userId", "purpose", "expiresAt", "createdAt")
    VALUES (${uuidv7()}, ${sha256(token)}, ${userId}, ${purpose}, ${new Date(now.getTime() + MAIL_TOKEN_TTL_MS[purpose])}, ${now})`);
  return token;
}

/**
 * Spends a token of `purpose`.
 * @returns the id of its user, or null when it is unknown, of another purpose, used or expired
 */
export async function useMailToken(db: Database, token: string, purpose: MailTokenPurpose): Promise<string | null> {
  const row = await first(db, sql`SELECT * FROM ${TABLE.mailTokens} WHERE "tokenHash" = ${sha256(token)}`, (r) => ({
    id: String(r.id),
    userId: String(r.userId),
    purpose: String(r.purpose),
    expiresAt: toDate(r.expiresAt),
    usedAt: toDateOrNull(r.usedAt),
  }));
  if (!row || row.purpose !== purpose || row.usedAt || row.expiresAt.getTime() <= Date.now()) return null;
  const spent = await db.query(sql`UPDATE ${TABLE.mailTokens} SET "usedAt" = ${new Date()} WHERE "id" = ${row.id} AND "usedAt" IS NULL RETURNING "id"`);
  return spent.length === 1 ? row.userId : null;
}

/**
 * Voids every outstanding (unused) mail token of a user, reset and verification links alike: called
 * whenever the password is set (a reset, `_me/password`, an admin or `svc` setting it) and when the
 * user is disabled, so that no link mailed before stays usable (issue 30 item 3).
 */
export async function voidUserMailTokens(db: Database, userId: string): Promise<void> {
  await db.query(sql`UPDATE ${TABLE.mailTokens} SET "usedAt" = ${new Date()} WHERE "userId" = ${userId} AND "usedAt" IS NULL`);
}

/** Deletes every mail token of a user (the account was deleted). */
export async function deleteUserMailTokens(db: Database, userId: string): Promise<void> {
  await db.query(sql`DELETE FROM ${TABLE.mailTokens} WHERE "userId" = ${userId}`);
}

/**
 * Takes one of the `MAILS_PER_HOUR` mail slots of `address` (compared lower-cased), exactly: in one
 * transaction that instances take one at a time for an address (SQLite's `BEGIN IMMEDIATE` serializes
 * writers; PostgreSQL takes an advisory transaction lock on the address), the slots of the last hour
 * are counted and a new one is written only when there is room. Slots older than an hour are swept on
 * the way.
 * @returns whether the mail may be sent
 */
export async function takeMailSlot(db: Database, address: string, purpose: string): Promise<boolean> {
  const key = address.toLowerCase();
  const now = new Date();
  const since = new Date(now.getTime() - 3_600_000);
  return db.transaction(async (tx) => {
    if (db.provider === 'postgresql') await db.query(sql`SELECT pg_advisory_xact_lock(hashtext(${`svc-mail:${key}`}))`, tx);
    await db.query(sql`DELETE FROM ${TABLE.mailSent} WHERE "address" = ${key} AND "createdAt" <= ${since}`, tx);
    const [row] = await db.query<{ n: unknown }>(sql`SELECT COUNT(*) AS "n" FROM ${TABLE.mailSent} WHERE "address" = ${key} AND "createdAt" > ${since}`, tx);
    if (Number(row.n) >= MAILS_PER_HOUR) return false;
    await db.query(sql`INSERT INTO ${TABLE.mailSent} ("id", "address", "purpose", "createdAt") VALUES (${uuidv7()}, ${key}, ${purpose}, ${now})`, tx);
    return true;
  });
}
