/**
 * Bad values that used to reach the database and answer 500 are refused with 400 VALIDATION_FAILED
 * naming the field (DESIGN §4), on both backends, and nothing is written: NUL characters (PostgreSQL
 * refuses them in text), year 0 (PostgreSQL has none), JSON numbers that parse to Infinity, decimals
 * beyond `numeric(65, 30)` — also inside `<Child>.<lookup>` arrays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { call } from '../support/scenario.js';

function badInputSuite(backend: Backend): void {
  describe(`bad input on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let headers: Record<string, string>;
    let customer: string;
    let product: string;
    let order: string;
    const post = (url: string, body: unknown) => call(server.url, 'POST', url, body, headers);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'examples/shop'), backend);
      server = await serve(app.dir, app.env);
      headers = (await adminIdentity(app, server.url)).headers;
      customer = (await post('/Customer', { name: 'Ada' })).json.data[0];
      product = (await post('/Product', { sku: 'PEN-1', name: 'Pen', price: 2 })).json.data[0];
      order = (await post('/Order', { title: 'first', customer: { id: customer } })).json.data[0];
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    const order_ = (extra: string) => `{"title":"t","customer":{"id":"${customer}"}${extra}}`;

    it.each([
      ['a NUL character in a string', () => JSON.stringify({ title: 'a\u0000b', customer: { id: customer } }), '/title', 'NUL'],
      ['a date in year 0', () => order_(',"dueOn":"0000-01-01"'), '/dueOn', '0001–9999'],
      ['a date-time in year 0', () => order_(',"placedAt":"0000-12-31T10:00:00Z"'), '/placedAt', '0001–9999'],
      ['a decimal of 1e999 (Infinity once parsed)', () => order_(',"total":1e999'), '/total', 'total must be'],
      ['a decimal beyond 35 integer digits', () => order_(',"total":1e40'), '/total', 'total must be'],
      [
        'an integer of 1e999 inside a child row',
        () => order_(`,"OrderLine.order":[{"product":{"id":"${product}"},"quantity":1e999,"unitPrice":1}]`),
        '/OrderLine.order/0/quantity',
        'quantity must be',
      ],
    ])('POST with %s answers 400 naming the field and writes nothing', async (_title, body, path, words) => {
      const before = (await call(server.url, 'GET', '/Order?count=only', undefined, headers)).json.meta.count;
      const r = await call(server.url, 'POST', '/Order', body(), { ...headers, 'content-type': 'application/json' });
      expect(r.status, r.text).toBe(400);
      expect(r.json.code).toBe('VALIDATION_FAILED');
      expect(r.json.details[0].path).toBe(path);
      expect(r.json.error).toContain(words);
      expect((await call(server.url, 'GET', '/Order?count=only', undefined, headers)).json.meta.count).toBe(before);
    });

    it('PATCH and PUT refuse the same values; the row is unchanged', async () => {
      const patch = await call(server.url, 'PATCH', `/Order/${order}`, '{"total":-1e999}', { ...headers, 'content-type': 'application/json' });
      expect(patch.status, patch.text).toBe(400);
      expect(patch.json.details[0].path).toBe('/total');
      const put = await call(server.url, 'PUT', `/Order/${order}`, { title: 'nul\u0000', customer: { id: customer } }, headers);
      expect(put.status, put.text).toBe(400);
      expect(put.json.details[0].path).toBe('/title');
      const row = (await call(server.url, 'GET', `/Order/${order}?lookups=id`, undefined, headers)).json;
      expect(row.title).toBe('first');
    });

    it('accepts the edge values the refusals border on', async () => {
      const r = await post('/Order', {
        title: 'edge',
        customer: { id: customer },
        dueOn: '0001-01-01',
        placedAt: '9999-12-31T23:59:59Z',
        total: `${'9'.repeat(35)}.5`,
      });
      expect(r.status, r.text).toBe(201);
      const row = (await call(server.url, 'GET', `/Order/${r.json.data[0]}`, undefined, headers)).json;
      expect(row.dueOn).toBe('0001-01-01');
      expect(row.placedAt).toBe('9999-12-31T23:59:59.000Z');
    });
  });
}

for (const backend of backends()) badInputSuite(backend);
