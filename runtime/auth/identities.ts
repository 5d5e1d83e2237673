/**
 * @module Users and service accounts (DESIGN §3 access model, §3a `user create`, `service-account
 * create`): creating them with hashed credentials, checking credentials, and turning a stored
 * identity into a `Caller`. Ids are UUIDv7, so `createdBy` and `me()` compare like any guid.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Database } from '../data/database.js';
import { HttpError } from '../errors.js';
import type { Caller } from './caller.js';
import { hashSecret, randomToken, verifySecret } from './secrets.js';
import { isUniqueViolation, parseRoles, systemTables } from './store.js';

/** Custom role names: a letter first, then letters, digits, `_` or `-`; the `_` prefix is for built-ins. */
const ROLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** Passwords shorter than this are refused by `createUser`. */
export const MIN_PASSWORD_LENGTH = 8;

function checkRoles(roles: readonly string[]): string[] {
  const bad = roles.filter((r) => !ROLE_NAME.test(r));
  if (bad.length > 0) throw new HttpError('VALIDATION_FAILED', `role names must start with a letter and hold only letters, digits, _ and - (got ${bad.map((r) => JSON.stringify(r)).join(', ')})`);
  return [...new Set(roles)].sort();
}

/**
 * Creates a user with an argon2id password hash.
 * @returns the new user's id
 * @throws HttpError VALIDATION_FAILED for an empty or over-long username, a short password or a bad role name; CONFLICT when the username is taken
 */
export async function createUser(db: Database, input: { username: string; password: string; roles?: readonly string[] }): Promise<string> {
  const username = input.username.trim();
  if (username.length === 0 || username.length > 200) throw new HttpError('VALIDATION_FAILED', 'username must be 1 to 200 characters');
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new HttpError('VALIDATION_FAILED', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  const roles = checkRoles(input.roles ?? []);
  const id = uuidv7();
  try {
    await systemTables(db.client).users.create({ data: { id, username, passwordHash: await hashSecret(input.password), roles: JSON.stringify(roles) } });
  } catch (err) {
    if (isUniqueViolation(err)) throw new HttpError('CONFLICT', `a user named ${JSON.stringify(username)} exists`);
    throw err;
  }
  return id;
}

/**
 * Creates a service account with a random client id and secret; only the secret's hash is stored.
 * @returns the id, the client id and the secret (shown once: it cannot be read back)
 */
export async function createServiceAccount(db: Database, input: { name: string; roles?: readonly string[]; admin?: boolean }): Promise<{ id: string; clientId: string; clientSecret: string }> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200) throw new HttpError('VALIDATION_FAILED', 'name must be 1 to 200 characters');
  const roles = checkRoles(input.roles ?? []);
  const id = uuidv7();
  const clientId = `sa_${randomToken(12)}`;
  const clientSecret = randomToken(32);
  await systemTables(db.client).serviceAccounts.create({
    data: { id, name, clientId, secretHash: await hashSecret(clientSecret), roles: JSON.stringify(roles), admin: input.admin === true },
  });
  return { id, clientId, clientSecret };
}

/** The caller behind a username and password, or null when they do not match. */
export async function checkPassword(db: Database, username: string, password: string): Promise<Caller | null> {
  const user = await systemTables(db.client).users.findUnique({ where: { username } });
  if (!(await verifySecret(user?.passwordHash ?? null, password)) || !user) return null;
  return { kind: 'user', id: user.id, username: user.username, roles: parseRoles(user.roles), admin: false };
}

/** The caller behind a client id and secret, or null when they do not match. */
export async function checkClientSecret(db: Database, clientId: string, clientSecret: string): Promise<Caller | null> {
  const sa = await systemTables(db.client).serviceAccounts.findUnique({ where: { clientId } });
  if (!(await verifySecret(sa?.secretHash ?? null, clientSecret)) || !sa) return null;
  return { kind: 'serviceAccount', id: sa.id, username: sa.name, roles: parseRoles(sa.roles), admin: sa.admin };
}

/** The current state of a stored identity (roles may have changed since a token was issued); null when gone. */
export async function loadCaller(db: Database, kind: string, id: string): Promise<Caller | null> {
  const tables = systemTables(db.client);
  if (kind === 'user') {
    const u = await tables.users.findUnique({ where: { id } });
    return u && { kind: 'user', id: u.id, username: u.username, roles: parseRoles(u.roles), admin: false };
  }
  if (kind === 'serviceAccount') {
    const sa = await tables.serviceAccounts.findUnique({ where: { id } });
    return sa && { kind: 'serviceAccount', id: sa.id, username: sa.name, roles: parseRoles(sa.roles), admin: sa.admin };
  }
  return null;
}
