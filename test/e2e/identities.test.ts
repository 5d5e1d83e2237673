/**
 * Managing identities with the CLI while a server runs (DESIGN §3a `svc user delete|disable|set-roles`,
 * `svc service-account delete|disable`), once per backend: the commands run as real processes against
 * the app's database, and the running server applies them to access tokens it already issued within
 * 5 seconds (polled, never slept): new roles change what a token may do, a disabled or deleted
 * identity's token is 401, and it can neither refresh nor sign in again.
 *
 * Each test uses identities of its own, so the tests (and both backends' suites) run concurrently:
 * the file's time goes to waiting out the server's identity cache (up to 4 s per change), and the
 * waits overlap instead of adding up. Identities a test only needs are made in-process (what
 * `svc user create` runs, see auth.ts); the commands under test run as real processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { createServiceAccount, createUser, createUserWithCli, serviceAccountToken, userToken } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';

/** Changes reach existing tokens within this many ms. */
const WITHIN_MS = 5000;

function identitySuite(backend: Backend): void {
  describe(`identity commands on ${backend}`, { concurrent: true }, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    const cli = async (args: string[]) => {
      const r = await runCli(args, app.env);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    const statusOf = async (url: string, token: string) => (await call(base, 'GET', url, undefined, { authorization: `Bearer ${token}` })).status;
    /** Polls until `url` answers `status` with `token`; fails after WITHIN_MS. */
    const becomes = (url: string, token: string, status: number) => waitFor(async () => (await statusOf(url, token)) === status, WITHIN_MS);
    const refresh = (clientId: string, refreshToken: string) =>
      call(base, 'POST', '/_token', new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken }).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('set-roles changes what an existing token may do, within 5 s', async () => {
      const id = await createUser(app, 'rosa', 'rosa-password-1');
      const rosa = await userToken(base, 'rosa', 'rosa-password-1');
      expect(await statusOf('/Attachment', rosa.token)).toBe(403); // auditors only
      expect(await cli(['user', 'set-roles', app.dir, '--username', 'rosa', '--roles', 'auditor,editor,auditor'])).toEqual({
        id,
        roles: ['auditor', 'editor'],
      });
      await becomes('/Attachment', rosa.token, 200);
      expect((await call(base, 'GET', '/_me', undefined, rosa.headers)).json).toEqual({ id, username: 'rosa', roles: ['auditor', 'editor'] });
      expect((await call(base, 'POST', '/Bulletin', { text: 'now an editor' }, rosa.headers)).status).toBe(201);
      expect(await cli(['user', 'set-roles', app.dir, '--username', 'rosa', '--roles', ''])).toEqual({ id, roles: [] });
      await becomes('/Attachment', rosa.token, 403);
      expect((await call(base, 'POST', '/Bulletin', { text: 'not any more' }, rosa.headers)).status).toBe(403);
      // A refreshed token carries the roles in force.
      const renewed = await refresh('rosa', rosa.refreshToken);
      expect(renewed.status, renewed.text).toBe(200);
      expect(JSON.parse(Buffer.from(renewed.json.access_token.split('.')[1], 'base64url').toString()).roles).toEqual([]);
    });

    it('disable: the token is refused within 5 s, refresh and sign-in fail; other users are unaffected', async () => {
      await createUser(app, 'dora', 'dora-password-1', ['editor']);
      await createUser(app, 'other', 'other-password-1');
      const dora = await userToken(base, 'dora', 'dora-password-1');
      const other = await userToken(base, 'other', 'other-password-1');
      expect(await statusOf('/_me', dora.token)).toBe(200);
      const result = await cli(['user', 'disable', app.dir, '--username', 'dora']);
      expect(result).toEqual({ id: dora.id, disabled: true });
      await becomes('/_me', dora.token, 401);
      const refused = await call(base, 'GET', '/Note', undefined, dora.headers);
      expect(refused.status).toBe(401);
      expect(refused.json.code).toBe('UNAUTHORIZED');
      expect(refused.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expect((await refresh('dora', dora.refreshToken)).json.error).toBe('invalid_grant');
      expect((await call(base, 'POST', '/_auth', { authority: 'password', username: 'dora', password: 'dora-password-1' })).status).toBe(401);
      // A cookie of a disabled user counts as no cookie (anonymous), like any invalid cookie.
      expect((await call(base, 'GET', '/_me', undefined, { cookie: `svc_access=${dora.token}` })).status).toBe(401);
      expect((await call(base, 'GET', '/Bulletin', undefined, { cookie: `svc_access=${dora.token}` })).status).toBe(200);
      expect(await statusOf('/_me', other.token)).toBe(200);
    });

    it('delete: the user is gone, its token is refused within 5 s, its name is free again', async () => {
      await createUser(app, 'dean', 'dean-password-1');
      const dean = await userToken(base, 'dean', 'dean-password-1');
      expect(await cli(['user', 'delete', app.dir, '--username', 'dean'])).toEqual({ id: dean.id, deleted: true });
      await becomes('/_me', dean.token, 401);
      expect((await refresh('dean', dean.refreshToken)).json.error).toBe('invalid_grant');
      const again = await createUserWithCli(app, 'dean', 'dean-password-2');
      expect(again).not.toBe(dean.id);
      expect(await statusOf('/_me', dean.token)).toBe(401); // the new dean is another identity
    });

    it('service-account disable and delete, by client id', async () => {
      const a = await createServiceAccount(app, 'robot-a', { roles: ['auditor'] });
      const b = await createServiceAccount(app, 'robot-b');
      const ta = await serviceAccountToken(base, a.clientId, a.clientSecret);
      const tb = await serviceAccountToken(base, b.clientId, b.clientSecret);
      expect(await statusOf('/Attachment', ta.token)).toBe(200);
      expect(await cli(['service-account', 'disable', app.dir, '--client-id', a.clientId])).toEqual({ id: ta.id, disabled: true });
      await becomes('/Attachment', ta.token, 401);
      expect((await refresh(a.clientId, ta.refreshToken)).json.error).toBe('invalid_grant');
      const signIn = await call(base, 'POST', '/_token', { grant_type: 'client_credentials', client_id: a.clientId, client_secret: a.clientSecret });
      expect(signIn.json.error).toBe('invalid_client');
      expect(await cli(['service-account', 'delete', app.dir, '--client-id', b.clientId])).toEqual({ id: tb.id, deleted: true });
      await becomes('/_me', tb.token, 401);
    });

    it('refuses unknown identities and bad roles with a one-line reason and a non-zero exit', async () => {
      await createUser(app, 'ruth', 'ruth-password-1');
      const cases: [string[], RegExp][] = [
        [['user', 'disable', app.dir, '--username', 'nobody'], /no user is named "nobody"/],
        [['user', 'delete', app.dir, '--username', 'nobody'], /no user is named "nobody"/],
        [['user', 'set-roles', app.dir, '--username', 'ruth', '--roles', '_ADMIN'], /role names must start with a letter/],
        [['service-account', 'disable', app.dir, '--client-id', 'sa_nope'], /no service account has the client id "sa_nope"/],
        [['service-account', 'delete', app.dir, '--client-id', 'sa_nope'], /no service account has the client id "sa_nope"/],
        [['user', 'create', app.dir, '--username', 'ruth', '--password', 'another-password'], /a user named "ruth" exists/],
      ];
      for (const [args, reason] of cases) {
        const r = await runCli(args, app.env);
        expect(r.code, args.join(' ')).not.toBe(0);
        expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
        expect(r.stderr, args.join(' ')).toMatch(reason);
      }
      const noRoles = await runCli(['user', 'set-roles', app.dir, '--username', 'ruth'], app.env);
      expect(noRoles.code).not.toBe(0);
      expect(noRoles.stderr).toMatch(/required option '--roles/);
    });
  });
}

for (const backend of backends()) identitySuite(backend);
