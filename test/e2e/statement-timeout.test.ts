/**
 * A statement that runs past the statement time limit (`SVC_STATEMENT_TIMEOUT_MS`) answers 504
 * `STATEMENT_TIMEOUT` with the error body, and the server keeps serving (issue "reliability": bound
 * what one request can cost). On PostgreSQL this is `statement_timeout`; on SQLite the reader thread
 * running the statement is replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { call, useHeaders } from '../support/scenario.js';

const SHOP = join(ROOT, 'examples/shop');
const LIMIT_MS = 300;

function dataSuite(backend: Backend): void {
  describe(`statement time limit on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;

    beforeAll(async () => {
      app = await prepareApp(SHOP, backend);
      server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn', SVC_STATEMENT_TIMEOUT_MS: String(LIMIT_MS) });
      base = server.url;
      useHeaders(base, (await adminIdentity(app, base)).headers);
      const customer = (await call(base, 'POST', '/Customer', { name: 'Ada' })).json.data[0];
      for (let batch = 0; batch < 20; batch++) {
        const rows = Array.from({ length: 1000 }, (_, i) => ({ title: `Order ${batch}-${i} of many words`, customer: { id: customer } }));
        expect((await call(base, 'POST', '/Order', rows)).status).toBe(201);
      }
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers 504 STATEMENT_TIMEOUT for a statement over the limit, and keeps serving', async () => {
      // 100 case-insensitive substring tests on each of 20,000 rows: far longer than 300 ms.
      const filter = Array.from({ length: 100 }, (_, i) => `title con~ "zz${i}"`).join(' or ');
      const started = performance.now();
      const slow = await call(base, 'GET', `/Order?count=only&filter=${encodeURIComponent(filter)}`);
      expect(slow.status, slow.text).toBe(504);
      expect(slow.json).toEqual({ code: 'STATEMENT_TIMEOUT', error: expect.stringContaining('statement time limit') });
      expect(performance.now() - started).toBeLessThan(10_000);
      const cheap = await call(base, 'GET', '/Order?pageSize=1&select=title');
      expect(cheap.status).toBe(200);
      expect(cheap.json.data).toHaveLength(1);
    });
  });
}

for (const backend of backends()) dataSuite(backend);
