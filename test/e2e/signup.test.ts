/**
 * Sign-up, e-mail verification, password reset and the own account (DESIGN §11), once per backend,
 * with real parts: `svc serve` as a process, a real SMTP server on loopback (`smtp-server`) whose
 * mails are read with `mailparser`, the CLI for users made by an operator. Covers: sign-up → mail →
 * verification → sign-in (403 EMAIL_NOT_VERIFIED before, on `_auth` and the `/login` form); reset →
 * mail → new password → the old refresh token refused; at most 5 mails per address and hour, counted
 * across two instances;
 * enumeration (a used address at sign-up and an unknown address at reset answer like success);
 * changing the password; deleting the own account (rows keep `createdBy`); the login page's links and
 * forms; sign-up off; malformed bodies naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userToken } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { startSmtp, tokenOf, type TestSmtp } from '../support/smtp.js';
import { waitFor } from '../support/wait.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function signupSuite(backend: Backend): void {
  describe(`sign-up and mail on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let smtp: TestSmtp;
    let base: string;
    let origin: string;
    const post = (url: string, body: unknown, headers: Record<string, string> = {}) => call(base, 'POST', url, body, headers);
    const signIn = (username: string, password: string) => post('/_auth', { authority: 'password', username, password });
    const operatorUser = async (username: string, password: string, email: string) => {
      const r = await runCli(['user', 'create', app.dir, '--username', username, '--password', password, '--email', email, '--roles', 'member'], app.env);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).id as string;
    };

    beforeAll(async () => {
      smtp = await startSmtp();
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/signup'), backend);
      app.env = { ...app.env, SVC_SECRET_SMTP_URL: smtp.url };
      server = await serve(app.dir, app.env);
      base = server.url;
      origin = new URL(base).origin;
    });
    afterAll(async () => {
      await server?.close();
      await smtp?.close();
      await app?.cleanup();
    });

    it('signs up, mails a verification link, refuses sign-in until it is used, then signs in with the sign-up roles', async () => {
      const created = await post('/_signup', { username: 'alice', password: 'alice-password', email: 'Alice@Example.test' });
      expect(created.status, created.text).toBe(201);
      expect(Object.keys(created.json as object)).toEqual(['id']);
      const id = (created.json as { id: string }).id;
      expect(id).toMatch(UUID);

      const before = await signIn('alice', 'alice-password');
      expect(before.status).toBe(403);
      expect(before.json).toMatchObject({ code: 'EMAIL_NOT_VERIFIED' });
      const form = await fetch(`${origin}/login`, { method: 'POST', body: new URLSearchParams({ username: 'alice', password: 'alice-password' }) });
      expect(form.status).toBe(403);
      expect(form.headers.getSetCookie()).toEqual([]);
      expect(await form.text()).toContain('Confirm your e-mail address first');

      const mail = await smtp.next('alice@example.test', 'Confirm your e-mail address');
      expect(mail.from).toBe('no-reply@signup.test');
      expect(mail.text).toContain(`${origin}/login/verify?token=`);
      const token = tokenOf(mail);
      // The link's page does not spend the token (mail scanners open links); its form does.
      const page = await fetch(`${origin}/login/verify?token=${token}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(`name="token" value="${token}"`);
      expect((await post('/_verify-email', { token })).status).toBe(204);
      const again = await post('/_verify-email', { token });
      expect(again.status).toBe(400);
      expect(again.json).toMatchObject({ code: 'INVALID_TOKEN' });

      const session = await userToken(base, 'alice', 'alice-password');
      expect(session.id).toBe(id);
      const me = await call(base, 'GET', '/_me', undefined, session.headers);
      expect(me.json).toEqual({ id, username: 'alice', roles: ['member'] });
      expect((await post('/Note', { text: 'hello' }, session.headers)).status).toBe(201);
    });

    it('answers 409 USERNAME_TAKEN, and a used address exactly like a success while it mails the owner', async () => {
      const taken = await post('/_signup', { username: 'alice', password: 'other-password', email: 'fresh@example.test' });
      expect(taken.status).toBe(409);
      expect(taken.json).toMatchObject({ code: 'USERNAME_TAKEN' });

      const real = await post('/_signup', { username: 'carol', password: 'carol-password', email: 'carol@example.test' });
      const used = await post('/_signup', { username: 'mallory', password: 'mallory-password', email: 'ALICE@example.test' });
      expect(used.status).toBe(real.status);
      expect(used.headers.get('content-type')).toBe(real.headers.get('content-type'));
      expect(Object.keys(used.json as object)).toEqual(Object.keys(real.json as object));
      expect((used.json as { id: string }).id).toMatch(UUID);
      expect(used.text.length).toBe(real.text.length);
      const notice = await smtp.next('alice@example.test', 'Someone tried to create an account');
      expect(notice.text).not.toContain('token=');
      // mallory is held by a disabled user without an address: signing in fails (docs/auth.md).
      expect((await signIn('mallory', 'mallory-password')).status).toBe(401);
    });

    it('resets a password by mail: the old refresh token and the old password stop working', async () => {
      const old = await userToken(base, 'alice', 'alice-password');
      const unknown = await post('/_password-reset', { email: 'nobody@example.test' });
      const known = await post('/_password-reset', { email: 'alice@EXAMPLE.test' });
      expect(known.status).toBe(202);
      expect(unknown.status).toBe(202);
      expect(unknown.text).toBe(known.text);
      expect(unknown.headers.get('content-type')).toBe(known.headers.get('content-type'));

      const mail = await smtp.next('alice@example.test', 'Reset your password');
      const token = tokenOf(mail);
      const short = await post('/_password-reset/confirm', { token, password: 'short' });
      expect(short.status).toBe(400);
      expect(short.json).toMatchObject({ details: [{ path: '/password' }] });
      expect((await post('/_password-reset/confirm', { token, password: 'alice-new-password' })).status).toBe(204);
      expect((await post('/_password-reset/confirm', { token, password: 'alice-third-password' })).json).toMatchObject({ code: 'INVALID_TOKEN' });

      const refreshed = await post(
        '/_token',
        new URLSearchParams({ grant_type: 'refresh_token', client_id: 'alice', refresh_token: old.refreshToken }).toString(),
        {
          'content-type': 'application/x-www-form-urlencoded',
        },
      );
      expect(refreshed.status).toBe(400);
      expect(refreshed.json).toMatchObject({ error: 'invalid_grant' });
      expect((await signIn('alice', 'alice-password')).status).toBe(401);
      expect((await signIn('alice', 'alice-new-password')).status).toBe(200);
      expect(smtp.mailsTo('nobody@example.test')).toEqual([]);
    });

    it('sends at most 5 mails to one address within an hour, counted across instances', async () => {
      await operatorUser('dave', 'dave-password', 'dave@example.test');
      const second = await serve(app.dir, app.env);
      try {
        for (const url of [base, second.url, base, second.url, base, second.url])
          expect((await call(url, 'POST', '/_password-reset', { email: 'dave@example.test' })).status).toBe(202);
        await waitFor(() => smtp.mailsTo('dave@example.test').length >= 5, 10_000);
        const refused = 'this address already had 5 mails within the hour';
        await waitFor(() => server.output().includes(refused) || second.output().includes(refused), 10_000);
        expect(smtp.mailsTo('dave@example.test')).toHaveLength(5);
      } finally {
        await second.close();
      }
    });

    it('svc user create --email refuses an address another user has, in any letter case', async () => {
      const r = await runCli(['user', 'create', app.dir, '--username', 'dave2', '--password', 'dave-password', '--email', 'DAVE@example.test'], app.env);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('another user has this e-mail address');
    });

    it('changes the password with the current one; every refresh token of the user is revoked', async () => {
      await operatorUser('erin', 'erin-password', 'erin@example.test');
      const session = await userToken(base, 'erin', 'erin-password');
      const wrong = await post('/_me/password', { current: 'not-erins', password: 'erin-new-password' }, session.headers);
      expect(wrong.status).toBe(403);
      const missing = await post('/_me/password', { password: 'erin-new-password' }, session.headers);
      expect(missing.status).toBe(400);
      expect(missing.json).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: '/current' }] });
      expect((await post('/_me/password', { current: 'erin-password', password: 'erin-new-password' })).status).toBe(401);
      expect((await post('/_me/password', { current: 'erin-password', password: 'erin-new-password' }, session.headers)).status).toBe(204);
      expect((await signIn('erin', 'erin-password')).status).toBe(401);
      expect((await signIn('erin', 'erin-new-password')).status).toBe(200);
      const refreshed = await post(
        '/_token',
        new URLSearchParams({ grant_type: 'refresh_token', client_id: 'erin', refresh_token: session.refreshToken }).toString(),
        {
          'content-type': 'application/x-www-form-urlencoded',
        },
      );
      expect(refreshed.status).toBe(400);
    });

    it('deletes the own account with its password: the session ends, its rows keep createdBy', async () => {
      const id = await operatorUser('frank', 'frank-password', 'frank@example.test');
      const session = await userToken(base, 'frank', 'frank-password');
      const note = await post('/Note', { text: 'by frank' }, session.headers);
      expect(note.status).toBe(201);
      const noteId = (note.json as { data: string[] }).data[0];
      expect((await call(base, 'DELETE', '/_me', { password: 'wrong-password' }, session.headers)).status).toBe(403);
      expect((await call(base, 'DELETE', '/_me', { password: 'frank-password' }, session.headers)).status).toBe(204);
      expect((await call(base, 'GET', '/_me', undefined, session.headers)).status).toBe(401);
      expect((await signIn('frank', 'frank-password')).status).toBe(401);
      const admin = await adminIdentity(app, base);
      const row = await call(base, 'GET', `/Note/${noteId}`, undefined, admin.headers);
      expect(row.json).toMatchObject({ text: 'by frank', createdBy: id });
      // The address is free again.
      expect((await post('/_signup', { username: 'frank2', password: 'frank-password', email: 'FRANK@example.test' })).status).toBe(201);
      await smtp.next('frank@example.test', 'Confirm your e-mail address');
    });

    it('shows "Create account" and "Forgot password" on /login, and the forms work without JavaScript', async () => {
      const login = await (await fetch(`${origin}/login`)).text();
      expect(login).toContain('<a href="/login/signup">Create account</a>');
      expect(login).toContain('<a href="/login/forgot">Forgot password</a>');
      const signupPage = await fetch(`${origin}/login/signup`);
      expect(signupPage.status).toBe(200);
      expect(signupPage.headers.get('content-security-policy')).toContain("form-action 'self'");
      expect(await signupPage.text()).toContain('<form method="post" action="/login/signup">');
      const fields = new URLSearchParams({ username: 'gina', password: 'gina-password', email: 'gina@example.test' });
      const crossSite = await fetch(`${origin}/login/signup`, { method: 'POST', body: fields, headers: { origin: 'https://evil.example' } });
      expect(crossSite.status).toBe(403);
      const made = await fetch(`${origin}/login/signup`, { method: 'POST', body: fields });
      expect(made.status).toBe(201);
      expect(await made.text()).toContain('We sent you a mail');
      const token = tokenOf(await smtp.next('gina@example.test', 'Confirm your e-mail address'));
      const verified = await fetch(`${origin}/login/verify`, { method: 'POST', body: new URLSearchParams({ token }) });
      expect(verified.status).toBe(200);
      expect(await verified.text()).toContain('Your e-mail address is confirmed');
      const forgot = await fetch(`${origin}/login/forgot`, { method: 'POST', body: new URLSearchParams({ email: 'gina@example.test' }) });
      expect(forgot.status).toBe(200);
      const reset = tokenOf(await smtp.next('gina@example.test', 'Reset your password'));
      expect(await (await fetch(`${origin}/login/reset?token=${reset}`)).text()).toContain(`value="${reset}"`);
      const changed = await fetch(`${origin}/login/reset`, { method: 'POST', body: new URLSearchParams({ token: reset, password: 'gina-new-password' }) });
      expect(changed.status).toBe(200);
      expect((await signIn('gina', 'gina-new-password')).status).toBe(200);
    });

    it('answers malformed bodies with 400 naming the field', async () => {
      const cases: [string, unknown, string][] = [
        ['/_signup', { password: 'long-enough' }, '/username'],
        ['/_signup', { username: 'hank', password: 'long-enough' }, '/email'],
        ['/_signup', { username: 'hank', password: 'long-enough', email: 'not-an-address' }, '/email'],
        ['/_signup', { username: 'hank', password: 42, email: 'hank@example.test' }, '/password'],
        ['/_verify-email', {}, '/token'],
        ['/_password-reset', { email: 'nope' }, '/email'],
        ['/_password-reset/confirm', { token: 'x' }, '/password'],
      ];
      for (const [url, body, path] of cases) {
        const r = await post(url, body);
        expect(r.status, `${url} ${JSON.stringify(body)}`).toBe(400);
        expect(r.json).toMatchObject({ code: 'VALIDATION_FAILED' });
        expect((r.json as { details: { path: string }[] }).details.map((d) => d.path)).toContain(path);
      }
      const short = await post('/_signup', { username: 'hank', password: 'short', email: 'hank@example.test' });
      expect(short.status).toBe(400);
      expect((await post('/_verify-email', { token: 'made-up' })).json).toMatchObject({ code: 'INVALID_TOKEN' });
      expect((await call(base, 'PUT', '/_signup', {})).status).toBe(405);
    });

    it('lists the endpoints in openapi.json, none as an agent tool', async () => {
      const doc = (await call(base, 'GET', '/_openapi')).json as { paths: Record<string, Record<string, { 'x-svc-agent'?: boolean }>> };
      for (const [path, method] of [
        ['/_signup', 'post'],
        ['/_verify-email', 'post'],
        ['/_password-reset', 'post'],
        ['/_password-reset/confirm', 'post'],
        ['/_me/password', 'post'],
        ['/_me', 'delete'],
      ])
        expect(doc.paths[path][method]['x-svc-agent'], `${method} ${path}`).toBe(false);
    });
  });

  describe(`sign-up turned off on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('refuses sign-up with 403 SIGNUP_DISABLED and shows no account links', async () => {
      const r = await call(server.url, 'POST', '/_signup', { username: 'ivan', password: 'ivan-password', email: 'ivan@example.test' });
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({ code: 'SIGNUP_DISABLED' });
      const origin = new URL(server.url).origin;
      const login = await (await fetch(`${origin}/login`)).text();
      expect(login).not.toContain('Create account');
      expect(login).not.toContain('Forgot password');
      expect((await fetch(`${origin}/login/signup`)).status).toBe(404);
      expect((await call(server.url, 'POST', '/_password-reset', { email: 'ivan@example.test' })).status).toBe(202);
      // Without mail.smtp, mails go to the log; sign-up is off, so serve did not warn about it.
      expect(server.output()).not.toContain('sign-up is enabled but svc.json has no mail.smtp');
    });

    it('counts reset requests with the sign-in limiter: the eleventh from one address within 15 minutes is 429', async () => {
      const reset = () => call(server.url, 'POST', '/_password-reset', { email: 'someone@example.test' });
      // The test above made the first request.
      for (let i = 0; i < 9; i++) expect((await reset()).status).toBe(202);
      const refused = await reset();
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ code: 'RATE_LIMITED' });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });
}

for (const backend of backends()) signupSuite(backend);

// The log mailer and the start-up warning do not touch the database beyond what the suites above
// cover on both backends: SQLite only.
describe('sign-up without mail.smtp', () => {
  let app: PreparedApp;
  let server: TestServer;

  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/signup'), 'sqlite', (dir) =>
      writeFileSync(join(dir, 'svc.json'), JSON.stringify({ name: 'signup', auth: { signup: { enabled: true, roles: ['member'] } } })),
    );
    server = await serve(app.dir, app.env);
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('warns at start, writes the mails to the log, and their links work', async () => {
    expect(server.output()).toContain('sign-up is enabled but svc.json has no mail.smtp');
    const origin = new URL(server.url).origin;
    const login = await (await fetch(`${origin}/login`)).text();
    expect(login).toContain('Create account');
    expect(login).not.toContain('Forgot password');
    expect((await call(server.url, 'POST', '/_signup', { username: 'jane', password: 'jane-password', email: 'jane@example.test' })).status).toBe(201);
    const line = await waitFor(() =>
      server
        .output()
        .split('\n')
        .find((l) => l.includes('"to":"jane@example.test"')),
    );
    const mail = JSON.parse(line).mail as { to: string; subject: string; text: string };
    expect(mail.subject).toContain('Confirm your e-mail address');
    expect((await call(server.url, 'POST', '/_verify-email', { token: tokenOf({ ...mail, to: [mail.to], from: '' }) })).status).toBe(204);
    expect((await call(server.url, 'POST', '/_auth', { authority: 'password', username: 'jane', password: 'jane-password' })).status).toBe(200);
  });
});
