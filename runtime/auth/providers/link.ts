/**
 * @module Which user a provider sign-in is (DESIGN §11), and the links of `_svc_user_providers`
 * (userId, provider, subject, email, createdAt; unique per provider and subject). In order: the user
 * already linked to (provider, subject); else, with `auth.linkByVerifiedEmail` (default on), the user
 * whose e-mail address matches the provider's verified address — only when that user verified it too,
 * so an account someone created with another person's address is never taken over through it; else a
 * new user. New users get a username derived from the provider's login name or the address's local
 * part (made unique with `-2`, `-3`, …), the roles of `auth.signup.roles`, the provider's address
 * (verified as the provider says, left out when another user has it) and an unusable random password.
 * Providers create users whether or not password sign-up (`auth.signup.enabled`) is on: configuring
 * a provider is the operator's choice to let its accounts in.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Database } from '../../data/database.js';
import type { AuthService } from '../auth-service.js';
import { insertUser, normaliseEmail, userByEmail, userById } from '../identities.js';
import { randomToken } from '../secrets.js';
import { first, TABLE, toDate, type Raw, type UserRow } from '../store.js';
import { sql } from '../../query/sql.js';
import type { ProviderIdentity } from './types.js';

/** One linked identity, as `svc user show` prints it. */
export interface ProviderLink {
  provider: string;
  subject: string;
  email: string | null;
  createdAt: string;
}

/** How `userForIdentity` found the user. */
export type LinkOutcome = 'linked' | 'linked-by-email' | 'created';

const USERNAME_MAX = 40;

/** A username from the provider's login name or the address's local part: letters, digits, `.`, `_`, `-`. */
export function usernameBase(identity: ProviderIdentity, provider: string): string {
  const raw = identity.login ?? identity.email?.split('@')[0] ?? '';
  const cleaned = raw
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents: é → e
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, USERNAME_MAX);
  return cleaned || `${provider}-user`;
}

async function linkedUserId(db: Database, provider: string, subject: string): Promise<string | null> {
  return first(db, sql`SELECT "userId" FROM ${TABLE.userProviders} WHERE "provider" = ${provider} AND "subject" = ${subject}`, (r) => String(r.userId));
}

/** Links (provider, subject) to a user. @returns false when the pair was linked already (a concurrent first sign-in won) */
async function insertLink(db: Database, userId: string, provider: string, identity: ProviderIdentity): Promise<boolean> {
  const rows = await db.query(sql`INSERT INTO ${TABLE.userProviders} ("id", "userId", "provider", "subject", "email", "createdAt")
    VALUES (${uuidv7()}, ${userId}, ${provider}, ${identity.subject}, ${identity.email}, ${new Date()})
    ON CONFLICT ("provider", "subject") DO NOTHING RETURNING "id"`);
  return rows.length > 0;
}

async function createUserFor(auth: AuthService, provider: string, identity: ProviderIdentity): Promise<string> {
  const base = usernameBase(identity, provider);
  // An address the users table would refuse (no dot in the domain, too long) is left out, not an error.
  let email = (identity.email && normaliseEmail(identity.email)) || undefined;
  for (let attempt = 1; attempt <= 20; attempt++) {
    const suffix = attempt === 1 ? '' : attempt <= 10 ? `-${attempt}` : `-${randomToken(4).toLowerCase()}`;
    const result = await insertUser(auth.db, {
      username: base.slice(0, USERNAME_MAX - suffix.length) + suffix,
      password: randomToken(32), // never told to anyone: the user signs in through the provider
      email,
      emailVerified: identity.emailVerified,
      roles: auth.signup.roles,
    });
    if ('id' in result) return result.id;
    if (result.taken === 'email') {
      email = undefined; // another user has the address (unverified, or linking is off): the new user goes without it
      attempt -= 1;
    }
  }
  throw new Error(`no free username near ${JSON.stringify(base)}`);
}

/**
 * The user of a provider sign-in, linked or created as the module says.
 * @returns the user's row (possibly disabled: the caller refuses those) and how it was found
 */
export async function userForIdentity(auth: AuthService, provider: string, identity: ProviderIdentity): Promise<{ user: UserRow; outcome: LinkOutcome }> {
  const linked = await linkedUserId(auth.db, provider, identity.subject);
  const linkedUser = linked ? await userById(auth.db, linked) : null;
  if (linkedUser) return { user: linkedUser, outcome: 'linked' };
  if (linked) await auth.db.query(sql`DELETE FROM ${TABLE.userProviders} WHERE "userId" = ${linked}`); // a user deleted behind our back
  if (auth.manifest.settings.auth.linkByVerifiedEmail !== false && identity.email && identity.emailVerified) {
    const owner = await userByEmail(auth.db, identity.email);
    if (owner?.emailVerified) {
      if (await insertLink(auth.db, owner.id, provider, identity)) return { user: owner, outcome: 'linked-by-email' };
      return userForIdentity(auth, provider, identity);
    }
  }
  const id = await createUserFor(auth, provider, identity);
  if (!(await insertLink(auth.db, id, provider, identity))) {
    // A concurrent first sign-in of the same account linked its own new user first: use that one.
    await auth.db.query(sql`DELETE FROM ${TABLE.users} WHERE "id" = ${id}`);
    return userForIdentity(auth, provider, identity);
  }
  auth.logger.info({ userId: id, provider }, 'user created by a provider sign-in');
  return { user: (await userById(auth.db, id))!, outcome: 'created' };
}

/** The providers linked to a user, oldest first. */
export async function providerLinks(db: Database, userId: string): Promise<ProviderLink[]> {
  const rows = await db.query<Raw>(
    sql`SELECT "provider", "subject", "email", "createdAt" FROM ${TABLE.userProviders} WHERE "userId" = ${userId} ORDER BY "createdAt", "provider"`,
  );
  return rows.map((r) => ({
    provider: String(r.provider),
    subject: String(r.subject),
    email: r.email === null || r.email === undefined ? null : String(r.email),
    createdAt: toDate(r.createdAt).toISOString(),
  }));
}
