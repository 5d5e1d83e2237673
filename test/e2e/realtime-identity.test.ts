/**
 * Open connections follow their identity on one instance on SQLite (issue 20 §4; docs/realtime.md
 * "Identities that change"): `svc user delete|disable|set-roles` and `svc service-account delete`,
 * run as separate processes, close the identity's Web PubSub and hub sockets within 5 s, refuse the
 * recovery of a reliable connection, and end the change feeds a lost role granted. The same scenario
 * runs on two instances in realtime-instances-identity.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { join } from 'node:path';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { deletedAndDisabledIdentitiesLoseTheirSockets, prepareForRevocation, roleChangesReachOpenConnections } from '../support/identity-revocation.js';

let app: PreparedApp;
let server: TestServer;
let admin: Identity;

beforeAll(async () => {
  app = await prepareApp(join(ROOT, 'examples/shop'), 'sqlite');
  prepareForRevocation(app.dir);
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await serve(app.dir, app.env);
  admin = await adminIdentity(app, server.url);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await app?.cleanup();
});

it('deleting or disabling an identity closes its sockets within 5 s and refuses its reliable recovery', async () => {
  await deletedAndDisabledIdentitiesLoseTheirSockets(app, [server.url]);
  expect(server.output()).toContain('connection closed: its identity was deleted or disabled');
}, 60_000);

it('a role change reaches its open connections within 5 s', async () => {
  await roleChangesReachOpenConnections(app, [server.url], admin);
}, 60_000);
