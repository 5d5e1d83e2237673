/**
 * The result-size limit of DESIGN §4 (5 MiB of JSON per page): a larger page answers 400 naming the
 * remedies of SPEC §7 (`lookups=id`, a smaller `pageSize`, a narrower `select`), and each remedy works.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';

function limitSuite(backend: Backend): void {
  describe(`result-size limit on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/catalog'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      // One author with a 1 MiB bio, looked up by 8 books with 500 KiB summaries each.
      const [author] = (await call(base, 'POST', '/Author', { name: 'Verbose', bio: 'b'.repeat(1024 * 1024) })).json.data;
      const books = Array.from({ length: 8 }, (_, i) => ({ title: `Long ${i}`, summary: 's'.repeat(500 * 1024), author: { id: author } }));
      expect((await call(base, 'POST', '/Book', books)).status).toBe(201);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers 400 RESULT_TOO_LARGE naming the remedies, and each remedy brings the page under the limit', async () => {
      const big = await call(base, 'GET', '/Book?pageSize=8'); // 8 × (0.5 MiB + 1 MiB looked-up author)
      expect(big.status).toBe(400);
      expect(big.json.code).toBe('RESULT_TOO_LARGE');
      for (const remedy of ['lookups=id', 'pageSize', 'select']) expect(big.json.error).toContain(remedy);
      expect((await call(base, 'GET', '/Book?pageSize=8&lookups=id')).status).toBe(200);
      expect((await call(base, 'GET', '/Book?pageSize=2')).status).toBe(200);
      const narrow = await call(base, 'GET', '/Book?pageSize=8&select=title');
      expect(narrow.status).toBe(200);
      expect(narrow.json.data).toHaveLength(8);
    });
  });
}

for (const backend of backends()) limitSuite(backend);
