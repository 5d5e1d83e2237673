/**
 * Authentication over real HTTP (SPEC §4.6, §5; DESIGN §4 "Auth details"), once per backend:
 * `_auth`, `_token` (RFC 6749), refresh rotation and reuse detection, cookies, `_refresh`, `_logout`,
 * `_me`, `_webAppConfig`, and the attacks that must fail: forged JWTs (tampered, expired, wrong key,
 * `alg: none`, HS256 with the public key), a replayed refresh token, a secret brute force, a
 * cross-origin cookie POST, and secrets or hashes leaking into responses or log lines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { base64url, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, createServiceAccount, createUser, serviceAccountToken, userToken, type Identity } from '../support/auth.js';
import { call, type Reply } from '../support/scenario.js';
import { selectRows } from '../support/system-tables.js';

const PASSWORD = 'alice-password-1';

/** The `Set-Cookie` lines of a response. */
const cookiesOf = (r: Reply) => r.headers.getSetCookie();
/** `name=value` of a response's cookie, for a `Cookie` request header. */
const cookiePair = (r: Reply, name: string) =>
  cookiesOf(r)
    .find((c) => c.startsWith(`${name}=`))!
    .split(';')[0];

function authSuite(backend: Backend): void {
  describe(`authentication on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let host: string;
    let sa: { clientId: string; clientSecret: string };
    let alice: Identity;
    /** Every response body seen, scanned for secrets at the end. */
    const seen: string[] = [];
    const req = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
      const r = await call(base, method, url, body, headers);
      seen.push(r.text, JSON.stringify([...r.headers]));
      return r;
    };
    const form = (fields: Record<string, string>) => ({
      body: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    const token = async (fields: Record<string, string>, extra: Record<string, string> = {}) => {
      const f = form(fields);
      return req('POST', '/_token', f.body, { ...f.headers, ...extra });
    };

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      host = new URL(base).host;
      sa = await createServiceAccount(app, 'robot', { roles: ['editor'] });
      await createUser(app, 'alice', PASSWORD, ['editor']);
      alice = await userToken(base, 'alice', PASSWORD);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('signs in with _auth (service account or password) and answers _me and _webAppConfig', async () => {
      const r = await req('POST', '/_auth', { authority: 'serviceaccount', clientId: sa.clientId, clientSecret: sa.clientSecret });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.any(String) });
      expect(r.headers.get('cache-control')).toBe('no-store');
      const me = await req('GET', '/_me', undefined, { authorization: `Bearer ${r.json.access_token}` });
      expect(me.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), username: 'robot', roles: ['editor'] });
      const cookies = cookiesOf(r);
      expect(cookies.find((c) => c.startsWith('svc_access='))).toMatch(/; Max-Age=3600; Path=\/; .*HttpOnly; SameSite=Lax/);
      expect(cookies.find((c) => c.startsWith('svc_refresh='))).toMatch(/; Path=\/api; Expires=.*HttpOnly; SameSite=Lax/);
      const user = await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD });
      expect((await req('GET', '/_me', undefined, { authorization: `Bearer ${user.json.access_token}` })).json).toMatchObject({
        username: 'alice',
        roles: ['editor'],
      });
      // A cross-site page may get tokens but must not sign the browser in.
      const foreign = await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD }, { origin: 'https://evil.example' });
      expect(foreign.status).toBe(200);
      expect(cookiesOf(foreign)).toEqual([]);
      const bad: [unknown, number, string][] = [
        [{ authority: 'password', username: 'alice', password: 'wrong-password' }, 401, 'UNAUTHORIZED'],
        [{ authority: 'serviceaccount', clientId: sa.clientId, clientSecret: 'nope' }, 401, 'UNAUTHORIZED'],
        [{ authority: 'serviceaccount', clientId: 'sa_unknown', clientSecret: sa.clientSecret }, 401, 'UNAUTHORIZED'],
        [{ authority: 'password', username: 'alice' }, 400, 'VALIDATION_FAILED'],
        [{ authority: 'ldap', username: 'alice', password: PASSWORD }, 400, 'VALIDATION_FAILED'],
      ];
      for (const [body, status, code] of bad) {
        const b = await req('POST', '/_auth', body);
        expect(b.status, JSON.stringify(body)).toBe(status);
        expect(b.json.code).toBe(code);
        expect(cookiesOf(b)).toEqual([]);
      }
      expect((await req('GET', '/_me')).status).toBe(401);
      expect((await req('GET', '/_webAppConfig')).json).toMatchObject({ loginUrl: '/login', loginMethods: ['password'] });
    });

    it('issues tokens at _token (RFC 6749): form, JSON and HTTP Basic; RFC error bodies; never cookies', async () => {
      const viaForm = await token({ grant_type: 'client_credentials', client_id: sa.clientId, client_secret: sa.clientSecret });
      expect(viaForm.status).toBe(200);
      expect(viaForm.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.any(String) });
      expect(cookiesOf(viaForm)).toEqual([]);
      const viaJson = await req('POST', '/_token', { grant_type: 'client_credentials', client_id: sa.clientId, client_secret: sa.clientSecret });
      expect(viaJson.status).toBe(200);
      const basic = Buffer.from(`${sa.clientId}:${sa.clientSecret}`).toString('base64');
      expect((await token({ grant_type: 'client_credentials' }, { authorization: `Basic ${basic}` })).status).toBe(200);
      const errors: [Record<string, string>, number, string][] = [
        [{}, 400, 'invalid_request'],
        [{ grant_type: 'password', username: 'alice', password: PASSWORD }, 400, 'unsupported_grant_type'],
        [{ grant_type: 'client_credentials', client_id: sa.clientId }, 400, 'invalid_request'],
        [{ grant_type: 'client_credentials', client_id: sa.clientId, client_secret: 'wrong' }, 401, 'invalid_client'],
        [{ grant_type: 'refresh_token', client_id: sa.clientId }, 400, 'invalid_request'],
        [{ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: 'made-up' }, 400, 'invalid_grant'],
      ];
      for (const [fields, status, error] of errors) {
        const r = await token(fields);
        expect(r.status, JSON.stringify(fields)).toBe(status);
        expect(r.json).toEqual({ error, error_description: expect.any(String) });
      }
      const malformed = await req('POST', '/_token', '{"grant_type": ', { 'content-type': 'application/json' });
      expect(malformed.status).toBe(400);
      expect(malformed.json.error).toBe('invalid_request');
    });

    it('rotates refresh tokens; replaying a spent one revokes the whole family', async () => {
      const first = (await token({ grant_type: 'client_credentials', client_id: sa.clientId, client_secret: sa.clientSecret })).json;
      const second = await token({ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: first.refresh_token });
      expect(second.status).toBe(200);
      expect(second.json.refresh_token).not.toBe(first.refresh_token);
      expect((await req('GET', '/_me', undefined, { authorization: `Bearer ${second.json.access_token}` })).json.username).toBe('robot');
      // Issued to another client: refused, and does not spend it.
      expect((await token({ grant_type: 'refresh_token', client_id: 'alice', refresh_token: second.json.refresh_token })).json.error).toBe('invalid_grant');
      // The attacker replays the spent token: refused, and the family is revoked...
      const replay = await token({ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: first.refresh_token });
      expect(replay.status).toBe(400);
      expect(replay.json.error).toBe('invalid_grant');
      // ...so the legitimate holder's newest token stops working too.
      expect((await token({ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: second.json.refresh_token })).json.error).toBe('invalid_grant');
      // A user's refresh token is bound to the username as its client_id.
      const user = await token({ grant_type: 'refresh_token', client_id: 'alice', refresh_token: alice.refreshToken });
      expect(user.status, user.text).toBe(200);
      const stored = await selectRows(app.env, 'SELECT "tokenHash" FROM "_svc_refresh_tokens"');
      expect(stored.length).toBeGreaterThan(3);
      for (const row of stored) expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/); // only digests are kept
      expect(stored.map((r) => r.tokenHash)).not.toContain(first.refresh_token);
    });

    it('refuses forged, tampered, expired and foreign access tokens with 401', async () => {
      const [row] = await selectRows(app.env, 'SELECT "privateJwk", "publicJwk" FROM "_svc_signing_keys"');
      const privateKey = await importJWK(JSON.parse(String(row.privateJwk)) as JWK, 'EdDSA');
      const publicJwk = JSON.parse(String(row.publicJwk)) as JWK;
      const [header, payload, signature] = alice.token.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const kid = JSON.parse(Buffer.from(header, 'base64url').toString()).kid;
      const b64 = (v: object) => base64url.encode(JSON.stringify(v));
      const sign = (c: object, key = privateKey, k = kid) => new SignJWT({ ...c }).setProtectedHeader({ alg: 'EdDSA', kid: k, typ: 'at+jwt' }).sign(key);
      const other = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const now = Math.floor(Date.now() / 1000);
      const hsKey = new TextEncoder().encode(JSON.stringify(publicJwk));
      const forged: [string, string][] = [
        ['tampered payload (admin: true)', `${header}.${b64({ ...claims, admin: true, kind: 'serviceAccount' })}.${signature}`],
        ['tampered signature', `${header}.${payload}.${signature.slice(0, -4)}AAAA`],
        ['expired', await sign({ ...claims, iat: now - 7200, exp: now - 3600 })],
        ['wrong key, same kid', await sign(claims, other.privateKey)],
        ['alg none', `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${payload}.`],
        ['HS256 keyed with the public key', await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' }).sign(hsKey)],
        [
          'HS256 keyed with the raw public key bytes',
          await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' }).sign(base64url.decode(String(publicJwk.x))),
        ],
        ['another app (issuer)', await sign({ ...claims, iss: 'svc:other', aud: 'svc:other' })],
        ['not a JWT', 'hello'],
      ];
      expect((await req('GET', '/Note', undefined, { authorization: `Bearer ${await sign(claims)}` })).status).toBe(200); // the real key works
      for (const [name, jwt] of forged) {
        for (const url of ['/Note', '/_me']) {
          const r = await req('GET', url, undefined, { authorization: `Bearer ${jwt}` });
          expect(r.status, `${name} on ${url}: ${r.text}`).toBe(401);
          expect(r.json.code).toBe('UNAUTHORIZED');
          expect(r.headers.get('www-authenticate'), name).toBe('Bearer error="invalid_token"');
        }
        const viaCookie = await req('GET', '/_me', undefined, { cookie: `svc_access=${jwt}` });
        expect(viaCookie.status, `${name} as cookie`).toBe(401); // counted as anonymous
      }
      expect((await req('GET', '/Note', undefined, { authorization: 'Bearer' })).status).toBe(401);
      expect((await req('GET', '/Bulletin', undefined, { authorization: `Bearer ${forged[2][1]}` })).status).toBe(401); // never silently anonymous
    });

    it('keeps browser sessions in cookies: _refresh renews them, _logout revokes and clears them', async () => {
      const signIn = await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD });
      const access = cookiePair(signIn, 'svc_access');
      const refresh = cookiePair(signIn, 'svc_refresh');
      expect((await req('GET', '/_me', undefined, { cookie: access })).json.username).toBe('alice');
      const renewed = await req('POST', '/_refresh', undefined, { cookie: refresh });
      expect(renewed.status).toBe(200);
      expect(renewed.json).toEqual({ expires_in: 3600 });
      const refresh2 = cookiePair(renewed, 'svc_refresh');
      expect(refresh2).not.toBe(refresh);
      expect((await req('GET', '/_me', undefined, { cookie: cookiePair(renewed, 'svc_access') })).status).toBe(200);
      expect((await req('POST', '/_refresh')).status).toBe(401);
      const out = await req('POST', '/_logout', undefined, { cookie: refresh2 });
      expect(out.status).toBe(204);
      expect(cookiesOf(out).join('\n')).toMatch(/svc_access=;.*Expires=Thu, 01 Jan 1970/);
      expect(cookiesOf(out).join('\n')).toMatch(/svc_refresh=;.*Path=\/api/);
      expect((await req('POST', '/_refresh', undefined, { cookie: refresh2 })).status).toBe(401); // revoked
      expect((await req('POST', '/_logout')).status).toBe(204);
    });

    it('_logout by a bearer client revokes the family of the refresh_token in its body (JSON or form)', async () => {
      // JSON body, from a service account signed in at _token.
      const first = (await token({ grant_type: 'client_credentials', client_id: sa.clientId, client_secret: sa.clientSecret })).json;
      const rotated = (await token({ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: first.refresh_token })).json;
      const out = await req('POST', '/_logout', { refresh_token: rotated.refresh_token }, { authorization: `Bearer ${rotated.access_token}` });
      expect(out.status).toBe(204);
      const after = await token({ grant_type: 'refresh_token', client_id: sa.clientId, refresh_token: rotated.refresh_token });
      expect(after.status).toBe(400);
      expect(after.json.error).toBe('invalid_grant');
      // Form body, from a cross-origin page holding a user's tokens: no cookie is involved, so no origin check.
      const user = (await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD }, { origin: 'https://spa.example' })).json;
      const f = form({ refresh_token: user.refresh_token });
      expect(
        (await req('POST', '/_logout', f.body, { ...f.headers, origin: 'https://spa.example', authorization: `Bearer ${user.access_token}` })).status,
      ).toBe(204);
      expect((await req('POST', '/_refresh', undefined, { cookie: `svc_refresh=${user.refresh_token}` })).status).toBe(401);
      expect((await token({ grant_type: 'refresh_token', client_id: 'alice', refresh_token: user.refresh_token })).json.error).toBe('invalid_grant');
      // Unknown tokens are ignored; other sessions are untouched.
      const other = (await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD })).json;
      expect((await req('POST', '/_logout', { refresh_token: 'made-up' })).status).toBe(204);
      expect((await token({ grant_type: 'refresh_token', client_id: 'alice', refresh_token: other.refresh_token })).status).toBe(200);
    });

    it('refuses cookie-authenticated unsafe requests from another origin (CSRF), not bearer ones', async () => {
      const signIn = await req('POST', '/_auth', { authority: 'password', username: 'alice', password: PASSWORD });
      const cookie = cookiePair(signIn, 'svc_access');
      const body = { title: 'csrf?' };
      const cases: [string, Record<string, string>, number][] = [
        ['cookie, same origin', { cookie, origin: `http://${host}` }, 201],
        ['cookie, no Origin or Referer (non-browser)', { cookie }, 201],
        ['cookie, foreign Origin', { cookie, origin: 'https://evil.example' }, 403],
        ['cookie, Origin null', { cookie, origin: 'null' }, 403],
        ['cookie, same host other port', { cookie, origin: `http://${host.split(':')[0]}:1` }, 403],
        ['cookie, same host and port, other scheme', { cookie, origin: `https://${host}` }, 403],
        ['cookie, same host and port, other scheme in Referer', { cookie, referer: `https://${host}/app` }, 403],
        ['cookie, same origin in Referer', { cookie, referer: `http://${host}/app` }, 201],
        ['cookie, foreign Referer only', { cookie, referer: 'https://evil.example/page' }, 403],
        ['bearer, foreign Origin', { ...alice.headers, origin: 'https://evil.example' }, 201],
      ];
      const before = (await req('GET', '/Note?count=only', undefined, alice.headers)).json.meta.count;
      for (const [name, headers, status] of cases) {
        const r = await req('POST', '/Note', body, headers);
        expect(r.status, `${name}: ${r.text}`).toBe(status);
      }
      expect((await req('GET', '/Note?count=only', undefined, alice.headers)).json.meta.count).toBe(before + 4);
      expect((await req('GET', '/Note', undefined, { cookie, origin: 'https://evil.example' })).status).toBe(200); // reads are not state-changing
      expect((await req('POST', '/_logout', undefined, { cookie: cookiePair(signIn, 'svc_refresh'), origin: 'https://evil.example' })).status).toBe(403);
    });

    it('locks out a brute force of a service-account secret (429 with Retry-After), per client id', async () => {
      const target = await createServiceAccount(app, 'target');
      for (let i = 0; i < 10; i++) {
        expect((await token({ grant_type: 'client_credentials', client_id: target.clientId, client_secret: `guess-${i}` })).status).toBe(401);
      }
      const locked = await token({ grant_type: 'client_credentials', client_id: target.clientId, client_secret: target.clientSecret });
      expect(locked.status).toBe(429); // even the right secret, until the window ends
      expect(locked.json).toEqual({ error: 'rate_limited', error_description: expect.stringContaining('try again') });
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
      const viaAuth = await req('POST', '/_auth', { authority: 'serviceaccount', clientId: target.clientId, clientSecret: target.clientSecret });
      expect(viaAuth.status).toBe(429);
      expect(viaAuth.json.code).toBe('RATE_LIMITED');
      expect(Number(viaAuth.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await token({ grant_type: 'client_credentials', client_id: sa.clientId, client_secret: sa.clientSecret })).status).toBe(200); // others unaffected
      for (let i = 0; i < 10; i++) await req('POST', '/_auth', { authority: 'password', username: 'mallory-target', password: `guess-${i}` });
      expect((await req('POST', '/_auth', { authority: 'password', username: 'mallory-target', password: 'x' })).status).toBe(429);
    });

    it('accepts client log batches from authenticated callers and lets admins read them back', async () => {
      expect((await req('POST', '/_log', [{ message: 'anon' }])).status).toBe(401);
      const bad: [string | unknown, string][] = [
        ['[{"message": ', 'malformed JSON'],
        [{ message: 'not an array' }, 'object'],
        [[{ severity: 2 }], 'missing message'],
        [[{ message: 'x', severity: 9 }], 'severity out of range'],
        [[{ message: 'x', severity: 'high' }], 'severity not an integer'],
        [[], 'empty batch'],
      ];
      for (const [body, name] of bad) {
        const r = await req('POST', '/_log', body, { ...alice.headers, 'content-type': 'application/json' });
        expect(r.status, name).toBe(400);
      }
      const ok = await req('POST', '/_log', [{ message: 'client says hi' }, { message: 'client failed', severity: 1 }], alice.headers);
      expect(ok.status).toBe(200);
      const line = (m: string) =>
        server
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l))
          .find((l) => l.clientMessage === m);
      await expect.poll(() => line('client says hi')).toMatchObject({ level: 30, severity: 3, user: { id: alice.id, username: 'alice' } });
      await expect.poll(() => line('client failed')).toMatchObject({ level: 50, severity: 1, user: { username: 'alice' } });
      const admin = await adminIdentity(app, base, 'log-reader');
      expect((await req('GET', '/_log', undefined, alice.headers)).status).toBe(403);
      expect((await req('GET', '/_log')).status).toBe(401);
      const rows = await req('GET', `/_log?count=true&filter=${encodeURIComponent(`createdBy eq "${alice.id}"`)}&sortBy=severity`, undefined, admin.headers);
      expect(rows.status, rows.text).toBe(200);
      expect(rows.json.meta.count).toBe(2);
      expect(rows.json.data.map((r: any) => [r.message, r.severity, r.username])).toEqual([
        ['client failed', 1, 'alice'],
        ['client says hi', 3, 'alice'],
      ]);
    });

    it('never shows a secret, password, hash or token in a response or a log line', async () => {
      const robot = await serviceAccountToken(base, sa.clientId, sa.clientSecret);
      await req('GET', '/Note', undefined, robot.headers);
      const [user] = await selectRows(app.env, 'SELECT "passwordHash" FROM "_svc_users" WHERE "username" = \'alice\'');
      const [account] = await selectRows(app.env, `SELECT "secretHash" FROM "_svc_service_accounts" WHERE "clientId" = '${sa.clientId}'`);
      expect(String(user.passwordHash)).toMatch(/^\$argon2id\$/);
      expect(String(account.secretHash)).toMatch(/^\$argon2id\$/);
      const responses = seen.join('\n');
      for (const secret of [sa.clientSecret, PASSWORD, String(user.passwordHash), String(account.secretHash), '$argon2']) {
        expect(responses).not.toContain(secret);
      }
      const log = server.output();
      expect(log).toContain('"msg":"request"');
      for (const secret of [
        sa.clientSecret,
        PASSWORD,
        String(user.passwordHash),
        '$argon2',
        robot.token,
        robot.refreshToken,
        alice.token,
        alice.refreshToken,
        'guess-',
      ]) {
        expect(log).not.toContain(secret);
      }
    });
  });
}

for (const backend of backends()) authSuite(backend);
