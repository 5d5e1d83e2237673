/**
 * Sign-in with identity providers (DESIGN §11, issue 22 item 3), once per backend, with real parts:
 * `svc serve` as a process, a real OpenID Connect provider on loopback (`oidc-provider`, its
 * development login and consent pages), a loopback server speaking GitHub's OAuth endpoints, and
 * Debian's Chromium driving the hosted `/login` page. Covers: the provider buttons; sign-in, consent,
 * callback, the cookies of SPEC §5 and `/api/_me`; a second sign-in linking to the same user; linking
 * by verified e-mail; `svc user show|list` with the links; a tampered state and a tampered nonce
 * refused; a cancelled consent; a foreign `returnUrl` ignored; a disabled user refused; deleting
 * the user deletes the links; the sign-in state read by a second instance; `_auth { authority, idToken }` with the
 * provider's real ID token and with forged, expired and foreign-audience tokens (and the limiter);
 * the GitHub preset with PKCE; an unreachable issuer; the callback fuzzed with malformed queries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as client from 'openid-client';
import { generateKeyPair, SignJWT } from 'jose';
import type { BrowserContext, Page } from 'playwright-core';
import { backends, type Backend } from '../support/backends.js';
import { launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { startGithub, type TestGithub } from '../support/github-server.js';
import { selectRows } from '../support/system-tables.js';
import { Prng } from '../support/hostile.js';

/** A redirect URI of a native app: never served; the test reads the code off the navigation. */
const NATIVE_REDIRECT = 'http://127.0.0.1:9/native-callback';

function oidcSuite(backend: Backend): void {
  describe(`identity providers on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let idp: TestOidcProvider;
    let github: TestGithub;
    let origin: string;
    let browser: Awaited<ReturnType<typeof launchChromium>>;
    let context: BrowserContext;

    beforeAll(async () => {
      idp = await startOidcProvider();
      github = await startGithub('gh-client', 'gh-secret');
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/oidc'), backend);
      app.env = {
        ...app.env,
        TEST_OIDC_ISSUER: idp.issuer,
        SVC_SECRET_IDP: 'idp-secret',
        TEST_GITHUB_URL: github.url,
        TEST_GITHUB_API_URL: `${github.url}/api`,
        SVC_SECRET_GITHUB: 'gh-secret',
      };
      server = await serve(app.dir, app.env);
      origin = new URL(server.url).origin;
      idp.register({ clientId: 'svc-app', clientSecret: 'idp-secret', redirectUris: [`${origin}/login/idp/callback`, NATIVE_REDIRECT] });
      browser = await launchChromium();
      context = browser.context;
      // The development pages of oidc-provider import a web font: nothing leaves the machine.
      await context.route(/fonts\.googleapis\.com/, (route) => route.abort());
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await idp?.close();
      await github?.close();
      await app?.cleanup();
    });

    /** Signs in at the provider's development pages (any login), then consents when asked. */
    async function atProvider(page: Page, login: string): Promise<void> {
      await page.waitForURL((u) => u.origin === idp.issuer);
      if (await page.locator('input[name="login"]').count()) {
        await page.fill('input[name="login"]', login);
        await page.fill('input[name="password"]', 'any-password');
        await page.click('button[type="submit"]');
      }
      await page.waitForLoadState();
      if (new URL(page.url()).origin === idp.issuer && (await page.locator('button:has-text("Continue")').count()))
        await page.click('button:has-text("Continue")');
    }

    /** A fresh browser session: no cookies at the app or the provider. */
    async function freshPage(): Promise<Page> {
      await context.clearCookies();
      return context.newPage();
    }

    /** `/api/_me` through the page's own cookies. */
    const me = (page: Page) => page.evaluate(async () => (await fetch('/api/_me', { credentials: 'include' })).json());

    it('shows one button per provider, signs in at the provider, lands back signed in, and links the second sign-in to the same user', async () => {
      const page = await freshPage();
      await page.goto(`${origin}/login?returnUrl=${encodeURIComponent('/api/_me?from=login')}`);
      expect(await page.getByRole('link', { name: 'Continue with Test IdP' }).count()).toBe(1);
      expect(await page.getByRole('link', { name: 'Continue with Github' }).count()).toBe(1);
      const config = await call(server.url, 'GET', '/_webAppConfig');
      expect(config.json.loginMethods).toEqual(['password', 'idp', 'github', 'down']);
      expect(config.json.providers[0]).toEqual({ name: 'idp', displayName: 'Test IdP', loginUrl: '/login/idp' });
      await page.getByRole('link', { name: 'Continue with Test IdP' }).click();
      await atProvider(page, 'alice');
      await page.waitForURL(`${origin}/api/_me?from=login`);
      // The provider shares the host (cookies ignore ports): only the app's cookies count.
      const cookies = (await context.cookies([origin, `${origin}/api/_refresh`]))
        .map((c) => c.name)
        .filter((n) => n.startsWith('svc_'))
        .sort();
      expect(cookies).toEqual(['svc_access', 'svc_refresh']);
      const first = await me(page);
      expect(first).toMatchObject({ username: 'alice', roles: ['member'] });

      await context.clearCookies({ name: 'svc_access' });
      await context.clearCookies({ name: 'svc_refresh' });
      await page.goto(`${origin}/login/idp?returnUrl=/api/_me`);
      await page.waitForURL(`${origin}/api/_me`); // the provider's session and grant answer at once
      expect(await me(page)).toEqual(first);
      await page.close();

      const shown = await runCli(['user', 'show', app.dir, '--username', 'alice'], app.env);
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        id: first.id,
        email: 'alice@example.test',
        emailVerified: true,
        providers: [{ provider: 'idp', subject: 'alice', email: 'alice@example.test' }],
      });
      const rows = await selectRows(app.env, `SELECT COUNT(*) AS n FROM "_svc_user_providers" WHERE "subject" = 'alice'`);
      expect(Number(rows[0].n)).toBe(1);
    });

    it('links a sign-in to the user who has the same verified address, and ignores a returnUrl of another origin', async () => {
      const made = await runCli(['user', 'create', app.dir, '--username', 'robert', '--password', 'robert-password', '--email', 'bob@example.test'], app.env);
      expect(made.code, made.stderr).toBe(0);
      const page = await freshPage();
      await page.goto(`${origin}/login/idp?returnUrl=${encodeURIComponent('https://evil.example/steal')}`);
      await atProvider(page, 'bob');
      await page.waitForURL((u) => u.origin === origin);
      expect(new URL(page.url()).pathname).toBe('/');
      expect(await me(page)).toEqual({ id: JSON.parse(made.stdout).id, username: 'robert', roles: [] });
      await page.close();
      const list = JSON.parse((await runCli(['user', 'list', app.dir], app.env)).stdout) as { username: string; providers: { provider: string }[] }[];
      expect(list.find((u) => u.username === 'robert')?.providers.map((p) => p.provider)).toEqual(['idp']);
    });

    it("keeps the sign-in state where every instance can read it: a second instance takes the first one's cookie", async () => {
      const second = await serve(app.dir, app.env);
      try {
        const start = await fetch(`${origin}/login/idp`, { redirect: 'manual' });
        const cookie = start.headers.getSetCookie()[0].split(';')[0];
        const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
        const elsewhere = `${new URL(second.url).origin}/login/idp/callback`;
        // With the cookie, the second instance gets past the state check to the code exchange (the code is made up).
        const taken = await fetch(`${elsewhere}?state=${state}&code=made-up&iss=${encodeURIComponent(idp.issuer)}`, {
          headers: { cookie },
          redirect: 'manual',
        });
        expect(taken.status).toBe(400);
        expect(await taken.text()).toMatch(/refused the sign-in \(invalid_grant\)/);
        const without = await fetch(`${elsewhere}?state=${state}&code=made-up`, { redirect: 'manual' });
        expect(await without.text()).toContain('has expired or was started in another browser');
      } finally {
        await second.close();
      }
    });

    it('refuses a tampered state and a tampered nonce without setting session cookies', async () => {
      for (const param of ['state', 'nonce']) {
        const page = await freshPage();
        // The app's redirect to the provider is altered in transit (Playwright routes only the first request of a redirect chain).
        const start = `${origin}/login/idp`;
        const tamper = async (route: import('playwright-core').Route) => {
          const response = await route.fetch({ maxRedirects: 0 });
          const url = new URL(response.headers().location);
          url.searchParams.set(param, `tampered-${param}-0123456789abcdef`);
          await route.fulfill({ response, headers: { ...response.headers(), location: url.href } });
        };
        await context.route(start, tamper);
        try {
          await page.goto(start);
          await atProvider(page, 'carol');
          await page.waitForURL((u) => u.origin === origin && u.pathname === '/login/idp/callback');
        } finally {
          await context.unroute(start, tamper);
        }
        expect(await page.textContent('h1')).toBe('Sign-in failed');
        expect(await page.textContent('.error')).toMatch(param === 'state' ? /state does not match/ : /could not be checked/);
        expect((await context.cookies(origin)).map((c) => c.name)).not.toContain('svc_access');
        await page.close();
      }
      expect(Number((await selectRows(app.env, `SELECT COUNT(*) AS n FROM "_svc_users" WHERE "username" = 'carol'`))[0].n)).toBe(0);
    });

    it('shows a page to start again when the person cancels at the provider (access_denied)', async () => {
      const page = await freshPage();
      await page.goto(`${origin}/login/idp?returnUrl=/notes`);
      await page.waitForURL((u) => u.origin === idp.issuer);
      await page.click('a:has-text("Cancel")');
      await page.waitForURL((u) => u.origin === origin && u.pathname === '/login/idp/callback');
      expect(await page.textContent('.error')).toBe('You did not allow the sign-in at Test IdP.');
      expect(await page.getAttribute('a:has-text("Try again")', 'href')).toBe('/login/idp?returnUrl=%2Fnotes');
      expect((await context.cookies([origin])).map((c) => c.name)).not.toContain('svc_access');
      await page.close();
    });

    it('answers tokens for a real ID token of the provider, 401 for forged, expired and foreign-audience tokens', async () => {
      // A native app's authorization: the browser still has the provider session of alice.
      const page = await freshPage();
      const config = await client.discovery(new URL(idp.issuer), 'svc-app', 'idp-secret', undefined, { execute: [client.allowInsecureRequests] });
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: NATIVE_REDIRECT,
        scope: 'openid email',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state: 'native-state',
      });
      let callback: string | undefined;
      await context.route(/127\.0\.0\.1:9\/native-callback/, async (route) => {
        callback = route.request().url();
        await route.fulfill({ status: 200, body: 'ok' });
      });
      await page.goto(url.href);
      await atProvider(page, 'dana');
      await page.waitForURL(/native-callback/);
      await page.close();
      const tokens = await client.authorizationCodeGrant(config, new URL(callback!), { pkceCodeVerifier: verifier, expectedState: 'native-state' });
      const idToken = tokens.id_token!;

      const signed = await call(server.url, 'POST', '/_auth', { authority: 'idp', idToken });
      expect(signed.status, signed.text).toBe(200);
      expect(signed.json).toMatchObject({ token_type: 'Bearer', access_token: expect.any(String), refresh_token: expect.any(String) });
      const who = await call(server.url, 'GET', '/_me', undefined, { authorization: `Bearer ${signed.json.access_token}` });
      // The ID token carries only the subject here (oidc-provider puts scope claims in userinfo): the username is derived from the provider's name.
      expect(who.json).toMatchObject({ username: 'idp-user', roles: ['member'] });
      const again = await call(server.url, 'POST', '/_auth', { authority: 'idp', idToken });
      expect((await call(server.url, 'GET', '/_me', undefined, { authorization: `Bearer ${again.json.access_token}` })).json).toEqual(who.json);

      const { privateKey: otherKey } = await generateKeyPair('RS256');
      const forged = await new SignJWT({ sub: 'dana' })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
        .setIssuer(idp.issuer)
        .setAudience('svc-app')
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(otherKey);
      const now = Math.floor(Date.now() / 1000);
      const refused = {
        forged,
        expired: await idp.signIdToken({ sub: 'dana', iat: now - 7200, exp: now - 3600 }),
        audience: await idp.signIdToken({ sub: 'dana', aud: 'another-client' }),
        garbage: 'not.a.token',
      };
      for (const [name, token] of Object.entries(refused)) {
        const r = await call(server.url, 'POST', '/_auth', { authority: 'idp', idToken: token });
        expect(r.status, `${name}: ${r.text}`).toBe(401);
        expect(r.json).toMatchObject({ code: 'UNAUTHORIZED' });
      }
      const missing = await call(server.url, 'POST', '/_auth', { authority: 'idp' });
      expect(missing.status).toBe(400);
      expect(missing.json.details).toEqual([expect.objectContaining({ path: '/idToken' })]);
      // Refused tokens count as failed sign-ins from this address: the 11th attempt within 15 minutes is 429.
      for (let i = Object.keys(refused).length; i < 10; i++)
        expect((await call(server.url, 'POST', '/_auth', { authority: 'idp', idToken: forged })).status).toBe(401);
      const limited = await call(server.url, 'POST', '/_auth', { authority: 'idp', idToken });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      const oauth2 = await call(server.url, 'POST', '/_auth', { authority: 'github', idToken: 'x' });
      expect(oauth2.status).toBe(400);
      expect(oauth2.json.details).toEqual([expect.objectContaining({ path: '/authority' })]);
    });

    it('signs in with the GitHub preset (PKCE, the primary verified address), refuses a disabled user and deletes links with the user', async () => {
      const page = await freshPage();
      await page.goto(`${origin}/login`);
      await page.getByRole('link', { name: 'Continue with Github' }).click();
      await page.waitForURL((u) => u.origin === origin && u.pathname === '/');
      const user = await me(page);
      expect(user).toMatchObject({ username: 'octo', roles: ['member'] });
      expect(github.tokenRequests.at(-1)).toEqual({ pkce: true });
      const shown = JSON.parse((await runCli(['user', 'show', app.dir, '--username', 'octo'], app.env)).stdout);
      expect(shown).toMatchObject({ email: 'octo@example.test', emailVerified: true, providers: [{ provider: 'github', subject: '1001' }] });

      expect((await runCli(['user', 'disable', app.dir, '--username', 'octo'], app.env)).code).toBe(0);
      await context.clearCookies();
      const again = await page.goto(`${origin}/login/github`);
      expect(again?.status()).toBe(403);
      expect(await page.textContent('.error')).toContain('disabled');
      await page.close();

      expect((await runCli(['user', 'delete', app.dir, '--username', 'octo'], app.env)).code).toBe(0);
      const links = await selectRows(app.env, `SELECT COUNT(*) AS n FROM "_svc_user_providers" WHERE "userId" = '${user.id}'`);
      expect(Number(links[0].n)).toBe(0);
    });

    it('answers malformed callbacks and unknown providers with 4xx pages, never a crash', async () => {
      const start = await fetch(`${origin}/login/idp`, { redirect: 'manual' });
      expect(start.status).toBe(303);
      const cookie = start.headers.getSetCookie()[0].split(';')[0];
      const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
      const r = new Prng(22);
      const pieces = [
        'state',
        'code',
        'error',
        'iss',
        '%',
        '%zz',
        '&&',
        '=',
        '[]',
        '\u0000',
        'é',
        '%E0%A4%A',
        'a'.repeat(3000),
        state,
        '__proto__',
        'constructor',
      ];
      const queries = [
        '',
        'error=access_denied',
        `state=${state}`,
        `state=${state}&state=${state}&code=x`,
        `state=${state}&code=`,
        `state=${state}&code=bogus`,
      ];
      for (let i = 0; i < 60; i++)
        queries.push(Array.from({ length: 1 + r.int(5) }, () => `${r.pick(pieces)}${r.chance(0.5) ? '=' : ''}${r.pick(pieces)}`).join('&'));
      for (const query of queries) {
        for (const headers of [{}, { cookie }, { cookie: 'svc_login=garbage.garbage.garbage' }]) {
          const res = await fetch(`${origin}/login/idp/callback?${query}`, { headers, redirect: 'manual' });
          expect(res.status, `${query} ${JSON.stringify(headers)}`).toBeGreaterThanOrEqual(400);
          expect(res.status, query).toBeLessThan(500);
          expect(res.headers.getSetCookie().some((c) => c.startsWith('svc_access='))).toBe(false);
        }
      }
      expect((await fetch(`${origin}/login/nobody`)).status).toBe(404);
      // An issuer that cannot be reached: a 502 page to start again, and 502 from _auth.
      const down = await fetch(`${origin}/login/down`, { redirect: 'manual' });
      expect(down.status).toBe(502);
      expect(await down.text()).toContain('could not be reached');
      expect((await call(server.url, 'POST', '/_auth', { authority: 'down', idToken: 'x.y.z' })).json).toMatchObject({ code: 'BAD_GATEWAY' });
      expect((await fetch(`${origin}/login/nobody/callback?code=1`)).status).toBe(404);
      const health = await fetch(`${server.url}/_health`);
      expect(health.status).toBeLessThan(500);
    });
  });
}

for (const backend of backends()) oidcSuite(backend);
