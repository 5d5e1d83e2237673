/**
 * @module What `svc user list` and `svc user show` run (DESIGN §3a, §11): read the app's users with
 * their e-mail address, roles, state and linked identity providers (`_svc_user_providers`), through
 * compiled SQL on the app's database (pending migrations applied first). Never prints a password hash.
 */
import { withAppDatabase } from './identity-commands.js';
import type { Database } from './data/database.js';
import { providerLinks, type ProviderLink } from './auth/providers/link.js';
import { decodeUser, first, TABLE, type Raw } from './auth/store.js';
import { HttpError } from './errors.js';
import { sql } from './query/sql.js';

/** One user as `svc user list|show` prints it. */
export interface UserSummary {
  id: string;
  username: string;
  email: string | null;
  emailVerified: boolean;
  /** App roles, read by access rules and policies (SPEC §5). */
  roles: string[];
  /** A platform admin: bypasses access rules and policies and may open the console (DESIGN §9); not a role. */
  admin: boolean;
  disabled: boolean;
  /** Linked identity providers, oldest first (DESIGN §11). */
  providers: ProviderLink[];
}

async function summary(db: Database, row: Raw): Promise<UserSummary> {
  const u = decodeUser(row);
  return {
    id: u.id,
    username: u.username,
    email: u.email,
    emailVerified: u.emailVerified,
    roles: u.roles,
    admin: u.admin,
    disabled: u.disabledAt !== null,
    providers: await providerLinks(db, u.id),
  };
}

/**
 * `svc user list`: every user, by username.
 * @returns the users with their linked providers
 * @throws StartupError (no `.svc/`, wrong database URL)
 */
export async function listUsersInApp(appDir: string, env: NodeJS.ProcessEnv = process.env): Promise<UserSummary[]> {
  return withAppDatabase(appDir, env, async (db) => {
    const rows = await db.query<Raw>(sql`SELECT * FROM ${TABLE.users} ORDER BY "username"`);
    const out: UserSummary[] = [];
    for (const row of rows) out.push(await summary(db, row));
    return out;
  });
}

/**
 * `svc user show --username U`: one user.
 * @throws HttpError NOT_FOUND when no user has that username
 */
export async function showUserInApp(appDir: string, username: string, env: NodeJS.ProcessEnv = process.env): Promise<UserSummary> {
  return withAppDatabase(appDir, env, async (db) => {
    const row = await first(db, sql`SELECT * FROM ${TABLE.users} WHERE "username" = ${username}`, (r) => r);
    if (!row) throw new HttpError('NOT_FOUND', `no user is named ${JSON.stringify(username)}`);
    return summary(db, row);
  });
}
