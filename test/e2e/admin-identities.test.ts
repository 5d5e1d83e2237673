/**
 * Admin users and `/api/_admin/identities` (DESIGN §9), once per backend against a spawned `svc serve`
 * of the secure fixture: `svc user create --admin` and `svc user set-admin` as real CLI processes and
 * their effect on existing tokens within 5 s (polled, never slept) — an admin user bypasses access
 * rules like an admin service account, and may use the admin endpoints; then the identities endpoints:
 * 401/403, list, search and paging, creating a user and a service account (its secret once), PATCH of
 * roles, admin, password and disabled (a disabled user's token refused within 5 s), refresh-token
 * families listed and revoked, DELETE, and bodies that are refused with the field named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, serviceAccountToken, userIdentity, userToken, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { ident, sql } from '../../dist/runtime/query/sql.js';

const WITHIN_MS = 5000;

function adminIdentitiesSuite(backend: Backend): void {
  describe(`admin identities on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let plain: Identity;
    const cli = async (args: string[]) => {
      const r = await runCli(args, app.env);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    const get = (url: string, who: Identity | null) => call(base, 'GET', url, undefined, who ? who.headers : {});
    const becomes = (url: string, who: Identity, status: number) => waitFor(async () => (await get(url, who)).status === status, WITHIN_MS);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
      plain = await userIdentity(app, base, 'plain');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers 401 to anonymous callers and 403 to non-admins, with the error body, on every admin endpoint', async () => {
      const paths = [
        '/_admin/identities',
        '/_admin/logs',
        '/_admin/logs/stats',
        '/_admin/realtime',
        '/_admin/agent/sessions',
        '/_admin/agent/threads?identity=x',
        '/_admin/agent/usage',
        '/_admin/schema',
        '/_admin/status',
        '/_admin/nothing',
      ];
      for (const path of paths) {
        const anonymous = await get(path, null);
        expect(anonymous.status, path).toBe(401);
        expect(anonymous.json).toMatchObject({ code: 'UNAUTHORIZED', error: expect.any(String) });
        const refused = await get(path, plain);
        expect(refused.status, path).toBe(403);
        expect(refused.json.code).toBe('FORBIDDEN');
        expect((await get(path, admin)).status, path).toBe(path.endsWith('nothing') ? 404 : 200);
      }
      // Writes are refused before their body is read.
      expect((await call(base, 'POST', '/_admin/identities', '{broken', { 'content-type': 'application/json' })).status).toBe(401);
    });

    it('svc user create --admin makes an admin user who bypasses access rules; set-admin --off/--on takes effect within 5 s', async () => {
      await cli(['user', 'create', app.dir, '--username', 'root', '--password', 'root-password-1', '--admin']);
      const root = await userToken(base, 'root', 'root-password-1');
      expect((await get('/Attachment', root)).status).toBe(200); // auditors only, admins bypass
      expect((await get('/Attachment', plain)).status).toBe(403);
      expect((await get('/_admin/identities', root)).status).toBe(200);
      expect(await cli(['user', 'set-admin', app.dir, '--username', 'root', '--off'])).toEqual({ id: root.id, admin: false });
      await becomes('/_admin/identities', root, 403);
      expect((await get('/Attachment', root)).status).toBe(403);
      expect(await cli(['user', 'set-admin', app.dir, '--username', 'plain', '--on'])).toEqual({ id: plain.id, admin: true });
      await becomes('/Attachment', plain, 200);
      await cli(['user', 'set-admin', app.dir, '--username', 'plain', '--off']);
      await becomes('/Attachment', plain, 403);
      const both = await runCli(['user', 'set-admin', app.dir, '--username', 'plain', '--on', '--off'], app.env);
      expect(both.code).not.toBe(0);
      expect(both.stderr).toContain('--on');
    });

    it('lists users and service accounts with search and paging', async () => {
      const all = await get('/_admin/identities?pageSize=1000', admin);
      expect(all.status).toBe(200);
      const me = all.json.data.find((i: { id: string }) => i.id === admin.id);
      expect(me).toMatchObject({ kind: 'serviceAccount', name: 'test-admin', admin: true, disabled: false, roles: [], clientId: expect.any(String) });
      expect(me.lastSignInAt).not.toBeNull();
      const user = all.json.data.find((i: { id: string }) => i.id === plain.id);
      expect(user).toMatchObject({ kind: 'user', name: 'plain', admin: false, email: null, createdAt: expect.any(String) });
      expect(JSON.stringify(all.json)).not.toMatch(/secretHash|passwordHash|argon2/);
      // Walk the list one row per page: every identity once, in the same order.
      const seen: string[] = [];
      let token: string | undefined;
      do {
        const r = await get(`/_admin/identities?pageSize=1${token ? `&pageToken=${token}` : ''}`, admin);
        expect(r.status).toBe(200);
        seen.push(...r.json.data.map((i: { id: string }) => i.id));
        token = r.json.nextPageToken;
      } while (token);
      expect(seen).toEqual(all.json.data.map((i: { id: string }) => i.id));
      const found = await get('/_admin/identities?q=PLA', admin);
      expect(found.json.data.map((i: { name: string }) => i.name)).toEqual(['plain']);
      expect((await get('/_admin/identities?q=%25', admin)).json.data).toEqual([]); // % is a character, not a wildcard
      expect((await get('/_admin/identities?kind=serviceAccount', admin)).json.data.every((i: { kind: string }) => i.kind === 'serviceAccount')).toBe(true);
      const bad = await get('/_admin/identities?pageToken=nonsense', admin);
      expect(bad.status).toBe(400);
      expect(bad.json.details[0].path).toBe('/pageToken');
    });

    it("shows a user's linked identity providers in the list and at GET /_admin/identities/{id}; 404 for an unknown id", async () => {
      // Links as a provider sign-in writes them (runtime/auth/providers/link.ts), two for one user.
      const db = await openDatabase(backend, app.env.DATABASE_URL!);
      const linked = [
        { provider: 'github', subject: '4242', email: 'plain@users.noreply.github.com', createdAt: new Date('2026-01-02T03:04:05.000Z') },
        { provider: 'google', subject: 'g-1', email: null, createdAt: new Date('2026-02-03T04:05:06.000Z') },
      ];
      try {
        for (const l of linked)
          await db.query(
            sql`INSERT INTO ${ident('_svc_user_providers')} ("id", "userId", "provider", "subject", "email", "createdAt") VALUES (${randomUUID()}, ${plain.id}, ${l.provider}, ${l.subject}, ${l.email}, ${l.createdAt})`,
          );
      } finally {
        await db.close();
      }
      const expected = linked.map((l) => ({ ...l, createdAt: l.createdAt.toISOString() }));
      const one = await get(`/_admin/identities/${plain.id}`, admin);
      expect(one.status).toBe(200);
      expect(one.json).toMatchObject({ id: plain.id, kind: 'user', name: 'plain', providers: expected });
      const listed = (await get('/_admin/identities?pageSize=1000', admin)).json.data;
      expect(listed.find((i: { id: string }) => i.id === plain.id).providers).toEqual(expected);
      for (const i of listed) expect(i.kind === 'user' ? Array.isArray(i.providers) : i.providers === undefined, i.name).toBe(true);
      const sa = await get(`/_admin/identities/${admin.id}`, admin);
      expect(sa.json).toMatchObject({ kind: 'serviceAccount', name: 'test-admin' });
      expect(sa.json.providers).toBeUndefined();
      const missing = await get(`/_admin/identities/${randomUUID()}`, admin);
      expect(missing.status).toBe(404);
      expect(missing.json.code).toBe('NOT_FOUND');
      expect((await get(`/_admin/identities/${plain.id}`, plain)).status).toBe(403);
      expect((await get(`/_admin/identities/${plain.id}`, null)).status).toBe(401);
      // Malformed ids (NUL, very long, odd encodings, SQL and LIKE characters): 4xx, never a crash.
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string({ minLength: 1, maxLength: 300 }).filter((x) => !/^\.{1,2}$/.test(x)),
            fc.constantFrom('%00', '%', '%25', "'; --", '\\', '_%', 'x'.repeat(5000)),
          ),
          async (given) => {
            // The hand-written escapes go as they are; anything else is encoded (a raw `?` would start a query).
            const path = /^%/.test(given) ? given : encodeURIComponent(given);
            const r = await get(`/_admin/identities/${path}`, admin);
            expect(r.status, given).toBeGreaterThanOrEqual(400);
            expect(r.status, given).toBeLessThan(500);
          },
        ),
        { numRuns: 60 },
      );
    });

    it('creates, changes and deletes users with the effect of the CLI commands', async () => {
      const created = await call(
        base,
        'POST',
        '/_admin/identities',
        { username: 'mia', password: 'mia-password-1', roles: ['auditor'], email: 'mia@example.com' },
        admin.headers,
      );
      expect(created.status, created.text).toBe(201);
      expect(created.json).toMatchObject({ kind: 'user', name: 'mia', roles: ['auditor'], admin: false, disabled: false, email: 'mia@example.com' });
      const id = created.json.id as string;
      const mia = await userToken(base, 'mia', 'mia-password-1');
      expect((await get('/Attachment', mia)).status).toBe(200);
      const taken = await call(base, 'POST', '/_admin/identities', { username: 'mia', password: 'other-password' }, admin.headers);
      expect(taken.status).toBe(409);

      const roles = await call(base, 'PATCH', `/_admin/identities/${id}`, { roles: [] }, admin.headers);
      expect(roles.status, roles.text).toBe(200);
      expect(roles.json.roles).toEqual([]);
      await becomes('/Attachment', mia, 403);

      const sessions = await get(`/_admin/identities/${id}/sessions`, admin);
      expect(sessions.status).toBe(200);
      expect(sessions.json.data).toHaveLength(1);
      expect(sessions.json.data[0]).toMatchObject({ familyId: expect.any(String), active: true, expiresAt: expect.any(String) });
      const revoke = await call(base, 'DELETE', `/_admin/identities/${id}/sessions/${sessions.json.data[0].familyId}`, undefined, admin.headers);
      expect(revoke.status).toBe(204);
      const refresh = await call(
        base,
        'POST',
        '/_token',
        new URLSearchParams({ grant_type: 'refresh_token', client_id: 'mia', refresh_token: mia.refreshToken }).toString(),
        {
          'content-type': 'application/x-www-form-urlencoded',
        },
      );
      expect(refresh.json.error).toBe('invalid_grant');
      expect((await call(base, 'DELETE', `/_admin/identities/${id}/sessions/not-a-family`, undefined, admin.headers)).status).toBe(404);

      const password = await call(base, 'PATCH', `/_admin/identities/${id}`, { password: 'mia-new-password' }, admin.headers);
      expect(password.status).toBe(200);
      const again = await userToken(base, 'mia', 'mia-new-password');

      const disabled = await call(base, 'PATCH', `/_admin/identities/${id}`, { disabled: true }, admin.headers);
      expect(disabled.json.disabled).toBe(true);
      await becomes('/_me', again, 401);
      const signIn = await call(base, 'POST', '/_auth', { authority: 'password', username: 'mia', password: 'mia-new-password' });
      expect(signIn.status).toBe(401);
      await call(base, 'PATCH', `/_admin/identities/${id}`, { disabled: false, admin: true }, admin.headers);
      const back = await userToken(base, 'mia', 'mia-new-password');
      expect((await get('/_admin/status', back)).status).toBe(200);

      expect((await call(base, 'DELETE', `/_admin/identities/${id}`, undefined, admin.headers)).status).toBe(204);
      await becomes('/_me', back, 401);
      expect((await call(base, 'PATCH', `/_admin/identities/${id}`, { disabled: true }, admin.headers)).status).toBe(404);
      expect((await call(base, 'DELETE', `/_admin/identities/${id}`, undefined, admin.headers)).status).toBe(404);
    });

    it('creates a service account and shows its secret once', async () => {
      const created = await call(base, 'POST', '/_admin/identities', { kind: 'serviceAccount', name: 'robot', roles: ['editor'] }, admin.headers);
      expect(created.status, created.text).toBe(201);
      expect(created.json).toMatchObject({
        kind: 'serviceAccount',
        name: 'robot',
        roles: ['editor'],
        clientId: expect.stringMatching(/^sa_/),
        clientSecret: expect.any(String),
      });
      const robot = await serviceAccountToken(base, created.json.clientId, created.json.clientSecret);
      expect(robot.id).toBe(created.json.id);
      const listed = await get(`/_admin/identities?q=${created.json.clientId}`, admin);
      expect(listed.json.data).toHaveLength(1);
      expect(listed.json.data[0].clientSecret).toBeUndefined();
      const password = await call(base, 'PATCH', `/_admin/identities/${robot.id}`, { password: 'not-for-accounts' }, admin.headers);
      expect(password.status).toBe(400);
      expect(password.json.details[0].path).toBe('/password');
    });

    it('refuses malformed bodies with 400 naming the field', async () => {
      const cases: [unknown, string][] = [
        [{ username: 'x', password: 'long-enough', extra: 1 }, '/extra'],
        [{ username: 7, password: 'long-enough' }, '/username'],
        [{ username: 'x', password: 'long-enough', roles: 'admin' }, '/roles'],
        [{ username: 'x', password: 'long-enough', admin: 'yes' }, '/admin'],
        [{ kind: 'robot', name: 'x' }, '/kind'],
      ];
      for (const [body, path] of cases) {
        const r = await call(base, 'POST', '/_admin/identities', body, admin.headers);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.code).toBe('VALIDATION_FAILED');
        expect(r.json.details[0].path).toBe(path);
      }
      for (const body of ['[1]', '"x"', 'null', '{']) {
        const r = await call(base, 'POST', '/_admin/identities', body, { ...admin.headers, 'content-type': 'application/json' });
        expect(r.status, body).toBe(400);
      }
      const short = await call(base, 'POST', '/_admin/identities', { username: 'shorty', password: 'short' }, admin.headers);
      expect(short.status).toBe(400);
      const patch = await call(base, 'PATCH', `/_admin/identities/${plain.id}`, { disabled: 'no' }, admin.headers);
      expect(patch.json.details[0].path).toBe('/disabled');
      const nul = await call(base, 'POST', '/_admin/identities', { username: 'a\u0000b', password: 'long-enough' }, admin.headers);
      expect(nul.json.details[0].path).toBe('/username');
      for (const path of [
        '/_admin/identities/%00',
        '/_admin/identities/%00/sessions',
        `/_admin/identities/${plain.id}/sessions/%00`,
        '/_admin/agent/threads/%00',
      ]) {
        const method = path.endsWith('sessions/%00') ? 'DELETE' : path.endsWith('%00') && path.startsWith('/_admin/identities') ? 'PATCH' : 'GET';
        const r = await call(base, method, path, method === 'PATCH' ? { disabled: true } : undefined, admin.headers);
        expect(r.status, `${method} ${path}`).toBe(404);
      }
    });
  });
}

for (const backend of backends()) adminIdentitiesSuite(backend);
