/**
 * The hosted login page `/login` (SPEC §4.6), on SQLite (the page does not depend on the database
 * backend; the data suites cover PostgreSQL): the form over plain HTTP (errors, escaping, login CSRF,
 * open redirects through `returnUrl`), then in a real browser, Debian's Chromium driven by
 * playwright-core: sign in through the form without any script of ours, then a page script on the
 * same origin calls `/api/_me` and `/api/Note` with `credentials: 'include'` and no extra headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { createUser } from '../support/auth.js';

const PASSWORD = 'browser-password';

describe('the /login page', () => {
  let app: PreparedApp;
  let server: TestServer;
  let origin: string;
  let userId: string;
  const login = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${origin}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams(fields),
      headers,
    });

  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), 'sqlite');
    userId = await createUser(app, 'walter', PASSWORD);
    server = await serve(app.dir, app.env);
    origin = new URL(server.url).origin;
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('serves a form that works without JavaScript, shows errors and escapes what it echoes', async () => {
    const page = await fetch(`${origin}/login?returnUrl=${encodeURIComponent('/app?a=1&b="2"')}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('<form method="post" action="/login">');
    expect(html).toContain('name="returnUrl" value="/app?a=1&#38;b=%222%22"');
    expect(html).not.toContain('<script');
    const wrong = await login({ username: '<script>alert(1)</script>', password: 'nope-nope' });
    expect(wrong.status).toBe(401);
    const wrongHtml = await wrong.text();
    expect(wrongHtml).toContain('Wrong username or password.');
    expect(wrongHtml).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(wrongHtml).not.toContain('<script>alert(1)');
    expect(wrong.headers.getSetCookie()).toEqual([]);
    expect((await login({ username: 'walter' })).status).toBe(400);
    // Login CSRF: a form on another site must not sign the browser in.
    const csrf = await login({ username: 'walter', password: PASSWORD }, { origin: 'https://evil.example' });
    expect(csrf.status).toBe(403);
    expect(csrf.headers.getSetCookie()).toEqual([]);
  });

  it('signs in, sets the cookies and redirects only to a same-origin returnUrl', async () => {
    const ok = await login({ username: 'walter', password: PASSWORD, returnUrl: '/app?x=1#top' });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/app?x=1#top');
    expect(
      ok.headers
        .getSetCookie()
        .map((c) => c.split('=')[0])
        .sort(),
    ).toEqual(['svc_access', 'svc_refresh']);
    const noReturn = await login({ username: 'walter', password: PASSWORD });
    expect(noReturn.status).toBe(200);
    expect(await noReturn.text()).toContain('You are signed in to secure as walter');
    const attacks = [
      '//evil.example',
      '//evil.example/%2F..',
      'https://evil.example/',
      'http:evil.example',
      '/\\evil.example',
      '\\\\evil.example',
      '/\t/evil.example',
      '/\n/evil.example',
      ' //evil.example',
      'javascript:alert(1)',
      'data:text/html,hi',
      '/%5Cevil.example',
      '/%2F%2Fevil.example',
      // Dot segments that normalise to a scheme-relative `//host`.
      '/.//evil.example',
      '/%2e%2e//evil.example',
      '/%2e//evil.example',
      '/x/..//evil.example/path',
      '/..//evil.example',
      '/%2E%2E//evil.example',
      '/.%2e//evil.example',
      '/a/b/../..//evil.example?x=1#y',
      '/x/%2e%2e//evil.example',
      '/././/evil.example',
    ];
    for (const returnUrl of attacks) {
      const r = await login({ username: 'walter', password: PASSWORD, returnUrl });
      const location = r.headers.get('location');
      if (location === null) {
        expect(r.status, returnUrl).toBe(200);
      } else {
        expect(r.status, returnUrl).toBe(303);
        expect(location, returnUrl).toMatch(/^\/(?![/\\])/);
        expect(new URL(location, origin).origin, returnUrl).toBe(origin);
      }
      const form = await (await fetch(`${origin}/login?returnUrl=${encodeURIComponent(returnUrl)}`)).text();
      const kept = /name="returnUrl" value="([^"]*)"/.exec(form)?.[1];
      if (kept !== undefined) expect(kept, returnUrl).toMatch(/^\/(?![/\\])/);
    }
    // Dot segments that stay on the origin are followed, normalised; one that yields `//` is not followed.
    const local: [string, number, string | null][] = [
      ['/a/./b', 303, '/a/b'],
      ['/a/%2e%2e/b?q=1', 303, '/b?q=1'],
      ['/x/..//', 200, null],
    ];
    for (const [returnUrl, status, location] of local) {
      const r = await login({ username: 'walter', password: PASSWORD, returnUrl });
      expect([r.status, r.headers.get('location')], returnUrl).toEqual([status, location]);
    }
  });

  it('works in a real browser: sign in through the form, then same-origin fetches carry the cookies', async () => {
    const browser = await launchChromium();
    try {
      // The login page carries no script (and its CSP allows none): the form works as plain HTML.
      const page = await browser.context.newPage();
      await page.goto(`${origin}/login?returnUrl=${encodeURIComponent('/api/_webAppConfig')}`);
      await page.fill('#username', 'walter');
      await page.fill('#password', 'not the password');
      await page.click('button[type=submit]');
      await expect.poll(() => page.textContent('[role=alert]')).toBe('Wrong username or password.');
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(`${origin}/api/_webAppConfig`), page.click('button[type=submit]')]);
      const cookies = await page.context().cookies();
      expect(cookies.find((c) => c.name === 'svc_access')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
      expect(cookies.find((c) => c.name === 'svc_refresh')).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/api' });

      // A page script of the same origin sees the session without any header of its own.
      const result = await page.evaluate(async () => {
        const me = await fetch('/api/_me', { credentials: 'include' });
        const created = await fetch('/api/Note', {
          method: 'POST',
          credentials: 'include',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ title: 'from the browser' }),
        });
        const list = await fetch('/api/Note?pageSize=100', { credentials: 'include' });
        const cookieVisible = document.cookie.includes('svc_');
        return {
          me: { status: me.status, body: await me.json() },
          created: created.status,
          list: { status: list.status, body: await list.json() },
          cookieVisible,
        };
      });
      expect(result.me).toEqual({ status: 200, body: { id: userId, username: 'walter', roles: [] } });
      expect(result.created).toBe(201);
      expect(result.list.status).toBe(200);
      expect(result.list.body.data.map((n: { title: string }) => n.title)).toEqual(['from the browser']);
      expect(result.cookieVisible).toBe(false); // HttpOnly: scripts cannot read the tokens
    } finally {
      await browser.close();
    }
  });
});
