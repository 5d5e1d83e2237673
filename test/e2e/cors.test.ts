/**
 * CORS (issue 32 §2, svc.json `cors`, runtime/http/cors.ts) in Chromium on real loopback origins:
 * the API at `http://localhost:<api>`; a tiny node:http server serves one HTML page (inline script)
 * at `http://localhost:<page>` (listed in `cors.origins`) and at `http://127.0.0.1:<page>` (not
 * listed). From the listed page: list, create, tus upload and real-time (negotiate + WebSocket) with a
 * bearer token; with `credentials: true`, sign-in by cookie (SameSite=None; Secure, which Chromium
 * keeps on http://localhost) and a cookie-authenticated write. The unlisted page's fetch rejects
 * with TypeError; a preflight is cached for `maxAgeSeconds` (counted by a proxy in front of the API).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Page } from 'playwright-core';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, createUser, type Identity } from '../support/auth.js';
import { launchChromium } from '../support/browser.js';
import { freePort } from '../support/pg-cluster.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>front end</title><script>
  // What the test calls: fetch answers as plain data, or the error's name and message.
  window.call = async (url, init) => {
    try {
      const r = await fetch(url, init);
      const text = await r.text();
      const headers = {};
      for (const name of ['x-request-id', 'etag', 'location', 'upload-offset', 'tus-resumable']) headers[name] = r.headers.get(name);
      return { status: r.status, text, headers };
    } catch (err) {
      return { error: err.name, message: err.message };
    }
  };
  window.openSocket = (url) => new Promise((ok) => {
    const ws = new WebSocket(url, 'json.webpubsub.azure.v1');
    ws.onopen = () => { ws.close(); ok('open'); };
    ws.onerror = () => ok('error');
  });
</script></head><body>front end</body></html>`;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  return (server.address() as AddressInfo).port;
}

describe('CORS from a front end on another origin (Chromium)', () => {
  let app: PreparedApp;
  let api: RunningServer;
  let apiOrigin: string;
  let pageServer: Server;
  let pagePort: number;
  let listed: string;
  let proxy: Server;
  let proxyOrigin: string;
  let preflights = 0;
  let admin: Identity;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  beforeAll(async () => {
    pageServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
    pagePort = await listen(pageServer);
    listed = `http://localhost:${pagePort}`;
    // The API's public origin is http://localhost:<its port> (Chromium keeps Secure cookies on localhost).
    const apiPort = await freePort();
    app = await prepareApp(SHOP, 'sqlite', (dir) => {
      const file = join(dir, 'svc.json');
      const svc = JSON.parse(readFileSync(file, 'utf8'));
      svc.cors = { origins: [listed], credentials: true, maxAgeSeconds: 600 };
      svc.publicUrl = `http://localhost:${apiPort}`;
      writeFileSync(file, JSON.stringify(svc));
    });
    api = await startServer({ appDir: app.dir, port: apiPort, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
    apiOrigin = `http://localhost:${new URL(api.url).port}`;
    admin = await adminIdentity(app, api.url);
    // A counting proxy in front of the API: how many preflights reach the server.
    proxy = createServer((req, res) => {
      if (req.method === 'OPTIONS') preflights += 1;
      const upstream = request({ host: '127.0.0.1', port: new URL(api.url).port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      req.pipe(upstream);
    });
    proxyOrigin = `http://localhost:${await listen(proxy)}`;
    browser = await launchChromium();
    page = await browser.context.newPage();
    await page.goto(`${listed}/`);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await new Promise((ok) => pageServer?.close(ok));
    await new Promise((ok) => proxy?.close(ok));
    await app?.cleanup();
  });

  const call = (p: Page, url: string, init: RequestInit = {}) =>
    p.evaluate(([u, i]) => (window as any).call(u, i), [url, init] as const) as Promise<{
      status?: number;
      text?: string;
      headers?: Record<string, string | null>;
      error?: string;
      message?: string;
    }>;

  it('answers the preflight of every /api route for a listed origin, and gives an unlisted one no Allow-Origin', async () => {
    const paths = [
      '/api/Product',
      '/api/_auth',
      '/api/_token',
      '/api/_signup',
      '/api/Product/x/image/tus',
      '/api/_rt/ws',
      '/api/_agent/sessions',
      '/api/_fn/anything',
    ];
    for (const path of paths) {
      const r = await fetch(`${api.url.replace(/\/api$/, '')}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: listed,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,upload-length,tus-resumable',
        },
      });
      expect([r.status, path]).toEqual([204, path]);
      expect(r.headers.get('access-control-allow-origin')).toBe(listed);
      expect(r.headers.get('access-control-allow-credentials')).toBe('true');
      expect(r.headers.get('access-control-max-age')).toBe('600');
      expect(r.headers.get('access-control-allow-headers')).toBe('authorization,content-type,upload-length,tus-resumable');
      expect(r.headers.get('access-control-allow-methods')).toContain('PATCH');
    }
    const other = await fetch(`${api.url}/Product`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const get = await fetch(`${api.url}/Product`, { headers: { origin: listed } });
    expect(get.headers.get('access-control-allow-origin')).toBe(listed);
    expect(get.headers.get('access-control-expose-headers')).toMatch(/X-Request-Id.*ETag.*Retry-After/);
  });

  it('lists, creates, uploads by tus and listens with a bearer token from the listed origin', async () => {
    const auth = { authorization: admin.headers.authorization };
    const list = await call(page, `${apiOrigin}/api/Product`, { headers: auth });
    expect(list.error, list.message).toBeUndefined();
    expect(list.status).toBe(200);
    expect(list.headers!['x-request-id']).toBeTruthy(); // exposed
    const created = await call(page, `${apiOrigin}/api/Product`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'C-1', name: 'Cross', price: 3 }),
    });
    expect(created.status, created.text).toBe(201);
    const id = JSON.parse(created.text!).data[0] as string;

    const bytes = 'hello from another origin';
    const start = await call(page, `${apiOrigin}/api/Product/${id}/image/tus`, {
      method: 'POST',
      headers: {
        ...auth,
        'tus-resumable': '1.0.0',
        'upload-length': String(bytes.length),
        'upload-metadata': `filename ${btoa('a.txt')},filetype ${btoa('text/plain')}`,
      },
    });
    expect(start.status, start.text).toBe(201);
    const location = start.headers!.location!;
    expect(location).toContain(`/api/Product/${id}/image/tus/`);
    const patch = await call(page, location, {
      method: 'PATCH',
      headers: { ...auth, 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: bytes,
    });
    expect(patch.status, patch.text).toBe(200);
    expect(patch.headers!['upload-offset']).toBe(String(bytes.length));
    const row = await (await fetch(`${api.url}/Product/${id}`, { headers: admin.headers })).json();
    expect(row.image.size).toBe(bytes.length);

    const negotiate = await call(page, `${apiOrigin}/api/_rt/ws`, { headers: auth });
    expect(negotiate.status, negotiate.text).toBe(200);
    const { url } = JSON.parse(negotiate.text!);
    expect(await page.evaluate((u) => (window as any).openSocket(u), url)).toBe('open');
  });

  it('refuses an unlisted origin in the browser: fetch rejects with TypeError', async () => {
    const other = await browser.context.newPage();
    await other.goto(`http://127.0.0.1:${pagePort}/`);
    const r = await call(other, `${apiOrigin}/api/Product`, { headers: { authorization: admin.headers.authorization } });
    expect(r.error).toBe('TypeError');
    const simple = await call(other, `${apiOrigin}/api/Product`);
    expect(simple.error).toBe('TypeError'); // a simple GET too: no Allow-Origin for it
    await other.close();
  });

  it('caches a preflight for maxAgeSeconds: a second identical request sends none', async () => {
    const url = `${proxyOrigin}/api/Product?limit=1`;
    const init = { headers: { authorization: admin.headers.authorization } };
    const first = await call(page, url, init);
    expect(first.status).toBe(200);
    expect(preflights).toBe(1);
    const second = await call(page, url, init);
    expect(second.status).toBe(200);
    expect(preflights).toBe(1);
  });

  it('with credentials: signs in by cookie from the listed origin and writes with it; other origins are still refused', async () => {
    await createUser(app, 'ada', 'correct horse battery', ['admin']);
    const signIn = await call(page, `${apiOrigin}/api/_auth`, {
      method: 'POST',
      credentials: 'include',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ authority: 'password', username: 'ada', password: 'correct horse battery' }),
    });
    expect(signIn.status, signIn.text).toBe(200);
    const cookies = await browser.context.cookies(apiOrigin);
    const access = cookies.find((c) => c.name === 'svc_access')!;
    expect(access).toMatchObject({ sameSite: 'None', secure: true, httpOnly: true });
    const write = await call(page, `${apiOrigin}/api/Product`, {
      method: 'POST',
      credentials: 'include',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'C-2', name: 'By cookie', price: 4 }),
    });
    expect(write.status, write.text).toBe(201);
    // The same cookie from an origin not listed: refused by the CSRF check (DESIGN §4 body).
    const refused = await fetch(`${api.url}/Product`, {
      method: 'POST',
      headers: { origin: 'http://localhost:1', cookie: `svc_access=${access.value}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'C-3', name: 'Forged', price: 5 }),
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      code: 'FORBIDDEN',
      error: 'cross-origin requests authenticated by cookie are refused; send a bearer token instead',
    });
  });
});

describe('CORS settings at start and when off', () => {
  let app: PreparedApp;
  beforeAll(async () => {
    app = await prepareApp(SHOP, 'sqlite');
  }, 120_000);
  afterAll(async () => {
    await app?.cleanup();
  });

  it('without svc.json cors: no Access-Control-* header, and a preflight is not answered (same origin only)', async () => {
    const server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
    try {
      const pre = await fetch(`${server.url}/Product`, {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      });
      expect(pre.status).toBe(405);
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
      const get = await fetch(`${server.url}/Product`, { headers: { origin: 'http://localhost:5173' } });
      expect(get.status).toBe(200);
      expect([...get.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('refuses to start with cors.credentials but no https publicUrl (a manifest svc generate would refuse)', async () => {
    const file = join(app.dir, '.svc', 'manifest.json');
    const original = readFileSync(file, 'utf8');
    const manifest = JSON.parse(original);
    try {
      for (const publicUrl of [undefined, 'http://shop.example']) {
        manifest.settings.cors = { origins: ['https://app.example'], credentials: true, maxAgeSeconds: 600 };
        if (publicUrl) manifest.settings.publicUrl = publicUrl;
        writeFileSync(file, JSON.stringify(manifest));
        const err = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) }).catch(
          (e: Error) => e,
        );
        expect(err).toBeInstanceOf(Error);
        expect((err as Error).message).toContain('svc.json cors.credentials is true, which needs cookies with SameSite=None; Secure: set svc.json "publicUrl"');
      }
    } finally {
      writeFileSync(file, original);
    }
  });
});
