/**
 * The console (DESIGN §9, issue 23) against a real `svc serve` of the shop example, on each backend,
 * driven by Debian's Chromium through playwright-core: its serving (headers, caching, `console:
 * false`, path traversal), sign-in as an admin service account, a non-admin's "admins only" page,
 * the data grid over 5,000 rows scrolled to the end through keyset cursors, a filter error at the
 * box, create/edit/delete with a validation error at a field, bulk delete, a blob upload with its
 * thumbnail, CSV export, a function run, and a row holding HTML shown as text with no dialog.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import sharp from 'sharp';
import fc from 'fast-check';
import type { Page } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { backends } from '../support/backends.js';
import { createServiceAccount, createUser, serviceAccountToken, type Identity } from '../support/auth.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');
/** The console's CSP: scripts run only with the shell's per-response nonce (none for assets and errors). */
const CSP = (nonce?: string) =>
  `default-src 'self'; script-src ${nonce ? `'nonce-${nonce}'` : "'none'"}; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`;
/** The nonce the shell's tags carry. */
const nonceOf = (shell: string) => /<script type="module"[^>]* nonce="([A-Za-z0-9+/=]{22,})"/.exec(shell)?.[1];
const ROWS = 5000;
const XSS = '<img src=x onerror=alert(1)>';

let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/** A raw GET (or other method) with the path sent exactly as given: fetch would normalise `..`. */
function raw(origin: string, path: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function expectConsoleHeaders(headers: Record<string, string | string[] | undefined>, nonce?: string): void {
  expect(headers['content-security-policy']).toBe(CSP(nonce));
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('same-origin');
}

async function signIn(page: Page, origin: string, clientId: string, clientSecret: string): Promise<void> {
  await page.goto(`${origin}/_/`);
  await page.click('#signin-service');
  await page.fill('#signin-first', clientId);
  await page.fill('#signin-second', clientSecret);
  await page.click('button[type=submit]');
  await page.waitForSelector('#who');
}

describe.each(backends())('the console on %s', (backend) => {
  let app: PreparedApp;
  let server: RunningServer;
  let origin: string;
  let admin: { clientId: string; clientSecret: string };
  let token: Identity;
  let page: Page;
  const dialogs: string[] = [];

  const apiCall = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${server.url}${path}`, {
      method,
      headers: { ...token.headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: r.status === 204 ? null : await r.json() };
  };

  beforeAll(async () => {
    app = await prepareApp(SHOP, backend);
    server = await startServer({
      appDir: app.dir,
      port: 0,
      env: { ...process.env, ...app.env, SHOP_MODEL_URL: 'http://127.0.0.1:9/v1' },
      logger: pino({ level: 'silent' }),
    });
    origin = server.url.replace(/\/api$/, '');
    admin = await createServiceAccount(app, 'console-admin', { admin: true });
    token = await serviceAccountToken(server.url, admin.clientId, admin.clientSecret);
    for (let start = 0; start < ROWS; start += 1000) {
      const batch = Array.from({ length: Math.min(1000, ROWS - start) }, (_, i) => ({
        sku: `S-${String(start + i).padStart(5, '0')}`,
        name: `Product ${start + i}`,
        price: (start + i) % 97,
        stock: 1,
        category: 'tools',
      }));
      expect((await apiCall('POST', '/Product', batch)).status).toBe(201);
    }
    await browser.context.clearCookies(); // the other backend's session (same host, another port) must not be refreshed here
    page = await browser.context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    await server?.close();
    await app?.cleanup();
  });

  it('serves the shell no-cache and hashed assets immutable, each with the CSP, nosniff and Referrer-Policy of DESIGN §9', async () => {
    const shell = await raw(origin, '/_/');
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toMatch(/^text\/html/);
    expect(shell.headers['cache-control']).toBe('no-cache');
    const nonce = nonceOf(shell.body);
    expect(nonce).toBeDefined();
    expectConsoleHeaders(shell.headers, nonce);
    expect(shell.body).not.toContain('SVC_CSP_NONCE');
    expect(shell.body).not.toMatch(/<script>(?!<)/); // no inline script
    const assets = [...shell.body.matchAll(/(?:src|href)="(\/_\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const path of assets) {
      expect(path).toMatch(/-[A-Za-z0-9_-]{8}\.(js|css)$/);
      const asset = await raw(origin, path);
      expect(asset.status).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(asset.headers['content-type']).toMatch(path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expectConsoleHeaders(asset.headers);
    }
    // A path route (a link written by hand) goes to the hash route the console reads; the shell's nonce is fresh per response.
    const route = await raw(origin, '/_/data/Product');
    expect(route.status).toBe(302);
    expect(route.headers.location).toBe('/_/#/data/Product');
    expectConsoleHeaders(route.headers);
    const again = await raw(origin, '/_/');
    const againNonce = nonceOf(again.body)!;
    expect(againNonce).not.toBe(nonce);
    expect(again.body.replaceAll(againNonce, nonce!)).toBe(shell.body);
    expectConsoleHeaders(again.headers, againNonce);
    expect((await raw(origin, '/_/', 'HEAD')).status).toBe(200);
    const post = await raw(origin, '/_/', 'POST');
    expect(post.status).toBe(405);
    expectConsoleHeaders(post.headers);
    const redirect = await raw(origin, '/_');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('/_/');
    // `/_x` is no console path: the server's unknown-route 404.
    const other = await raw(origin, '/_x');
    expect(other.status).toBe(404);
    expect(other.headers['content-security-policy']).toBeUndefined();
  });

  it('refuses every path that leaves the console (traversal, encoded, malformed) with 400 or 404 and never a file outside', async () => {
    const secret = readFileSync(join(app.dir, 'svc.json'), 'utf8');
    const paths = [
      '/_/assets/../../package.json',
      '/_/assets/../index.html',
      '/_/assets/%2e%2e/%2e%2e/package.json',
      '/_/assets/%2e%2e%2f%2e%2e%2fpackage.json',
      '/_/assets/..%2f..%2f..%2fpackage.json',
      '/_/assets/%252e%252e%252fpackage.json',
      '/_/assets/..%5c..%5cpackage.json',
      '/_/assets/%00.js',
      '/_/assets/x%00.js',
      '/_/assets/%E0%A4%A',
      '/_/assets/',
      '/_/assets/.hidden.js',
      '/_/assets/nope-12345678.js',
      '/_/%2e%2e/%2e%2e/package.json',
      '/_/../../etc/passwd',
      `/_/assets/${'a'.repeat(5000)}.js`,
      '/_/assets/%',
      '/_/assets//etc/passwd',
    ];
    for (const path of paths) {
      const r = await raw(origin, path);
      expect([400, 404], path).toContain(r.status);
      expectConsoleHeaders(r.headers);
      expect(r.headers['content-type'], path).toMatch(/^application\/json/);
      expect(r.body).not.toContain('"name": "svc"');
      expect(r.body).not.toContain(secret);
      expect(r.body).not.toContain('root:');
    }
    // Fuzzed paths made of the pieces traversal is made of: always an answer (never a 5xx, never a
    // hang), the shell, a real asset or an error body, with the console's headers.
    const shell = (await raw(origin, '/_/')).body;
    const shellNonce = nonceOf(shell);
    const piece = fc.constantFrom(
      '..',
      '.',
      '/',
      '%2e',
      '%2E',
      '%2f',
      '%2F',
      '%5c',
      '%00',
      '%',
      '%25',
      '\\',
      'assets',
      'index.html',
      'a',
      '~',
      '%E0%A4',
      '?',
      '#',
      ';',
    );
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(piece, { minLength: 1, maxLength: 12 }), async (inAssets, parts) => {
        const r = await raw(origin, `/_/${inAssets ? 'assets/' : ''}${parts.join('')}`);
        expect(r.status).toBeLessThan(500);
        // The shell carries its own nonce; every other answer none.
        const nonce = nonceOf(r.body);
        expectConsoleHeaders(r.headers, nonce);
        if (r.status === 200)
          expect(r.body.replaceAll(nonce ?? '\0', shellNonce!) === shell || r.headers['cache-control'] === 'public, max-age=31536000, immutable').toBe(true);
        expect(r.body).not.toContain(secret);
      }),
      { numRuns: 300 },
    );
  });

  it('shows the sign-in form to nobody, "admins only" to a signed-in non-admin, and the console to an admin service account', async () => {
    const context = browser.context;
    await context.clearCookies();
    await page.goto(`${origin}/_/`);
    await page.waitForSelector('form[aria-label="Sign in"]');
    // A wrong secret is shown at the form.
    await page.click('#signin-service');
    await page.fill('#signin-first', admin.clientId);
    await page.fill('#signin-second', 'wrong-secret');
    await page.click('button[type=submit]');
    expect(await page.textContent('#signin-error')).toBeTruthy();

    await createUser(app, 'clerk', 'clerk-password-1');
    await page.click('#signin-user');
    await page.fill('#signin-first', 'clerk');
    await page.fill('#signin-second', 'clerk-password-1');
    await page.click('button[type=submit]');
    await page.waitForSelector('#admins-only');
    expect(await page.textContent('#admins-only')).toContain('clerk');
    await page.click('#admins-only button');
    await page.waitForSelector('form[aria-label="Sign in"]');

    await signIn(page, origin, admin.clientId, admin.clientSecret);
    expect(await page.textContent('#who')).toBe('console-admin');
  });

  it(`renders the grid and scrolls through all ${ROWS} rows by keyset cursors`, async () => {
    const lists: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (/\/api\/Product\?/.test(r.url())) lists.push(r.url());
    };
    page.on('request', onRequest);
    const started = Date.now();
    await page.goto(`${origin}/_/#/data/Product`);
    await page.waitForSelector('#grid .grid-row .td[data-col="name"]:text("Product 0")');
    const firstRender = Date.now() - started;
    expect(await page.textContent('#row-count')).toBe(`${ROWS} rows`);
    // Virtualized: only the rows in view (and a few) are in the DOM.
    expect(await page.locator('#grid .grid-row').count()).toBeLessThan(120);
    // Scrolling to the bottom asks for the next pages; keep scrolling until the last row is loaded.
    await expect
      .poll(
        async () => {
          await page.$eval('#grid', (el) => el.scrollTo(0, el.scrollHeight));
          return page.getAttribute('#grid', 'data-rows');
        },
        { timeout: 60_000, intervals: [50] },
      )
      .toBe(String(ROWS));
    expect(await page.getAttribute('#grid', 'data-rows')).toBe(String(ROWS));
    await page.waitForSelector(`#grid .td[data-col="name"]:text-is("Product ${ROWS - 1}")`);
    page.off('request', onRequest);
    expect(lists[0]).toContain('count=true');
    expect(lists.filter((u) => u.includes('lastKey=')).length).toBeGreaterThanOrEqual(ROWS / 500 - 1);
    writeFileSync(join(app.dir, 'first-render-ms'), String(firstRender));
    console.log(`console (${backend}): first render of the data grid ${firstRender} ms; ${lists.length} page requests to the end`);
  });

  it("shows the server's filter error at the filter box, sorts, chooses columns, then filters", async () => {
    await page.goto(`${origin}/_/#/data/Product`);
    await page.fill('#filter', 'price gtx 3');
    await page.click('#apply');
    await page.waitForSelector('#filter-error');
    expect(await page.getAttribute('#filter', 'aria-invalid')).toBe('true');
    const message = await page.textContent('#filter-error');
    const direct = await apiCall('GET', `/Product?filter=${encodeURIComponent('price gtx 3')}`);
    expect(direct.status).toBe(400);
    expect(message).toBe(direct.body.error);
    // Sorting (sortBy, pageNo paging) and column choice.
    await page.fill('#filter', '');
    await page.click('#apply');
    await page.click('.th[data-col="price"]');
    await page.waitForSelector('.th[data-col="price"]:text("price ▲")');
    await expect.poll(() => page.locator('.grid-row[data-index="0"] .td[data-col="price"]').textContent()).toBe('0');
    await page.click('.th[data-col="price"]');
    await expect.poll(() => page.locator('.grid-row[data-index="0"] .td[data-col="price"]').textContent()).toBe('96');
    await page.click('.th[data-col="price"]');
    await page.click('.menu:has([data-column]) summary');
    await page.uncheck('[data-column="description"]');
    expect(await page.locator('.th[data-col="description"]').count()).toBe(0);
    await page.check('[data-column="description"]');
    await page.click('.menu:has([data-column]) summary');
    await page.fill('#filter', 'sku eq "S-00042"');
    await page.click('#apply');
    await page.waitForSelector('#row-count:text-is("1 row")');
    expect(await page.locator('#filter-error').count()).toBe(0);
  });

  it('creates a row (a validation error shown at its field first), edits it with a PATCH of the changed field only, and deletes it', async () => {
    await page.goto(`${origin}/_/#/data/Product/new`);
    await page.waitForSelector('#row-form');
    await page.fill('#field-sku', 'NEW-1');
    await page.fill('#field-name', 'Console Lamp');
    await page.fill('#field-price', '-5');
    await page.click('#save-row');
    await page.waitForSelector('#field-error-price');
    expect(await page.textContent('#field-error-price')).toMatch(/price|minimum|0/i);
    await page.fill('#field-price', '12.5');
    await page.click('#save-row');
    await page.waitForSelector('#row-props');
    const id = decodeURIComponent(page.url().split('/').pop()!);
    expect((await apiCall('GET', `/Product/${id}`)).body).toMatchObject({ sku: 'NEW-1', name: 'Console Lamp', price: 12.5 });

    const patches: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH') patches.push(r.postData() ?? '');
    });
    await page.click('#edit-row');
    await page.fill('#field-name', 'Console Lamp II');
    await page.click('#save-row');
    await expect.poll(() => page.locator('#row-props [data-prop="name"] dd').textContent()).toBe('Console Lamp II');
    expect(patches.map((p) => JSON.parse(p))).toEqual([{ name: 'Console Lamp II' }]);

    await page.click('#delete-row');
    await page.click('#delete-confirm');
    await page.waitForSelector('#row-panel', { state: 'detached' });
    expect((await apiCall('GET', `/Product/${id}`)).status).toBe(404);
  });

  it('bulk-deletes the selected rows in one request', async () => {
    const created = await apiCall('POST', '/Product', [
      { sku: 'BULK-1', name: 'Bulk one', price: 1 },
      { sku: 'BULK-2', name: 'Bulk two', price: 1 },
    ]);
    const ids: string[] = created.body.data;
    await page.goto(`${origin}/_/#/data/Product`);
    await page.fill('#filter', 'sku sw "BULK-"');
    await page.click('#apply');
    await page.waitForSelector('#row-count:text("2 rows")');
    for (const id of ids) await page.check(`input[aria-label="select ${id}"]`);
    const deletes: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'DELETE') deletes.push(r.url());
    });
    await page.click('#bulk-delete');
    await page.click('#bulk-delete-confirm');
    await page.waitForSelector('#notice:text("Deleted 2 rows.")');
    expect(deletes).toEqual([`${server.url}/Product`]);
    for (const id of ids) expect((await apiCall('GET', `/Product/${id}`)).status).toBe(404);
  });

  it("uploads a blob, shows its thumbnail and download link, deletes it, and gives a one-byte file's size in the singular", async () => {
    const { body } = await apiCall('POST', '/Product', { sku: 'IMG-1', name: 'Pictured', price: 3 });
    const id = body.data[0];
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c33' } })
      .png()
      .toBuffer();
    await page.goto(`${origin}/_/#/data/Product/${id}`);
    await page.waitForSelector('#row-props');
    await page.setInputFiles('input[data-upload="image"]', { name: 'red.png', mimeType: 'image/png', buffer: png });
    await page.waitForSelector('[data-blob="image"] img.thumb');
    await expect
      .poll(() => page.$eval('[data-blob="image"] img.thumb', (img) => (img as HTMLImageElement).naturalWidth), { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(await page.textContent('[data-blob="image"] a.download')).toBe('red.png');
    expect((await apiCall('GET', `/Product/${id}`)).body.image).toMatchObject({ name: 'red.png', contentType: 'image/png', size: png.length });
    await page.click('[data-blob="image"] button.danger');
    await page.waitForSelector('[data-blob="image"] img.thumb', { state: 'detached' });
    expect((await apiCall('GET', `/Product/${id}`)).body.image).toBeNull();
    // A one-byte file says "1 byte", not "1 bytes".
    await page.setInputFiles('input[data-upload="image"]', { name: 'one.txt', mimeType: 'text/plain', buffer: Buffer.from('x') });
    await expect.poll(() => page.textContent('[data-blob="image"] small.muted')).toBe('text/plain, 1 byte');
  });

  it('exports the current filter as CSV and JSON, page by page (1,000 rows a request)', async () => {
    await page.goto(`${origin}/_/#/data/Product`);
    await page.fill('#filter', 'sku sw "S-0"');
    await page.click('#apply');
    await page.waitForSelector(`#row-count:text("${ROWS} rows")`);
    await page.click('.menu:has(#export-csv) summary');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
    const text = readFileSync((await download.path())!, 'utf8');
    const lines = text.trim().split('\r\n');
    expect(lines[0].split(',')).toEqual(expect.arrayContaining(['id', 'sku', 'name', 'price']));
    expect(lines.length).toBe(ROWS + 1);
    expect(lines[ROWS]).toContain('Product 4999');
    expect(download.suggestedFilename()).toBe('Product.csv');
    // JSON: whole rows, every page.
    const [json] = await Promise.all([page.waitForEvent('download'), page.click('#export-json')]);
    const rows = JSON.parse(readFileSync((await json.path())!, 'utf8'));
    expect(rows.length).toBe(ROWS);
    expect(rows[ROWS - 1]).toMatchObject({ sku: `S-0${ROWS - 1}`, name: `Product ${ROWS - 1}` });
  });

  it('runs a function from a form generated from its input schema and shows status and duration', async () => {
    await page.goto(`${origin}/_/#/functions/placeOrder`);
    await page.waitForSelector('#run-form');
    const customer = await apiCall('POST', '/Customer', { name: 'Fn Customer', email: 'fn@example.org', country: 'NO' });
    expect(customer.status).toBe(201);
    await page.fill('[data-arg="customer"]', customer.body.data[0]);
    await page.fill('[data-arg="sku"]', 'S-00007');
    await page.fill('[data-arg="quantity"]', '1');
    await page.click('#run');
    await page.waitForSelector('#run-answer');
    expect(await page.textContent('#run-status')).toMatch(/^2\d\d$/);
    expect(Number(await page.textContent('#run-ms'))).toBeGreaterThanOrEqual(0);
    expect(await page.textContent('#run-body')).toContain('"');
  });

  it('shows a value holding HTML as text: no element is made and no dialog fires', async () => {
    const { body } = await apiCall('POST', '/Product', { sku: 'XSS-1', name: XSS, description: `<script>alert(2)</script>`, price: 1 });
    const id = body.data[0];
    await page.goto(`${origin}/_/#/data/Product`);
    await page.fill('#filter', 'sku eq "XSS-1"');
    await page.click('#apply');
    await page.waitForSelector(`#grid .td[data-col="name"]:text-is("${XSS}")`);
    await page.goto(`${origin}/_/#/data/Product/${id}`);
    await page.waitForSelector('#row-props');
    expect(await page.textContent('#row-props [data-prop="name"] dd')).toBe(XSS);
    expect(await page.textContent('#row-props [data-prop="description"] dd')).toBe('<script>alert(2)</script>');
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it('every other page renders', async () => {
    await page.goto(`${origin}/_/#/health`);
    await page.waitForSelector('#ready-status');
    expect(await page.textContent('#ready-status')).toContain('Ready');
    await page.goto(`${origin}/_/#/schema/Order`);
    await page.waitForSelector('#api-preview [data-endpoint="GET /Order"] [data-curl]');
    expect(await page.textContent('#api-preview [data-endpoint="GET /Order"] [data-client]')).toBe(
      'const { data } = await api.collections.Order.list({ pageSize: 10 })',
    );
    expect(await page.textContent('#api-preview [data-endpoint="POST /Order"] [data-curl]')).toContain(`curl -X POST "${origin}/api/Order"`);
    for (const name of ['CustomerRevenue', 'Rates', 'placeOrder', 'OpenOrders']) {
      await page.goto(`${origin}/_/#/schema/${name}`);
      await page.waitForSelector(`#schema-page h2:has-text("${name}")`);
      expect(await page.locator('#api-preview [data-curl]').count()).toBeGreaterThan(0);
    }
    // A view and a query in the grid (a query pages by pageNo).
    for (const name of ['OpenOrders', 'CustomerRevenue']) {
      await page.goto(`${origin}/_/#/data/${name}`);
      await page.waitForSelector(`.resource h2:has-text("${name}")`);
      await expect.poll(() => page.textContent('#row-count')).toMatch(/^(1 row|(0|[2-9]|\d\d+) rows)$/);
      expect(await page.locator('.resource > .error').count()).toBe(0);
    }
    await page.goto(`${origin}/_/#/agent`);
    await page.waitForSelector('#credits-mode');
    await page.fill('#cap-input', '5000');
    await page.click('#set-cap');
    await page.waitForSelector('#credits-cap:text("5000")');
    // The real-time live tail: the console's own connection, subscribed to Order's changes.
    await page.goto(`${origin}/_/#/realtime`);
    await page.selectOption('#tail-target', 'collection:Order');
    await page.click('#tail-start');
    await page.waitForSelector('#tail-state:text-is("listening")');
    const customer = await apiCall('POST', '/Customer', { name: 'Tail Customer', email: 'tail@example.org', country: 'SE' });
    const order = await apiCall('POST', '/Order', { title: 'Tailed', customer: { id: customer.body.data[0] } });
    expect(order.status).toBe(201);
    await page.waitForSelector(`#tail-lines code:has-text("${order.body.data[0]}")`);
    expect(await page.textContent('#tail-lines code')).toContain('"action":"POST"');
    for (const p of ['identities', 'logs', 'realtime']) {
      await page.goto(`${origin}/_/#/${p}`);
      await page.waitForSelector('.page, [data-unavailable]');
    }
  });
});

describe('svc.json "console": false', () => {
  it('turns the console off: /_/ and its assets answer 404', async () => {
    const app = await prepareApp(join(ROOT, 'test/fixtures/apps/unique'), 'sqlite', (dir) => {
      const file = join(dir, 'svc.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), console: false }));
    });
    const server = await startServer({
      appDir: app.dir,
      port: 0,
      env: { ...process.env, ...app.env },
      logger: pino({ level: 'silent' }),
    });
    try {
      const origin = server.url.replace(/\/api$/, '');
      const asset = /src="\/_\/assets\/([^"]+)"/.exec(readFileSync(join(ROOT, 'dist/console/index.html'), 'utf8'))![1];
      for (const path of ['/_/', `/_/assets/${asset}`, '/_/data/Product']) expect((await raw(origin, path)).status, path).toBe(404);
      expect((await raw(origin, '/api/_ready')).status).toBe(200);
    } finally {
      await server.close();
      await app.cleanup();
    }
  }, 120_000);
});
