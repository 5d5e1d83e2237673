/**
 * @module What `svc user create` and `svc service-account create` run (DESIGN §3a): apply pending
 * migrations, open the app's database, create the identity, close.
 */
import { join, resolve } from 'node:path';
import { openDatabase, type Database } from './data/database.js';
import { loadManifest } from './load-manifest.js';
import { databaseUrlFor, migrateApp } from './server.js';
import { createServiceAccount, createUser } from './auth/identities.js';

async function withAppDatabase<T>(appDir: string, env: NodeJS.ProcessEnv, fn: (db: Database) => Promise<T>): Promise<T> {
  const dir = resolve(appDir);
  const manifest = loadManifest(join(dir, '.svc'));
  const url = databaseUrlFor(dir, manifest, env);
  await migrateApp(dir, env);
  const db = await openDatabase(join(dir, '.svc'), manifest.provider, url);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/**
 * `svc user create`: a user with an argon2id password hash.
 * @returns `{ id }`
 * @throws HttpError VALIDATION_FAILED (bad username, password shorter than 8, bad role name), CONFLICT (username taken); StartupError (no `.svc/`, wrong database URL)
 */
export async function createUserInApp(appDir: string, input: { username: string; password: string; roles?: string[] }, env: NodeJS.ProcessEnv = process.env): Promise<{ id: string }> {
  return withAppDatabase(appDir, env, async (db) => ({ id: await createUser(db, input) }));
}

/**
 * `svc service-account create`: a service account with a random client id and secret (stored hashed;
 * the secret is returned once and cannot be read back).
 * @returns `{ clientId, clientSecret }`
 */
export async function createServiceAccountInApp(appDir: string, input: { name: string; roles?: string[]; admin?: boolean }, env: NodeJS.ProcessEnv = process.env): Promise<{ clientId: string; clientSecret: string }> {
  return withAppDatabase(appDir, env, async (db) => {
    const { clientId, clientSecret } = await createServiceAccount(db, input);
    return { clientId, clientSecret };
  });
}
