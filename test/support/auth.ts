/**
 * @module Identities for tests: made with what `svc user create` and `svc service-account create`
 * run (`createUserInApp`, `createServiceAccountInApp` of the built runtime, in the test's process,
 * which spares a CLI process of ~1 s CPU per identity), or with the CLI as a real process where the
 * command is what a test is about (`createUserWithCli`, `createServiceAccountWithCli`); then a real
 * sign-in over HTTP (`/_token` for service accounts, `/_auth` for users).
 */
import { expect } from 'vitest';
import { createServiceAccountInApp, createUserInApp } from '../../dist/runtime/index.js';
import { runCli } from './cli.js';

/** A signed-in identity: its id, its access token, and the refresh token of its session. */
export interface Identity {
  id: string;
  token: string;
  refreshToken: string;
  headers: Record<string, string>;
}

/** The app folder and environment the CLI needs (a `PreparedApp`). */
export interface AppRef {
  dir: string;
  env: NodeJS.ProcessEnv;
}

async function me(base: string, token: string): Promise<string> {
  const r = await fetch(`${base}/_me`, { headers: { authorization: `Bearer ${token}` } });
  expect(r.status).toBe(200);
  return (await r.json()).id;
}

/** What the CLI runs with: the test's environment and the app's (its database URL). */
const appEnv = (app: AppRef): NodeJS.ProcessEnv => ({ ...process.env, SVC_LOG_LEVEL: 'warn', ...app.env });

/** Creates a service account as `svc service-account create` does (in this process). */
export function createServiceAccount(
  app: AppRef,
  name: string,
  options: { admin?: boolean; roles?: string[] } = {},
): Promise<{ clientId: string; clientSecret: string }> {
  return createServiceAccountInApp(app.dir, { name, roles: options.roles ?? [], admin: options.admin === true }, appEnv(app));
}

/** Creates a service account with the CLI (`svc service-account create` as a real process). */
export async function createServiceAccountWithCli(
  app: AppRef,
  name: string,
  options: { admin?: boolean; roles?: string[] } = {},
): Promise<{ clientId: string; clientSecret: string }> {
  const args = ['service-account', 'create', app.dir, '--name', name];
  if (options.admin) args.push('--admin');
  if (options.roles?.length) args.push('--roles', options.roles.join(','));
  const r = await runCli(args, app.env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** Signs a service account in with the OAuth 2.0 client-credentials grant. */
export async function serviceAccountToken(base: string, clientId: string, clientSecret: string): Promise<Identity> {
  const r = await fetch(`${base}/_token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  const body = await r.json();
  expect(r.status, JSON.stringify(body)).toBe(200);
  return {
    id: await me(base, body.access_token),
    token: body.access_token,
    refreshToken: body.refresh_token,
    headers: { authorization: `Bearer ${body.access_token}` },
  };
}

/** A new admin service account, signed in. */
export async function adminIdentity(app: AppRef, base: string, name = 'test-admin'): Promise<Identity> {
  const { clientId, clientSecret } = await createServiceAccount(app, name, { admin: true });
  return serviceAccountToken(base, clientId, clientSecret);
}

/** Creates a user as `svc user create` does (in this process); returns its id. */
export async function createUser(app: AppRef, username: string, password: string, roles: string[] = []): Promise<string> {
  return (await createUserInApp(app.dir, { username, password, roles }, appEnv(app))).id;
}

/** Creates a user with the CLI (`svc user create` as a real process); returns its id. */
export async function createUserWithCli(app: AppRef, username: string, password: string, roles: string[] = []): Promise<string> {
  const args = ['user', 'create', app.dir, '--username', username, '--password', password];
  if (roles.length) args.push('--roles', roles.join(','));
  const r = await runCli(args, app.env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).id;
}

/** Signs a user in through `_auth` with `authority: "password"`. */
export async function userToken(base: string, username: string, password: string): Promise<Identity> {
  const r = await fetch(`${base}/_auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authority: 'password', username, password }),
  });
  const body = await r.json();
  expect(r.status, JSON.stringify(body)).toBe(200);
  return {
    id: await me(base, body.access_token),
    token: body.access_token,
    refreshToken: body.refresh_token,
    headers: { authorization: `Bearer ${body.access_token}` },
  };
}

/** A new user, signed in. */
export async function userIdentity(app: AppRef, base: string, username: string, roles: string[] = []): Promise<Identity> {
  const password = `pw-${username}-long`;
  await createUser(app, username, password, roles);
  return userToken(base, username, password);
}
