/**
 * Stored files that a browser would run (issue 30 item 12) and the framing of `public/` pages (item
 * 13b), against `svc serve` of the shop example in this process over real HTTP, with Debian's
 * Chromium: a file uploaded as `text/javascript` (or HTML, SVG, XML) is served as
 * `application/octet-stream` with `nosniff` and `Content-Security-Policy: sandbox`, by its plain and
 * its signed URL, so a `<script src>` pointing at it in a same-origin page does not run; the console
 * allows only its own nonce-carrying scripts; `public/` files carry `frame-ancestors 'self'` and
 * `X-Frame-Options: SAMEORIGIN` unless svc.json `public.frameAncestors` says otherwise. The content
 * type is decided by the HTTP layer alone, so SQLite suffices.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { uploadFile } from '../support/blobs.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');
/** A `public/` page that loads the script at the URL in its fragment and reports whether it ran. */
const PROBE = `<!doctype html><title>probe</title><script>
  const s = document.createElement('script');
  s.src = decodeURIComponent(location.hash.slice(1));
  s.onload = () => (document.title = window.pwned ? 'ran' : 'loaded');
  s.onerror = () => (document.title = 'blocked');
  document.head.append(s);
</script>`;

describe('active blob types and public framing', () => {
  let app: PreparedApp;
  let server: RunningServer;
  let base: string;
  let origin: string;
  let admin: Identity;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    app = await prepareApp(SHOP, 'sqlite', (dir) => writeFileSync(join(dir, 'public', 'probe.html'), PROBE));
    server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
    base = server.url;
    origin = new URL(base).origin;
    admin = await adminIdentity(app, base);
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await app?.cleanup();
  });

  const product = async () =>
    (await call(base, 'POST', '/Product', { sku: `s${Math.random()}`.slice(0, 30), name: 'Lamp', price: 5 }, admin.headers)).json.data[0] as string;

  it('serves a file uploaded as a script, page or XML type as bytes with nosniff and a sandbox CSP, by its plain and signed URL', async () => {
    const id = await product();
    for (const type of [
      'text/javascript',
      'application/javascript; charset=utf-8',
      'text/html',
      'application/xhtml+xml',
      'image/svg+xml',
      'text/xml',
      'text/css',
    ]) {
      const up = await uploadFile(`${base}/Product/${id}/image`, Buffer.from('window.pwned = true;'), { name: 'x.js', type, headers: admin.headers });
      expect(up.status, type).toBe(200);
      expect(up.json.contentType).toBe(type.split(';')[0]); // the metadata keeps what was declared
      for (const url of [`${base}/Product/${id}/image`, `${origin}${up.json.url}`]) {
        const r = await fetch(url);
        expect(r.status).toBe(200);
        expect(r.headers.get('content-type'), `${type} at ${url}`).toBe('application/octet-stream');
        expect(r.headers.get('x-content-type-options')).toBe('nosniff');
        expect(r.headers.get('content-security-policy')).toBe('sandbox');
        expect(r.headers.get('content-disposition')).toMatch(/^attachment;/);
      }
    }
    // Passive types keep their type; every download but a PDF's is sandboxed.
    const png = await uploadFile(`${base}/Product/${id}/image`, Buffer.from('not really a png'), { name: 'a.png', type: 'image/png', headers: admin.headers });
    const r = await fetch(`${origin}${png.json.url}`);
    expect(r.headers.get('content-type')).toBe('image/png');
    expect(r.headers.get('content-security-policy')).toBe('sandbox');
    await uploadFile(`${base}/Product/${id}/image`, Buffer.from('%PDF-1.4'), { name: 'a.pdf', type: 'application/pdf', headers: admin.headers });
    const pdf = await fetch(`${base}/Product/${id}/image`);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(pdf.headers.get('content-security-policy')).toBeNull();
  });

  it('a same-origin page cannot run an uploaded text/javascript file with <script src> (Chromium)', async () => {
    const id = await product();
    const up = await uploadFile(`${base}/Product/${id}/image`, Buffer.from('window.pwned = true;'), {
      name: 'x.js',
      type: 'text/javascript',
      headers: admin.headers,
    });
    expect(up.status).toBe(200);
    const page = await browser.context.newPage();
    try {
      for (const src of [`/api/Product/${id}/image`, up.json.url as string]) {
        await page.goto(`${origin}/probe.html#${encodeURIComponent(src)}`);
        await page.waitForFunction(() => document.title !== 'probe');
        expect(await page.title(), src).toBe('blocked');
        expect(await page.evaluate(() => (window as unknown as { pwned?: boolean }).pwned)).toBeUndefined();
      }
    } finally {
      await page.close();
    }
  });

  it('the console shell allows only scripts with its per-response nonce', async () => {
    const shell = await fetch(`${origin}/_/`);
    const csp = shell.headers.get('content-security-policy')!;
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).not.toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(await shell.text()).toContain(`<script type="module" crossorigin src="/_/assets/`);
    const again = (await fetch(`${origin}/_/`)).headers.get('content-security-policy');
    expect(again).not.toBe(csp);
  });

  it("public/ files carry frame-ancestors 'self' and X-Frame-Options SAMEORIGIN; svc.json public.frameAncestors changes it", async () => {
    const page = await fetch(`${origin}/probe.html`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe("frame-ancestors 'self'");
    expect(page.headers.get('x-frame-options')).toBe('SAMEORIGIN');

    const svcFile = join(app.dir, 'svc.json');
    const other = await prepareApp(SHOP, 'sqlite', (dir) => {
      const file = join(dir, 'svc.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(svcFile, 'utf8')), public: { frameAncestors: "'self' https://partner.example" } }));
    });
    const framed = await startServer({ appDir: other.dir, port: 0, env: { ...process.env, ...other.env }, logger: pino({ level: 'silent' }) });
    try {
      const r = await fetch(`${new URL(framed.url).origin}/index.html`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-security-policy')).toBe("frame-ancestors 'self' https://partner.example");
      expect(r.headers.get('x-frame-options')).toBeNull();
    } finally {
      await framed.close();
      await other.cleanup();
    }
  });
});
