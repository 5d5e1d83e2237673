/**
 * What the printed URLs answer (issue 32 §4): `svc serve` prints the API's URL, the console's and the
 * sign-in page's; `GET /api` answers an index (JSON, or HTML to a browser) instead of "no route", and
 * `/` a page linking the API description, sign-in and the console, unless the app's `public/` has its
 * own `index.html`. Real `svc serve` processes over loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';

const SIGNUP = join(ROOT, 'test/fixtures/apps/signup');

/** svc.json of the fixture without its SMTP mail (no secret in these tests), with `extra` merged in. */
function editSettings(dir: string, extra: Record<string, unknown> = {}): void {
  const file = join(dir, 'svc.json');
  const { mail: _mail, ...rest } = JSON.parse(readFileSync(file, 'utf8'));
  writeFileSync(file, JSON.stringify({ ...rest, ...extra }));
}

describe('the index of / and /api', () => {
  let app: PreparedApp;
  let server: TestServer;
  let origin: string;

  beforeAll(async () => {
    app = await prepareApp(SIGNUP, 'sqlite', (dir) => editSettings(dir));
    server = await serve(app.dir, app.env);
    origin = new URL(server.url).origin;
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('prints the console and sign-in URLs after the API URL', () => {
    expect(server.output()).toContain(`svc: serving signup at ${origin}/api\nsvc: console (admins) at ${origin}/_/\nsvc: sign-in page at ${origin}/login\n`);
  });

  it('answers GET /api with the links as JSON, each of which answers', async () => {
    const res = await fetch(`${origin}/api`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    const links = await res.json();
    expect(links).toEqual({ name: 'signup', openapi: '/api/_openapi', login: '/login', console: '/_/' });
    for (const path of [links.openapi, links.login, links.console]) expect((await fetch(`${origin}${path}`)).status).toBe(200);
    expect((await fetch(`${origin}/api/`)).status).toBe(200);
  });

  it('answers a browser at /api and at / with a page that links them, and runs no script', async () => {
    for (const path of ['/api', '/']) {
      const res = await fetch(`${origin}${path}`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await res.text();
      for (const href of ['/api/_openapi', '/login', '/_/']) expect(html).toContain(`href="${href}"`);
    }
  });

  it('gives the index, the sign-in page and the console an inline icon, so no page load asks for a missing /favicon.ico', async () => {
    for (const path of ['/', '/login', '/_/'])
      expect(await (await fetch(`${origin}${path}`)).text()).toMatch(/<link\s+rel="icon"\s+href="data:image\/svg\+xml,/);
  });

  it('still answers an unknown path with the 404 body', async () => {
    const res = await fetch(`${origin}/nothing-here`);
    expect(res.status).toBe(404);
    expect((await res.json()).error).toMatch(/no route GET \/nothing-here/);
  });
});

describe('an app with its own public/index.html and no console', () => {
  let app: PreparedApp;
  let server: TestServer;

  beforeAll(async () => {
    app = await prepareApp(SIGNUP, 'sqlite', (dir) => {
      mkdirSync(join(dir, 'public'));
      writeFileSync(join(dir, 'public/index.html'), '<p>our own front page</p>\n');
      editSettings(dir, { console: false });
    });
    server = await serve(app.dir, app.env);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('serves its own page at / and leaves the console out of the links and the banner', async () => {
    const origin = new URL(server.url).origin;
    expect(await (await fetch(`${origin}/`)).text()).toBe('<p>our own front page</p>\n');
    expect(await (await fetch(`${origin}/api`)).json()).toEqual({ name: 'signup', openapi: '/api/_openapi', login: '/login' });
    expect(server.output()).not.toContain('console (admins)');
    expect(server.output()).toContain(`svc: sign-in page at ${origin}/login\n`);
  });
});
