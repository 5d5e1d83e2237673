/**
 * One request must not stall the others (issue "reliability"), on each backend against examples/shop:
 * - a bulk POST over 1,000 rows and a parent with over 1,000 children are refused at once, naming the
 *   limit, and write nothing; a bulk DELETE over 1,000 ids likewise;
 * - while bulk POSTs at the limit run back to back, a GET polled every 100 ms waits at most 500 ms;
 * - bodies are read only after routing and authorization: an anonymous 10 MB body sent to an unknown
 *   route or to a route that needs a signed-in caller is refused without being parsed;
 * - a body the client abandons halfway and a chunked body past the 10 MiB limit end only their own
 *   request: nothing is written and the server answers the next request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call, useHeaders } from '../support/scenario.js';
import { rawRequest } from '../support/hostile.js';
import { connect } from 'node:net';

const SHOP = join(ROOT, 'examples/shop');

function dataSuite(backend: Backend): void {
  describe(`write limits on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let customer: string;
    let product: string;

    beforeAll(async () => {
      app = await prepareApp(SHOP, backend);
      server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
      base = server.url;
      admin = await adminIdentity(app, base);
      useHeaders(base, admin.headers);
      customer = (await call(base, 'POST', '/Customer', { name: 'Ada' })).json.data[0];
      product = (await call(base, 'POST', '/Product', { sku: 'p1', name: 'Kettle', price: 10 })).json.data[0];
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    const orders = (n: number, title = 'bulk') => Array.from({ length: n }, (_, i) => ({ title: `${title} ${i}`, customer: { id: customer } }));
    const count = async (filter: string) => (await call(base, 'GET', `/Order?count=only&filter=${encodeURIComponent(filter)}`)).json.meta.count as number;

    it('refuses more than 1,000 rows, children or ids per request, naming the limit, and writes nothing', async () => {
      const tooMany = await call(base, 'POST', '/Order', orders(1001, 'over'));
      expect(tooMany.status).toBe(413);
      expect(tooMany.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', error: expect.stringContaining('at most 1000 rows') });
      expect(await count('title sw "over"')).toBe(0);
      const lines = Array.from({ length: 1001 }, () => ({ product: { id: product }, quantity: 1, unitPrice: 1 }));
      const children = await call(base, 'POST', '/Order', { title: 'parent over', customer: { id: customer }, 'OrderLine.order': lines });
      expect(children.status).toBe(400);
      expect(children.json.details).toEqual([{ path: '/OrderLine.order', message: 'OrderLine.order may hold at most 1000 rows (got 1001)' }]);
      expect(await count('title eq "parent over"')).toBe(0);
      const ids = Array.from({ length: 1001 }, (_, i) => `01890000-0000-7000-8000-${String(i).padStart(12, '0')}`);
      const deleted = await call(base, 'DELETE', '/Order', ids);
      expect(deleted.status).toBe(413);
      expect(deleted.json.error).toContain('at most 1000 rows');
      // At the limit everything is accepted.
      expect((await call(base, 'POST', '/Order', orders(1000, 'exactly'))).status).toBe(201);
      expect(await count('title sw "exactly"')).toBe(1000);
    });

    it('a GET polled every 100 ms waits at most 500 ms while bulk POSTs at the limit run', async () => {
      const waits: number[] = [];
      let writing = true;
      const writer = (async () => {
        try {
          // Bulk POSTs at the limit, back to back, for 3 s.
          const until = performance.now() + 3000;
          for (let i = 0; performance.now() < until; i++) expect((await call(base, 'POST', '/Order', orders(1000, `stall${i}`))).status).toBe(201);
        } finally {
          writing = false;
        }
      })();
      const poller = (async () => {
        while (writing) {
          const started = performance.now();
          const r = await fetch(`${base}/Customer/${customer}`, { headers: admin.headers });
          expect(r.status).toBe(200);
          await r.arrayBuffer();
          waits.push(performance.now() - started);
          await new Promise((ok) => setTimeout(ok, 100));
        }
      })();
      await Promise.all([writer, poller]);
      expect(waits.length).toBeGreaterThan(10);
      expect(Math.max(...waits), `GET waits (ms): ${waits.map((w) => Math.round(w)).join(', ')}`).toBeLessThanOrEqual(500);
    });

    it('reads no body before routing and authorization', async () => {
      const huge = `[${Array.from({ length: 3_300_000 }, () => '{}').join(',')}]`; // ~10 MB
      expect(huge.length).toBeGreaterThan(9_000_000);
      for (const [url, status, code] of [
        ['/Nowhere', 404, 'NOT_FOUND'],
        ['/Order', 401, 'UNAUTHORIZED'],
        ['/_invoke/nope', 404, 'NOT_FOUND'],
      ] as const) {
        const r = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: huge });
        expect(r.status, url).toBe(status);
        expect((await r.json()).code).toBe(code);
      }
      // A body over the route's limit is refused by its size alone.
      const auth = await fetch(`${base}/_auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ authority: 'password', username: 'x'.repeat(100_000), password: 'y' }),
      });
      expect(auth.status).toBe(413);
      expect((await auth.json()).code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('ends only its own request when a body is abandoned halfway or runs past the limit in chunks; nothing is written', async () => {
      const port = Number(new URL(base).port);
      const before = await count('title eq "cut"');
      const head = (extra: string) =>
        `POST /api/Order HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${admin.headers.authorization}\r\nContent-Type: application/json\r\n${extra}\r\n`;
      // Promises 1,000 bytes, sends 20, goes away.
      await new Promise<void>((done) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write(`${head('Content-Length: 1000\r\n')}{"title":"cut","cus`);
          setTimeout(() => {
            socket.destroy();
            done();
          }, 200);
        });
        socket.on('error', () => {});
      });
      // 11 MiB in 1 MiB chunks of a JSON string: refused (413) or cut off at the limit, never parsed.
      const chunk = 'x'.repeat(1024 * 1024);
      const chunked = `${head('Transfer-Encoding: chunked\r\n')}${['{"title":"cut","note":"', ...Array(11).fill(chunk), '"}']
        .map((c) => `${c.length.toString(16)}\r\n${c}\r\n`)
        .join('')}0\r\n\r\n`;
      const answer = await rawRequest(port, chunked);
      expect([0, 413]).toContain(answer.status);
      expect(await count('title eq "cut"')).toBe(before);
      expect((await call(base, 'POST', '/Order', { title: 'after the cut', customer: { id: customer } })).status).toBe(201);
    });
  });
}

for (const backend of backends()) dataSuite(backend);
