/**
 * Signed blob URLs (DESIGN §11 "Blob URLs", issue 22 item 5), on both databases (local store) and
 * once on the S3 store: the metadata url of a blob of a collection that needs sign-in is fetched
 * without credentials (also by Chromium's `<img src>`); each altered part, and an expired URL, answer
 * 403 with the DESIGN §4 body; a second instance on the same database accepts the first one's URLs
 * (one key), and its own, with `storage.signedUrlSeconds: 1`, expire; the query parameters are fuzzed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, type PreparedApp } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { jpeg, sha256, startS3, uploadFile, type S3Server } from '../support/blobs.js';
import { launchChromium } from '../support/browser.js';
import { Prng } from '../support/hostile.js';
import { StopWaiting, waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

/** svc.json's `storage` set to `storage` (the rest kept). */
function setStorage(dir: string, storage: object): void {
  const file = join(dir, 'svc.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), storage }));
}

function signedUrlSuite(backend: Backend, storeKind: 'local' | 's3'): void {
  describe(`signed blob URLs on ${backend} (${storeKind} store)`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let origin: string;
    let s3: S3Server | undefined;
    let admin: Identity;
    let id: string;
    let bytes: Buffer;
    /** The signed url of the uploaded photo, as the row reads it. */
    let url: string;

    beforeAll(async () => {
      s3 = storeKind === 's3' ? await startS3() : undefined;
      // Customer needs sign-in to read; its photo is a blob.
      app = await prepareApp(SHOP, backend, (dir) => {
        const file = join(dir, 'collections', 'Customer.json');
        const customer = JSON.parse(readFileSync(file, 'utf8'));
        customer.properties.photo = { type: 'blob' };
        writeFileSync(file, JSON.stringify(customer));
        setStorage(dir, { thumbnails: ['16x16'] });
      });
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env, ...s3?.env }, logger: pino({ level: 'silent' }) });
      origin = server.url.replace(/\/api$/, '');
      admin = await adminIdentity(app, server.url);
      id = (await call(server.url, 'POST', '/Customer', { name: 'Ada' }, admin.headers)).json.data[0] as string;
      bytes = await jpeg(40, 30);
      const up = await uploadFile(`${server.url}/Customer/${id}/photo`, bytes, { name: 'ada.jpg', type: 'image/jpeg', headers: admin.headers });
      expect(up.status, JSON.stringify(up.json)).toBe(200);
      url = (await call(server.url, 'GET', `/Customer/${id}`, undefined, admin.headers)).json.photo.url as string;
    });
    afterAll(async () => {
      await server?.close();
      await s3?.close();
      await app?.cleanup();
    });

    it('the url carries v, exp and sig; fetched with no credentials it answers the bytes, and a thumbnail', async () => {
      expect(url).toMatch(new RegExp(`^/api/Customer/${id}/photo\\?v=[0-9a-f-]{36}&exp=(\\d+)&sig=[\\w-]{43}$`));
      const exp = Number(new URL(url, origin).searchParams.get('exp'));
      const now = Date.now() / 1000;
      // Between 3/4 of the default hour and the hour.
      expect(exp).toBeGreaterThan(now + 2700 - 2);
      expect(exp).toBeLessThanOrEqual(now + 3600 + 1);
      expect((await fetch(`${origin}/api/Customer/${id}/photo`)).status).toBe(401);
      const r = await fetch(`${origin}${url}`);
      expect(r.status).toBe(200);
      expect(sha256(Buffer.from(await r.arrayBuffer()))).toBe(sha256(bytes));
      expect(r.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
      expect((await fetch(`${origin}${url}`, { method: 'HEAD' })).status).toBe(200);
      const thumb = await fetch(`${origin}${url}&thumb=16x16`);
      expect(thumb.status).toBe(200);
      expect(thumb.headers.get('content-type')).toBe('image/jpeg');
      // The upload's answer is signed too, and reads the same file.
      const again = await uploadFile(`${server.url}/Customer/${id}/photo`, bytes, { name: 'ada.jpg', type: 'image/jpeg', headers: admin.headers });
      expect(again.json.url).toMatch(/&exp=\d+&sig=[\w-]{43}$/);
      expect((await fetch(`${origin}${again.json.url}`)).status).toBe(200);
      // The replaced version's URL does not reach the new file.
      const replaced = await fetch(`${origin}${url}`);
      expect(replaced.status).toBe(404);
      url = again.json.url as string;
    });

    it('an altered sig, exp, v or path answers 403 BLOB_SIGNATURE_INVALID naming the parameter', async () => {
      const u = new URL(url, origin);
      const q = Object.fromEntries(u.searchParams);
      const other = (await call(server.url, 'POST', '/Customer', { name: 'Bob' }, admin.headers)).json.data[0] as string;
      const flip = (s: string) => s.slice(0, 10) + (s[10] === 'A' ? 'B' : 'A') + s.slice(11);
      const cases: [string, string][] = [
        [`${u.pathname}?v=${q.v}&exp=${q.exp}&sig=${flip(q.sig)}`, 'sig'],
        [`${u.pathname}?v=${q.v}&exp=${q.exp}&sig=${q.sig.slice(0, 42)}${q.sig[42] === 'A' ? 'B' : 'A'}`, 'sig'],
        [`${u.pathname}?v=${q.v}&exp=${Number(q.exp) + 1}&sig=${q.sig}`, 'sig'],
        [`${u.pathname}?v=${flip(q.v)}&exp=${q.exp}&sig=${q.sig}`, 'sig'],
        [`${u.pathname.replace(id, other)}?v=${q.v}&exp=${q.exp}&sig=${q.sig}`, 'sig'],
        [`${u.pathname.replace(id, id.toUpperCase())}?v=${q.v}&exp=${q.exp}&sig=${q.sig}`, 'sig'],
        [`${u.pathname}?v=${q.v}&exp=${q.exp}`, 'sig'],
        [`${u.pathname}?v=${q.v}&sig=${q.sig}`, 'exp'],
        [`${u.pathname}?exp=${q.exp}&sig=${q.sig}`, 'v'],
        [`${u.pathname}?v=${q.v}&v=${q.v}&exp=${q.exp}&sig=${q.sig}`, 'v'],
        [`${u.pathname}?v=${q.v}&exp=${q.exp}&exp=${q.exp}&sig=${q.sig}`, 'exp'],
        [`${u.pathname}?v=${q.v}&exp=0${q.exp}&sig=${q.sig}`, 'exp'],
      ];
      for (const [path, param] of cases) {
        const r = await fetch(`${origin}${path}`);
        const body = await r.json();
        expect([path, r.status, body.code, body.details?.[0]?.path]).toEqual([path, 403, 'BLOB_SIGNATURE_INVALID', param]);
        expect(body.error).toMatch(/signature is not valid/);
      }
      // Credentials do not rescue an altered signature; without exp and sig they apply as before.
      expect((await fetch(`${origin}${cases[0][0]}`, { headers: admin.headers })).status).toBe(403);
      expect((await fetch(`${origin}${u.pathname}?v=${q.v}`, { headers: admin.headers })).status).toBe(200);
      expect((await fetch(`${origin}${u.pathname}?v=${q.v}`)).status).toBe(401);
    });

    it('Chromium shows the signed url in an <img> with no cookie; the unsigned path stays broken', async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.context.newPage();
        await page.setContent(`<img id="signed" src="${origin}${url}"><img id="plain" src="${origin}/api/Customer/${id}/photo">`);
        await page.waitForFunction(() => [...document.images].every((i) => i.complete));
        const widths = await page.evaluate(() => [...document.images].map((i) => i.naturalWidth));
        expect(widths).toEqual([40, 0]);
      } finally {
        await browser.close();
      }
    });

    it('fuzzed query parameters answer 401 or 403 with the error body, never 200 or 5xx', async () => {
      const r = new Prng(backend === 'sqlite' ? 22 : 23);
      const q = Object.fromEntries(new URL(url, origin).searchParams);
      const pieces = [
        () => `v=${r.pick([q.v, encodeURIComponent(r.string(r.int(50))), '', '%zz', '%00', q.v.toUpperCase()])}`,
        () => `exp=${r.pick([q.exp, '-1', '1e20', '99999999999999999999', '0x10', encodeURIComponent(r.string(r.int(20))), '', ' 1', '%'])}`,
        () => `sig=${r.pick([q.sig, q.sig.slice(1), `${q.sig}A`, 'A'.repeat(43), encodeURIComponent(r.string(r.int(60))), '', '%ff%fe', '=='])}`,
        () => r.pick(['thumb=16x16', 'thumb=%', `${encodeURIComponent(r.string(5))}=${encodeURIComponent(r.string(5))}`, '&&', '=', 'exp', 'sig']),
      ];
      for (let i = 0; i < 150; i++) {
        const parts = Array.from({ length: 1 + r.int(5) }, () => r.pick(pieces)());
        const probe = `/api/Customer/${id}/photo?${parts.join('&')}`;
        const res = await fetch(`${origin}${probe}`);
        const body = await res.json();
        const signed = parts.some((p) => /^(exp|sig)(=|$)/.test(p));
        // Only the exact URL served by the row passes: its three parameters, nothing altered.
        const genuine = parts.includes(`v=${q.v}`) && parts.includes(`exp=${q.exp}`) && parts.includes(`sig=${q.sig}`);
        if (genuine) continue;
        expect([probe, res.status, typeof body.error]).toEqual([probe, signed ? 403 : 401, 'string']);
        expect(body.code).toBe(signed ? 'BLOB_SIGNATURE_INVALID' : 'UNAUTHORIZED');
      }
    });

    it('another instance on the same database accepts these URLs; its own, signed for 1 s, expire with 403 BLOB_URL_EXPIRED', async () => {
      setStorage(app.dir, { thumbnails: ['16x16'], signedUrlSeconds: 1 });
      expect((await runCli(['generate', app.dir], app.env)).code).toBe(0);
      const second = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env, ...s3?.env }, logger: pino({ level: 'silent' }) });
      try {
        const secondOrigin = second.url.replace(/\/api$/, '');
        const served = await fetch(`${secondOrigin}${url}`);
        expect(served.status).toBe(200);
        expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(sha256(bytes));
        const short = (await call(second.url, 'GET', `/Customer/${id}`, undefined, admin.headers)).json.photo.url as string;
        expect(Number(new URL(short, origin).searchParams.get('exp'))).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
        // The first instance knows the key too: the URL is valid there until it expires.
        const expired = await waitFor(async () => {
          const res = await fetch(`${origin}${short}`);
          if (res.status === 403) return res;
          if (res.status !== 200) throw new StopWaiting(`status ${res.status}: ${await res.text()}`);
          await res.arrayBuffer();
          return undefined;
        }, 10_000);
        const body = await expired.json();
        expect(body).toEqual({
          error: expect.stringMatching(/^the blob URL expired at /),
          code: 'BLOB_URL_EXPIRED',
          details: [{ path: 'exp', message: 'expired' }],
        });
        expect((await fetch(`${secondOrigin}${short}`)).status).toBe(403);
      } finally {
        await second.close();
      }
    });
  });
}

for (const backend of backends()) signedUrlSuite(backend, 'local');
// The signature does not depend on the store: the S3 path runs once, against s3rver on loopback.
signedUrlSuite(backends()[0], 's3');
