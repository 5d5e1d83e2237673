/**
 * What ends when a password is set or an identity disabled or deleted (issue 30 items 3 and 4), once
 * per backend, with real parts: `svc serve` as a process, a real SMTP server on loopback whose mails
 * carry the links. The attacks of the report, exactly: two reset links requested, the newer used, then
 * `_me/password`: the older link (and a verification link) must be refused; an admin setting the
 * password of a user with 5 sessions (`PATCH /api/_admin/identities/{id} {password}`): every refresh
 * token must be refused and every session listed inactive. Disabling and deleting void links too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userToken, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { startSmtp, tokenOf, type TestSmtp } from '../support/smtp.js';

function revocationSuite(backend: Backend): void {
  describe(`links and sessions ended by a password change on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let smtp: TestSmtp;
    let base: string;
    let admin: Identity;
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) => call(base, 'POST', url, body, headers);
    const signIn = (username: string, password: string) => post('/_auth', { authority: 'password', username, password });
    const refresh = (username: string, refreshToken: string) =>
      post('/_token', new URLSearchParams({ grant_type: 'refresh_token', client_id: username, refresh_token: refreshToken }).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    /** Requests a reset of `email` and answers the token of its `n`-th reset mail. */
    const resetLink = async (email: string, n: number) => {
      expect((await post('/_password-reset', { email })).status).toBe(202);
      return tokenOf(await smtp.next(email, 'Reset your password', n));
    };
    const adminUser = async (username: string, password: string, email: string) => {
      const r = await post('/_admin/identities', { username, password, email }, admin.headers);
      expect(r.status, r.text).toBe(201);
      return (r.json as { id: string }).id;
    };

    beforeAll(async () => {
      smtp = await startSmtp();
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/signup'), backend);
      app.env = { ...app.env, SVC_SECRET_SMTP_URL: smtp.url };
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
    });
    afterAll(async () => {
      await server?.close();
      await smtp?.close();
      await app?.cleanup();
    });

    it('two reset links: using the newer voids the older and the verification link; _me/password voids a later one', async () => {
      expect((await post('/_signup', { username: 'olga', password: 'olga-password', email: 'olga@example.test' })).status).toBe(201);
      const verify = tokenOf(await smtp.next('olga@example.test', 'Confirm your e-mail address'));
      const older = await resetLink('olga@example.test', 1);
      const newer = await resetLink('olga@example.test', 2);
      expect(newer).not.toBe(older);
      expect((await post('/_password-reset/confirm', { token: newer, password: 'olga-second-password' })).status).toBe(204);
      const stale = await post('/_password-reset/confirm', { token: older, password: 'attacker-password' });
      expect(stale.status, stale.text).toBe(400);
      expect(stale.json).toMatchObject({ code: 'INVALID_TOKEN', error: expect.any(String) });
      expect((await post('/_verify-email', { token: verify })).json).toMatchObject({ code: 'INVALID_TOKEN' });

      // A link requested while signed in, then the password changed through _me/password.
      const session = await userToken(base, 'olga', 'olga-second-password');
      const later = await resetLink('olga@example.test', 3);
      expect((await post('/_me/password', { current: 'olga-second-password', password: 'olga-third-password' }, session.headers)).status).toBe(204);
      expect((await post('/_password-reset/confirm', { token: later, password: 'attacker-password' })).json).toMatchObject({ code: 'INVALID_TOKEN' });
      expect((await signIn('olga', 'attacker-password')).status).toBe(401);
      expect((await signIn('olga', 'olga-third-password')).status).toBe(200);
    });

    it('an admin setting the password revokes all 5 sessions and voids an outstanding reset link', async () => {
      const id = await adminUser('pavel', 'pavel-password', 'pavel@example.test');
      const sessions: Identity[] = [];
      for (let i = 0; i < 5; i++) sessions.push(await userToken(base, 'pavel', 'pavel-password'));
      const listed = async () =>
        (await call(base, 'GET', `/_admin/identities/${id}/sessions`, undefined, admin.headers)).json as { data: { active: boolean }[] };
      expect((await listed()).data.filter((s) => s.active)).toHaveLength(5);
      const link = await resetLink('pavel@example.test', 1);

      const patched = await call(base, 'PATCH', `/_admin/identities/${id}`, { password: 'pavel-admin-set' }, admin.headers);
      expect(patched.status, patched.text).toBe(200);

      for (const s of sessions) {
        const r = await refresh('pavel', s.refreshToken);
        expect(r.status, r.text).toBe(400);
        expect(r.json).toMatchObject({ error: 'invalid_grant' });
      }
      const after = (await listed()).data;
      expect(after).toHaveLength(5);
      expect(after.filter((s) => s.active)).toEqual([]);
      expect((await post('/_password-reset/confirm', { token: link, password: 'attacker-password' })).json).toMatchObject({ code: 'INVALID_TOKEN' });
      expect((await signIn('pavel', 'pavel-password')).status).toBe(401);
      expect((await signIn('pavel', 'pavel-admin-set')).status).toBe(200);
    });

    it('disabling (then enabling) or deleting a user voids its outstanding reset link', async () => {
      const id = await adminUser('quinn', 'quinn-password', 'quinn@example.test');
      const link = await resetLink('quinn@example.test', 1);
      expect((await call(base, 'PATCH', `/_admin/identities/${id}`, { disabled: true }, admin.headers)).status).toBe(200);
      expect((await call(base, 'PATCH', `/_admin/identities/${id}`, { disabled: false }, admin.headers)).status).toBe(200);
      expect((await post('/_password-reset/confirm', { token: link, password: 'attacker-password' })).json).toMatchObject({ code: 'INVALID_TOKEN' });
      expect((await signIn('quinn', 'quinn-password')).status).toBe(200);

      const gone = await adminUser('rosa', 'rosa-password', 'rosa@example.test');
      const orphan = await resetLink('rosa@example.test', 1);
      expect((await call(base, 'DELETE', `/_admin/identities/${gone}`, undefined, admin.headers)).status).toBe(204);
      const r = await post('/_password-reset/confirm', { token: orphan, password: 'attacker-password' });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ code: 'INVALID_TOKEN' });
    });
  });
}

for (const backend of backends()) revocationSuite(backend);
