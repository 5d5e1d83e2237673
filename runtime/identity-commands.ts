/**
 * @module What `svc user create|delete|disable|set-roles|set-admin` and `svc service-account
 * create|delete|disable` run (DESIGN §3a): apply pending migrations, open the app's database, create
 * or change the identity with compiled SQL, close. Users are named by username, service accounts by
 * client id (their name is not unique). Running servers see deletions, disabling and new roles within
 * `IDENTITY_CACHE_TTL_MS` (4 s), also on existing access tokens, and within 5 s on open real-time
 * sockets (`runtime/realtime/identity-watch.ts`: closed, or given the new roles). With Redis (env
 * `REDIS_URL` or svc.json `realtime.redis`) a change is also announced on the bus, and instances apply
 * it at once.
 */
import { join, resolve } from 'node:path';
import { openDatabase, type Database } from './data/database.js';
import { loadManifest } from './load-manifest.js';
import type { AppManifest } from './manifest.js';
import { databaseUrlFor, migrateApp, redisUrlFor } from './server.js';
import { announceIdentityChange } from './realtime/index.js';
import { createServiceAccount, createUser, deleteIdentity, disableIdentity, setIdentityAdmin, setIdentityRoles, type IdentityRef } from './auth/identities.js';

/** Applies pending migrations, opens the app's database for `fn` (given the app's manifest too), closes it. */
export async function withAppDatabase<T>(appDir: string, env: NodeJS.ProcessEnv, fn: (db: Database, manifest: AppManifest) => Promise<T>): Promise<T> {
  const dir = resolve(appDir);
  const manifest = loadManifest(join(dir, '.svc'));
  const url = databaseUrlFor(dir, manifest, env);
  await migrateApp(dir, env);
  const db = await openDatabase(manifest.provider, url);
  try {
    return await fn(db, manifest);
  } finally {
    await db.close();
  }
}

/**
 * Runs `change` on the app's database, then announces the changed identity to running instances over
 * Redis when the app uses Redis (a failed announcement is harmless: the caches' TTL still applies).
 */
async function changeIdentity<T extends { id: string }>(
  appDir: string,
  env: NodeJS.ProcessEnv,
  ref: IdentityRef,
  change: (db: Database) => Promise<T>,
): Promise<T> {
  return withAppDatabase(appDir, env, async (db, manifest) => {
    const result = await change(db);
    await announceIdentityChange(manifest.name, redisUrlFor(manifest, env), ref.kind, result.id);
    return result;
  });
}

/**
 * `svc user create`: a user with an argon2id password hash, and an e-mail address (`--email`, taken as
 * verified: the operator vouches for it; DESIGN §11); `admin` (`--admin`) makes an admin user (DESIGN §9).
 * @returns `{ id }`
 * @throws HttpError VALIDATION_FAILED (bad username, password shorter than 8, bad e-mail address or role name), CONFLICT (username or e-mail address taken); StartupError (no `.svc/`, wrong database URL)
 */
export async function createUserInApp(
  appDir: string,
  input: { username: string; password: string; roles?: string[]; email?: string; admin?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ id: string }> {
  return withAppDatabase(appDir, env, async (db) => ({ id: await createUser(db, input) }));
}

/**
 * `svc service-account create`: a service account with a random client id and secret (stored hashed;
 * the secret is returned once and cannot be read back).
 * @returns `{ clientId, clientSecret }`
 */
export async function createServiceAccountInApp(
  appDir: string,
  input: { name: string; roles?: string[]; admin?: boolean },
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ clientId: string; clientSecret: string }> {
  return withAppDatabase(appDir, env, async (db) => {
    const { clientId, clientSecret } = await createServiceAccount(db, input);
    return { clientId, clientSecret };
  });
}

/**
 * `svc user delete` / `svc service-account delete`: removes the identity and its refresh tokens.
 * @returns `{ id, deleted: true }`
 * @throws HttpError NOT_FOUND when no user has that username (no service account that client id)
 */
export async function deleteIdentityInApp(appDir: string, ref: IdentityRef, env: NodeJS.ProcessEnv = process.env): Promise<{ id: string; deleted: true }> {
  return changeIdentity(appDir, env, ref, async (db) => ({ id: await deleteIdentity(db, ref), deleted: true as const }));
}

/**
 * `svc user disable` / `svc service-account disable`: the identity can no longer sign in, refresh,
 * or use its access tokens; its refresh tokens are revoked.
 * @returns `{ id, disabled: true }`
 * @throws HttpError NOT_FOUND when no such identity exists
 */
export async function disableIdentityInApp(appDir: string, ref: IdentityRef, env: NodeJS.ProcessEnv = process.env): Promise<{ id: string; disabled: true }> {
  return changeIdentity(appDir, env, ref, async (db) => ({ id: await disableIdentity(db, ref), disabled: true as const }));
}

/**
 * `svc user set-roles`: replaces the identity's custom roles (an empty list removes them all).
 * @returns `{ id, roles }` with the roles stored (deduplicated, sorted)
 * @throws HttpError VALIDATION_FAILED for a bad role name; NOT_FOUND when no such identity exists
 */
export async function setIdentityRolesInApp(
  appDir: string,
  ref: IdentityRef,
  roles: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ id: string; roles: string[] }> {
  return changeIdentity(appDir, env, ref, (db) => setIdentityRoles(db, ref, roles));
}

/**
 * `svc user set-admin --on|--off` (DESIGN §9): an admin user bypasses access rules and policies; running
 * servers apply the change within 5 s, also to access tokens already issued and open sockets.
 * @returns `{ id, admin }`
 * @throws HttpError NOT_FOUND when no user has that username
 */
export async function setIdentityAdminInApp(
  appDir: string,
  ref: IdentityRef,
  admin: boolean,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ id: string; admin: boolean }> {
  return changeIdentity(appDir, env, ref, (db) => setIdentityAdmin(db, ref, admin));
}
