/**
 * @module Identities for tests, made the way a user makes them: `svc user create` and
 * `svc service-account create` run as real processes against the app's database, then a real sign-in
 * over HTTP (`/_token` for service accounts, `/_auth` for users).
 */
import { expect } from 'vitest';
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

/** Creates a service account with the CLI. */
export async function createServiceAccount(
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

/** Creates a user with the CLI; returns its id. */
export async function createUser(app: AppRef, username: string, password: string, roles: string[] = []): Promise<string> {
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
