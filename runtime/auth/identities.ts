/**
 * @module Users and service accounts (DESIGN §3 access model, §3a `user create`, `service-account
 * create`, `delete`, `disable`, `set-roles`): creating them with hashed credentials, checking
 * credentials, turning a stored identity into a `Caller`, and managing them. A disabled identity
 * (`disabledAt` set) is treated like a deleted one everywhere but in the table. Ids are UUIDv7, so
 * `createdBy` and `me()` compare like any guid. Users may have an e-mail address (DESIGN §11), unique
 * case-insensitively through its lower-cased copy `emailKey`.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Database } from '../data/database.js';
import { HttpError } from '../errors.js';
import type { Caller } from './caller.js';
import { hashSecret, randomToken, verifySecret } from './secrets.js';
import { ident, join, sql, type Sql } from '../query/sql.js';
import { decodeServiceAccount, decodeUser, first, TABLE, type Raw, type ServiceAccountRow, type UserRow } from './store.js';
import { deleteSubjectTokens, revokeSubjectTokens } from './refresh-tokens.js';
import { deleteUserMailTokens, voidUserMailTokens } from './mail-tokens.js';
import { isUniqueViolation } from '../data/db-errors.js';

/** Custom role names: a letter first, then letters, digits, `_` or `-`; the `_` prefix is for built-ins. */
const ROLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** Passwords shorter than this are refused by `createUser`. */
export const MIN_PASSWORD_LENGTH = 8;

function checkRoles(roles: readonly string[]): string[] {
  const bad = roles.filter((r) => !ROLE_NAME.test(r));
  if (bad.length > 0)
    throw new HttpError(
      'VALIDATION_FAILED',
      `role names must start with a letter and hold only letters, digits, _ and - (got ${bad.map((r) => JSON.stringify(r)).join(', ')})`,
    );
  return [...new Set(roles)].sort();
}

/** Longest accepted e-mail address (RFC 5321's path limit). */
const MAX_EMAIL = 254;

/**
 * `value` as an e-mail address (trimmed), or null when it is not one: one `@`, a dot in the domain, no
 * spaces, at most 254 characters. Deliverability is proved by the verification mail, not here.
 */
export function normaliseEmail(value: string): string | null {
  const email = value.trim();
  return email.length <= MAX_EMAIL && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : null;
}

/** What `insertUser` stores. */
export interface NewUser {
  username: string;
  password: string;
  roles?: readonly string[];
  /** Stored as given; unique case-insensitively (`emailKey` is its lower-cased form). */
  email?: string;
  emailVerified?: boolean;
  /** An admin user (DESIGN §9): bypasses access rules and policies. */
  admin?: boolean;
  /** Created disabled (`disabledAt` set): a username held by a sign-up whose address had an account. */
  disabled?: boolean;
}

/**
 * Inserts a user with an argon2id password hash (the hash is computed before any lookup, so every
 * outcome takes about as long).
 * @returns the new user's id, or which unique value is taken
 * @throws HttpError VALIDATION_FAILED for an empty or over-long username, a short password, a bad e-mail address or role name
 */
export async function insertUser(db: Database, input: NewUser): Promise<{ id: string } | { taken: 'username' | 'email' }> {
  const username = input.username.trim();
  if (username.length === 0 || username.length > 200) throw new HttpError('VALIDATION_FAILED', 'username must be 1 to 200 characters');
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new HttpError('VALIDATION_FAILED', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  const email = input.email === undefined ? null : normaliseEmail(input.email);
  if (input.email !== undefined && email === null) throw new HttpError('VALIDATION_FAILED', 'email must be an e-mail address (at most 254 characters)');
  const roles = checkRoles(input.roles ?? []);
  const passwordHash = await hashSecret(input.password);
  const id = uuidv7();
  const now = new Date();
  try {
    const inserted =
      await db.query(sql`INSERT INTO ${TABLE.users} ("id", "username", "passwordHash", "roles", "email", "emailKey", "emailVerified", "admin", "disabledAt", "createdAt", "updatedAt")
      VALUES (${id}, ${username}, ${passwordHash}, ${JSON.stringify(roles)}, ${email}, ${email?.toLowerCase() ?? null}, ${input.emailVerified === true}, ${input.admin === true}, ${input.disabled === true ? now : null}, ${now}, ${now})
      ON CONFLICT ("username") DO NOTHING RETURNING "id"`);
    return inserted.length === 0 ? { taken: 'username' } : { id };
  } catch (err) {
    // The only other unique column: a concurrent sign-up took the address first.
    if (email !== null && isUniqueViolation(err)) return { taken: 'email' };
    throw err;
  }
}

/**
 * Creates a user (`svc user create`); an e-mail address given here counts as verified (the operator
 * vouches for it).
 * @returns the new user's id
 * @throws HttpError VALIDATION_FAILED (see `insertUser`); CONFLICT when the username or the e-mail address is taken
 */
export async function createUser(db: Database, input: Omit<NewUser, 'emailVerified'>): Promise<string> {
  const result = await insertUser(db, { ...input, emailVerified: input.email !== undefined });
  if ('id' in result) return result.id;
  throw new HttpError(
    'CONFLICT',
    result.taken === 'username' ? `a user named ${JSON.stringify(input.username.trim())} exists` : 'another user has this e-mail address',
  );
}

/** The user with this e-mail address (compared case-insensitively), or null. */
export async function userByEmail(db: Database, email: string): Promise<UserRow | null> {
  return first(db, sql`SELECT * FROM ${TABLE.users} WHERE "emailKey" = ${email.trim().toLowerCase()}`, decodeUser);
}

/** The user with this id, or null. */
export async function userById(db: Database, id: string): Promise<UserRow | null> {
  return first(db, sql`SELECT * FROM ${TABLE.users} WHERE "id" = ${id}`, decodeUser);
}

/**
 * Stores a new password (argon2id) for a user, and ends what the old one granted: every refresh-token
 * family of the user is revoked (every session must sign in again once its access token expires) and
 * every outstanding reset and verification link is voided. Every way of setting a password goes
 * through here (a reset, `_me/password`, the admin `PATCH`), so none can forget either.
 * @throws HttpError VALIDATION_FAILED for a password shorter than 8
 */
export async function setPassword(db: Database, userId: string, password: string): Promise<void> {
  if (password.length < MIN_PASSWORD_LENGTH) throw new HttpError('VALIDATION_FAILED', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  await db.query(sql`UPDATE ${TABLE.users} SET "passwordHash" = ${await hashSecret(password)}, "updatedAt" = ${new Date()} WHERE "id" = ${userId}`);
  await revokeSubjectTokens(db, 'user', userId);
  await voidUserMailTokens(db, userId);
}

/** Marks a user's e-mail address verified. */
export async function markEmailVerified(db: Database, userId: string): Promise<void> {
  await db.query(sql`UPDATE ${TABLE.users} SET "emailVerified" = ${true}, "updatedAt" = ${new Date()} WHERE "id" = ${userId}`);
}

/**
 * Creates a service account with a random client id and secret; only the secret's hash is stored.
 * @returns the id, the client id and the secret (shown once: it cannot be read back)
 */
export async function createServiceAccount(
  db: Database,
  input: { name: string; roles?: readonly string[]; admin?: boolean },
): Promise<{ id: string; clientId: string; clientSecret: string }> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200) throw new HttpError('VALIDATION_FAILED', 'name must be 1 to 200 characters');
  const roles = checkRoles(input.roles ?? []);
  const id = uuidv7();
  const clientId = `sa_${randomToken(12)}`;
  const clientSecret = randomToken(32);
  const now = new Date();
  await db.query(sql`INSERT INTO ${TABLE.serviceAccounts} ("id", "name", "clientId", "secretHash", "roles", "admin", "createdAt", "updatedAt")
    VALUES (${id}, ${name}, ${clientId}, ${await hashSecret(clientSecret)}, ${JSON.stringify(roles)}, ${input.admin === true}, ${now}, ${now})`);
  return { id, clientId, clientSecret };
}

const userCaller = (u: UserRow): Caller => ({ kind: 'user', id: u.id, username: u.username, roles: u.roles, admin: u.admin });

/** Records a successful sign-in (`lastSignInAt`, shown by the console); a failure to record it never fails the sign-in. */
async function noteSignIn(db: Database, table: Sql, id: string): Promise<void> {
  await db.query(sql`UPDATE ${table} SET "lastSignInAt" = ${new Date()} WHERE "id" = ${id}`).catch(() => undefined);
}
/**
 * The caller of a user who has just signed in another way (an identity provider, DESIGN §11), with
 * `lastSignInAt` recorded; the caller of a disabled user is not refused here (check `disabledAt`).
 */
export async function signedInUser(db: Database, user: UserRow): Promise<Caller> {
  await noteSignIn(db, TABLE.users, user.id);
  return userCaller(user);
}
const accountCaller = (sa: ServiceAccountRow): Caller => ({ kind: 'serviceAccount', id: sa.id, username: sa.name, roles: sa.roles, admin: sa.admin });

/** The caller behind a username and password, or null when they do not match or the user is disabled. */
export async function checkPassword(db: Database, username: string, password: string): Promise<Caller | null> {
  const user = await first(db, sql`SELECT * FROM ${TABLE.users} WHERE "username" = ${username}`, decodeUser);
  // The hash is verified even for a disabled user, so the answer takes as long either way.
  if (!(await verifySecret(user?.passwordHash ?? null, password)) || !user || user.disabledAt) return null;
  await noteSignIn(db, TABLE.users, user.id);
  return userCaller(user);
}

/** The caller behind a client id and secret, or null when they do not match or the account is disabled. */
export async function checkClientSecret(db: Database, clientId: string, clientSecret: string): Promise<Caller | null> {
  const sa = await first(db, sql`SELECT * FROM ${TABLE.serviceAccounts} WHERE "clientId" = ${clientId}`, decodeServiceAccount);
  if (!(await verifySecret(sa?.secretHash ?? null, clientSecret)) || !sa || sa.disabledAt) return null;
  await noteSignIn(db, TABLE.serviceAccounts, sa.id);
  return accountCaller(sa);
}

/**
 * The current state of a stored identity (roles may have changed since a token was issued).
 * @returns null when it was deleted or is disabled, or `kind` names no identity kind
 */
export async function loadCaller(db: Database, kind: string, id: string): Promise<Caller | null> {
  if (kind === 'user') {
    const u = await first(db, sql`SELECT * FROM ${TABLE.users} WHERE "id" = ${id}`, decodeUser);
    return u && !u.disabledAt ? userCaller(u) : null;
  }
  if (kind === 'serviceAccount') {
    const sa = await first(db, sql`SELECT * FROM ${TABLE.serviceAccounts} WHERE "id" = ${id}`, decodeServiceAccount);
    return sa && !sa.disabledAt ? accountCaller(sa) : null;
  }
  return null;
}

/** Identities looked up in one statement by `loadCallers` (bounds the statement's parameters). */
const CALLERS_PER_QUERY = 500;

/**
 * The current state of many stored identities of one kind, in one query per `CALLERS_PER_QUERY` ids
 * (the identity watch of open connections checks every connected identity this way).
 * @returns id → its caller, or null when it was deleted or is disabled
 * @throws the database's error when a lookup fails
 */
export async function loadCallers(db: Database, kind: Caller['kind'], ids: readonly string[]): Promise<Map<string, Caller | null>> {
  const found = new Map<string, Caller | null>(ids.map((id) => [id, null]));
  if (kind !== 'user' && kind !== 'serviceAccount') return found;
  for (let i = 0; i < ids.length; i += CALLERS_PER_QUERY) {
    const chunk = ids.slice(i, i + CALLERS_PER_QUERY);
    const list = join(
      chunk.map((id) => sql`${id}`),
      ', ',
    );
    const table = kind === 'user' ? TABLE.users : TABLE.serviceAccounts;
    for (const row of await db.query<Raw>(sql`SELECT * FROM ${table} WHERE "id" IN (${list})`)) {
      const caller =
        kind === 'user'
          ? ((u) => (u.disabledAt ? null : userCaller(u)))(decodeUser(row))
          : ((a) => (a.disabledAt ? null : accountCaller(a)))(decodeServiceAccount(row));
      if (caller) found.set(caller.id!, caller);
    }
  }
  return found;
}

/**
 * Names one identity for the management commands: a user by username, a service account by client id
 * (the CLI), or either by its id (the admin endpoints of DESIGN §9).
 */
export type IdentityRef =
  | { kind: 'user'; username: string }
  | { kind: 'serviceAccount'; clientId: string }
  | { kind: 'user' | 'serviceAccount'; id: string; username?: undefined; clientId?: undefined };

function target(ref: IdentityRef): { table: Sql; where: Sql; label: string } {
  if ('id' in ref && ref.id !== undefined) {
    const table = ref.kind === 'user' ? TABLE.users : TABLE.serviceAccounts;
    return { table, where: sql`"id" = ${ref.id}`, label: `no ${ref.kind === 'user' ? 'user' : 'service account'} has the id ${JSON.stringify(ref.id)}` };
  }
  return ref.kind === 'user'
    ? { table: TABLE.users, where: sql`"username" = ${ref.username!}`, label: `no user is named ${JSON.stringify(ref.username)}` }
    : {
        table: TABLE.serviceAccounts,
        where: sql`"clientId" = ${ref.clientId!}`,
        label: `no service account has the client id ${JSON.stringify(ref.clientId)}`,
      };
}

async function updateOne(db: Database, ref: IdentityRef, set: Sql): Promise<string> {
  const t = target(ref);
  const rows = await db.query<{ id: unknown }>(sql`UPDATE ${t.table} SET ${set}, "updatedAt" = ${new Date()} WHERE ${t.where} RETURNING "id"`);
  if (rows.length === 0) throw new HttpError('NOT_FOUND', t.label);
  return String(rows[0].id);
}

/**
 * Disables an identity: it can no longer sign in or refresh (its refresh tokens are revoked; a user's
 * outstanding reset and verification links are voided), and its
 * access tokens are refused once the identity caches of running servers expire (`IDENTITY_CACHE_TTL_MS`).
 * @returns its id
 * @throws HttpError NOT_FOUND when no such identity exists
 */
export async function disableIdentity(db: Database, ref: IdentityRef): Promise<string> {
  const id = await updateOne(db, ref, sql`"disabledAt" = ${new Date()}`);
  await revokeSubjectTokens(db, ref.kind, id);
  if (ref.kind === 'user') await voidUserMailTokens(db, id);
  return id;
}

/**
 * Deletes the agent data of an identity (DESIGN §7, §7a): its threads with their turns, its session
 * row and the rows of its attachments. Their bytes are the blob store's: the server deletes them first
 * (runtime/agent/uploads.ts), and the orphan sweep takes those whose row is gone (`svc user delete`).
 */
async function deleteAgentData(db: Database, identityId: string): Promise<void> {
  const threads = sql`SELECT ${ident('id')} FROM ${ident('_svc_agent_threads')} WHERE ${ident('identityId')} = ${identityId}`;
  await db.query(sql`DELETE FROM ${ident('_svc_agent_turns')} WHERE ${ident('threadId')} IN (${threads})`);
  await db.query(sql`DELETE FROM ${ident('_svc_agent_threads')} WHERE ${ident('identityId')} = ${identityId}`);
  await db.query(sql`DELETE FROM ${ident('_svc_agent_sessions')} WHERE ${ident('identityId')} = ${identityId}`);
  await db.query(sql`DELETE FROM ${ident('_svc_agent_uploads')} WHERE ${ident('identityId')} = ${identityId}`);
}

/**
 * Deletes an identity, its refresh tokens, its agent threads and attachments (rows), and (a user's)
 * provider links and mail tokens. Rows it created keep its id in `createdBy`.
 * @returns its id
 * @throws HttpError NOT_FOUND when no such identity exists
 */
export async function deleteIdentity(db: Database, ref: IdentityRef): Promise<string> {
  const t = target(ref);
  const rows = await db.query<{ id: unknown }>(sql`DELETE FROM ${t.table} WHERE ${t.where} RETURNING "id"`);
  if (rows.length === 0) throw new HttpError('NOT_FOUND', t.label);
  const id = String(rows[0].id);
  await deleteSubjectTokens(db, ref.kind, id);
  await deleteAgentData(db, id);
  if (ref.kind === 'user') {
    await db.query(sql`DELETE FROM ${TABLE.userProviders} WHERE "userId" = ${id}`);
    await deleteUserMailTokens(db, id);
  }
  return id;
}

/**
 * Replaces an identity's custom roles; running servers apply them to existing access tokens once
 * their identity caches expire.
 * @returns its id and the roles stored (deduplicated, sorted)
 * @throws HttpError VALIDATION_FAILED for a bad role name; NOT_FOUND when no such identity exists
 */
export async function setIdentityRoles(db: Database, ref: IdentityRef, roles: readonly string[]): Promise<{ id: string; roles: string[] }> {
  const checked = checkRoles(roles);
  return { id: await updateOne(db, ref, sql`"roles" = ${JSON.stringify(checked)}`), roles: checked };
}

/**
 * Makes a user an admin or not (`svc user set-admin`, DESIGN §9); running servers apply it to existing
 * access tokens once their identity caches expire (within 5 s), like `setIdentityRoles`.
 * @returns its id and the flag stored
 * @throws HttpError NOT_FOUND when no such user exists
 */
export async function setIdentityAdmin(db: Database, ref: IdentityRef, admin: boolean): Promise<{ id: string; admin: boolean }> {
  return { id: await updateOne(db, ref, sql`"admin" = ${admin}`), admin };
}

/**
 * Lifts `disableIdentity`: the identity may sign in again (its revoked refresh tokens stay revoked).
 * @returns its id
 * @throws HttpError NOT_FOUND when no such identity exists
 */
export async function enableIdentity(db: Database, ref: IdentityRef): Promise<string> {
  return updateOne(db, ref, sql`"disabledAt" = ${null}`);
}
