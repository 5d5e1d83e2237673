/**
 * CRUD, list parameters, filters and error bodies of SPEC §4.1–4.3 and DESIGN §4, over real HTTP
 * against `svc serve` of examples/shop, once per database backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer, trustLoopback } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call, runScenario, useHeaders, type Scenario } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';

const SHOP = join(ROOT, 'examples/shop');

function dataSuite(backend: Backend): void {
  describe(`collections on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    const customers: string[] = [];
    const products: string[] = [];

    beforeAll(async () => {
      app = await prepareApp(SHOP, backend, trustLoopback); // x-request-id of the test is kept
      server = await serve(app.dir, app.env);
      base = server.url;
      // The shop's access rules are enforced: these suites act as an admin service account.
      admin = await adminIdentity(app, base);
      useHeaders(base, admin.headers);
      const c = await call(base, 'POST', '/Customer', [
        { name: 'Ada Lovelace', email: 'ada@example.com', country: 'GB', vip: true, since: '2020-05-01' },
        { name: 'Björn Berg', country: 'SE', since: '2023-01-15' },
        { name: 'chloé costa', email: null, country: 'FR' },
      ]);
      customers.push(...c.json.data);
      // 25 products with known prices and stock: p01 (price 1.5, stock 1) ... p25 (price 37.5, stock 25).
      const p = await call(
        base,
        'POST',
        '/Product',
        Array.from({ length: 25 }, (_, i) => ({
          sku: `p${String(i + 1).padStart(2, '0')}`,
          name: i % 2 === 0 ? `Red ${100 - i}% Kettle` : `blue_kettle ${i}`,
          price: (i + 1) * 1.5,
          stock: i + 1,
          category: ['books', 'games', 'garden', 'kitchen', 'tools'][i % 5],
          active: i % 3 !== 0,
          ...(i < 5 ? { description: null } : { description: `Item number ${i + 1}` }),
        })),
      );
      products.push(...p.json.data);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('creates one row and reads it back with defaults, system fields and the full lookup', async () => {
      const created = await runScenario(base, {
        name: 'post one',
        method: 'POST',
        url: '/Order',
        body: {
          title: 'First',
          customer: { id: customers[0] },
          dueOn: '2024-02-29',
          ref: 'A0B1C2D3-0000-4000-8000-000000000001',
          id: 'not-mine',
          createdBy: 'mallory',
          colour: 'ignored',
        },
        status: 201,
      });
      expect(created.json.data).toHaveLength(1);
      const id = created.json.data[0];
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/); // UUIDv7
      const item = (await runScenario(base, { name: 'get one', url: `/Order/${id}`, status: 200 })).json;
      expect(item).toMatchObject({
        id,
        title: 'First',
        status: 'new',
        paid: false,
        total: 0,
        dueOn: '2024-02-29',
        ref: 'a0b1c2d3-0000-4000-8000-000000000001',
        invoice: null,
        createdBy: admin.id,
      }); // the caller, never the body's "mallory"
      expect(item.customer).toMatchObject({ id: customers[0], name: 'Ada Lovelace', vip: true, since: '2020-05-01' });
      expect(Date.parse(item.placedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(item.createdAt).toMatch(/Z$/);
      expect(item).not.toHaveProperty('colour');
      expect(Object.keys(item)[0]).toBe('id');
    });

    it('creates an array atomically: one bad item creates nothing and names its index and property', async () => {
      const before = (await call(base, 'GET', '/Order?count=only')).json.meta.count;
      const r = await runScenario(base, {
        name: 'post array with a bad item',
        method: 'POST',
        url: '/Order',
        status: 400,
        body: [
          { title: 'ok', customer: { id: customers[1] } },
          { title: 'bad', customer: { id: customers[1] }, total: 'lots' },
          { customer: { id: customers[1] } },
        ],
        json: { code: 'VALIDATION_FAILED', details: [{ path: '/1/total' }, { path: '/2/title' }] },
      });
      expect(r.json.error).toContain('total');
      expect((await call(base, 'GET', '/Order?count=only')).json.meta.count).toBe(before);
      const ok = await runScenario(base, {
        name: 'post array',
        method: 'POST',
        url: '/Order',
        status: 201,
        body: [
          { title: 'A', customer: { id: customers[1] } },
          { title: 'B', customer: customers[2] },
        ],
      });
      expect(ok.json.data).toHaveLength(2);
      expect((await call(base, 'GET', '/Order?count=only')).json.meta.count).toBe(before + 2);
    });

    it('rejects bad values with 400 naming the property, and writes nothing', async () => {
      const scenarios: Scenario[] = [
        {
          name: 'string too long',
          method: 'POST',
          url: '/Order',
          body: { title: 'x'.repeat(201), customer: { id: customers[0] } },
          status: 400,
          json: { details: [{ path: '/title' }] },
          contains: ['title'],
        },
        {
          name: 'enum',
          method: 'POST',
          url: '/Order',
          body: { title: 't', customer: { id: customers[0] }, status: 'lost' },
          status: 400,
          contains: ['status', 'shipped'],
        },
        {
          name: 'integer',
          method: 'POST',
          url: '/OrderLine',
          body: { order: { id: customers[0] }, product: { id: products[0] }, quantity: 1.5, unitPrice: 1 },
          status: 400,
          contains: ['quantity'],
        },
        { name: 'integer minimum', method: 'POST', url: '/Product', body: { sku: 'x', name: 'x', price: 1, stock: -1 }, status: 400, contains: ['stock'] },
        { name: 'boolean', method: 'POST', url: '/Customer', body: { name: 'x', vip: 'yes' }, status: 400, contains: ['vip'] },
        { name: 'date', method: 'POST', url: '/Customer', body: { name: 'x', since: '2024-13-01' }, status: 400, contains: ['since'] },
        {
          name: 'date-time',
          method: 'POST',
          url: '/Order',
          body: { title: 't', customer: { id: customers[0] }, placedAt: 'yesterday' },
          status: 400,
          contains: ['placedAt'],
        },
        { name: 'guid', method: 'POST', url: '/Order', body: { title: 't', customer: { id: customers[0] }, ref: 'nope' }, status: 400, contains: ['ref'] },
        { name: 'lookup shape', method: 'POST', url: '/Order', body: { title: 't', customer: { name: 'Ada' } }, status: 400, contains: ['customer'] },
        {
          name: 'lookup to nothing',
          method: 'POST',
          url: '/Order',
          body: { title: 't', customer: { id: '00000000-0000-4000-8000-000000000000' } },
          status: 400,
          json: { details: [{ path: '/customer' }] },
          contains: ['no Customer'],
        },
        { name: 'required missing', method: 'POST', url: '/Order', body: { title: 't' }, status: 400, contains: ['customer is required'] },
        { name: 'required null', method: 'POST', url: '/Order', body: { title: null, customer: { id: customers[0] } }, status: 400, contains: ['title'] },
        { name: 'body not an object', method: 'POST', url: '/Order', body: 42, status: 400 },
        { name: 'empty array', method: 'POST', url: '/Order', body: [], status: 400 },
        {
          name: 'malformed JSON',
          method: 'POST',
          url: '/Order',
          rawBody: '{"title": ',
          headers: { 'content-type': 'application/json' },
          status: 400,
          json: { code: 'INVALID_JSON' },
        },
        { name: 'not JSON', method: 'POST', url: '/Order', rawBody: 'title=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415 },
      ];
      const before = (await call(base, 'GET', '/Order?count=only')).json.meta.count;
      for (const s of scenarios) await runScenario(base, s);
      expect((await call(base, 'GET', '/Order?count=only')).json.meta.count).toBe(before);
    });

    it('replaces with PUT (omitted → default or null) and merges with PATCH', async () => {
      const id = (
        await call(base, 'POST', '/Order', { title: 'Full', customer: { id: customers[0] }, status: 'paid', total: 12.25, paid: true, dueOn: '2024-03-01' })
      ).json.data[0];
      const patched = await runScenario(base, {
        name: 'patch',
        method: 'PATCH',
        url: `/Order/${id}`,
        body: { total: '99.95', customer: { id: customers[1] } },
        status: 200,
      });
      expect(patched.json).toMatchObject({
        id,
        title: 'Full',
        status: 'paid',
        total: 99.95,
        paid: true,
        dueOn: '2024-03-01',
        customer: { id: customers[1], name: 'Björn Berg' },
      });
      await runScenario(base, {
        name: 'patch bad',
        method: 'PATCH',
        url: `/Order/${id}`,
        body: { paid: 'no', title: 'Changed' },
        status: 400,
        contains: ['paid'],
      });
      expect((await call(base, 'GET', `/Order/${id}`)).json.title).toBe('Full');
      await runScenario(base, {
        name: 'patch null into required',
        method: 'PATCH',
        url: `/Order/${id}`,
        body: { title: null },
        status: 400,
        contains: ['title'],
      });
      const put = await runScenario(base, {
        name: 'put',
        method: 'PUT',
        url: `/Order/${id}`,
        body: { title: 'Replaced', customer: { id: customers[2] } },
        status: 200,
      });
      expect(put.json).toMatchObject({ id, title: 'Replaced', status: 'new', total: 0, paid: false, dueOn: null, ref: null, customer: { id: customers[2] } });
      await runScenario(base, {
        name: 'put missing required',
        method: 'PUT',
        url: `/Order/${id}`,
        body: { title: 'no customer' },
        status: 400,
        contains: ['customer'],
      });
      const missing = '01890000-0000-7000-8000-000000000000';
      await runScenario(base, {
        name: 'put 404',
        method: 'PUT',
        url: `/Order/${missing}`,
        body: { title: 'x', customer: { id: customers[0] } },
        status: 404,
        json: { code: 'NOT_FOUND' },
      });
      await runScenario(base, { name: 'patch 404', method: 'PATCH', url: `/Order/${missing}`, body: { title: 'x' }, status: 404 });
      await runScenario(base, { name: 'get 404', url: `/Order/${missing}`, status: 404 });
      await runScenario(base, { name: 'get malformed id', url: '/Order/abc', status: 404 });
    });

    it('deletes one row, refuses rows still referenced by a required lookup, and bulk-deletes atomically', async () => {
      const ids = (await call(base, 'POST', '/Customer', [{ name: 'D1' }, { name: 'D2' }, { name: 'D3' }])).json.data;
      await runScenario(base, { name: 'delete', method: 'DELETE', url: `/Customer/${ids[0]}`, status: 204 });
      await runScenario(base, { name: 'delete again', method: 'DELETE', url: `/Customer/${ids[0]}`, status: 404 });
      await runScenario(base, { name: 'bulk with unknown id', method: 'DELETE', url: '/Customer', body: [ids[1], ids[0]], status: 404 });
      expect((await call(base, 'GET', `/Customer/${ids[1]}`)).status).toBe(200);
      await runScenario(base, { name: 'bulk bad body', method: 'DELETE', url: '/Customer', body: { ids }, status: 400 });
      await runScenario(base, {
        name: 'bulk bad id',
        method: 'DELETE',
        url: '/Customer',
        body: [ids[1], 'x'],
        status: 400,
        json: { details: [{ path: '/1' }] },
      });
      await runScenario(base, { name: 'bulk', method: 'DELETE', url: '/Customer', body: [ids[1], ids[2]], status: 204 });
      expect((await call(base, 'GET', `/Customer/${ids[2]}`)).status).toBe(404);
      await runScenario(base, { name: 'referenced', method: 'DELETE', url: `/Customer/${customers[0]}`, status: 409, json: { code: 'CONFLICT' } });
      expect((await call(base, 'GET', `/Customer/${customers[0]}`)).status).toBe(200);
    });

    it('pages, sorts, selects and counts', async () => {
      const page = await runScenario(base, { name: 'default page', url: '/Product', status: 200 });
      expect(page.json.data).toHaveLength(10);
      expect(page.json).not.toHaveProperty('meta');
      const byId = [...products].sort();
      expect(page.json.data.map((p: any) => p.id)).toEqual(byId.slice(0, 10));
      const p3 = (await runScenario(base, { name: 'page 3', url: '/Product?pageNo=3&pageSize=10', status: 200 })).json.data;
      expect(p3.map((p: any) => p.id)).toEqual(byId.slice(20));
      const desc = (await runScenario(base, { name: 'sort desc', url: '/Product?sortBy=price-&pageSize=3', status: 200 })).json.data;
      expect(desc.map((p: any) => p.sku)).toEqual(['p25', 'p24', 'p23']);
      const asc = (await runScenario(base, { name: 'sort text asc', url: '/Product?sortBy=sku&pageSize=2&pageNo=2', status: 200 })).json.data;
      expect(asc.map((p: any) => p.sku)).toEqual(['p03', 'p04']);
      const nullsLast = (await call(base, 'GET', '/Product?sortBy=description&pageSize=25')).json.data;
      expect(nullsLast.slice(-5).every((p: any) => p.description === null)).toBe(true);
      const sel = (await runScenario(base, { name: 'select', url: '/Product?select=sku,price&pageSize=1', status: 200 })).json.data[0];
      expect(Object.keys(sel).sort()).toEqual(['id', 'price', 'sku']);
      const counted = await runScenario(base, { name: 'count=true', url: '/Product?count=true&pageSize=5&filter=price%20gt%2030', status: 200 });
      expect(counted.json.meta.count).toBe(5); // prices 31.5 .. 37.5
      expect(counted.json.items).toEqual(counted.json.data);
      await runScenario(base, { name: 'count=only', url: '/Product?count=only&filter=stock%20le%205', status: 200, json: { data: [], meta: { count: 5 } } });
      const bad: Scenario[] = [
        { name: 'pageSize too big', url: '/Product?pageSize=1001', status: 400, contains: ['pageSize'] },
        { name: 'pageSize 0', url: '/Product?pageSize=0', status: 400, contains: ['pageSize'] },
        { name: 'pageNo text', url: '/Product?pageNo=two', status: 400, contains: ['pageNo'] },
        { name: 'sortBy unknown', url: '/Product?sortBy=colour', status: 400, contains: ['colour'] },
        { name: 'two sort keys', url: '/Product?sortBy=sku,price', status: 400, contains: ['sortBy'] },
        { name: 'select unknown', url: '/Product?select=sku,colour', status: 400, contains: ['colour'] },
        { name: 'count bad', url: '/Product?count=maybe', status: 400, contains: ['count'] },
        { name: 'lookups bad', url: '/Order?lookups=some', status: 400, contains: ['lookups'] },
        { name: 'lastKey bad', url: '/Product?lastKey=5', status: 400, contains: ['lastKey'] },
        { name: 'search not enabled', url: '/Order?search=kettle', status: 400, contains: ['search is not enabled on Order'] },
      ];
      for (const s of bad) await runScenario(base, s);
      expect((await call(base, 'GET', '/Product?pageSize=1000')).json.data).toHaveLength(25);
    });

    it('walks every row with the keyset cursor, ignoring sortBy and keeping the filter', async () => {
      const seen: string[] = [];
      let lastKey = '';
      for (let i = 0; i < 20; i++) {
        // The first page is the plain list (ordered by id); later pages pass sortBy, which lastKey ignores.
        const page = (
          await call(
            base,
            'GET',
            `/Product?pageSize=4${lastKey ? `&sortBy=price-&pageNo=3&lastKey=${lastKey}` : ''}&filter=${encodeURIComponent('active eq true')}`,
          )
        ).json.data;
        seen.push(...page.map((p: any) => p.id));
        if (page.length < 4) break;
        lastKey = page[page.length - 1].id;
      }
      const all = (await call(base, 'GET', `/Product?pageSize=1000&filter=${encodeURIComponent('active eq true')}`)).json.data.map((p: any) => p.id);
      expect(all).toHaveLength(16);
      expect(seen).toEqual([...all].sort());
    });

    it('answers lookups=id and dot-path select into lookups', async () => {
      const list = (await runScenario(base, { name: 'lookups=id', url: '/Order?lookups=id&pageSize=3', status: 200 })).json.data;
      for (const o of list) expect(Object.keys(o.customer)).toEqual(['id']);
      const sel = (await runScenario(base, { name: 'select dot path', url: '/Order?select=title,customer.name&pageSize=1', status: 200 })).json.data[0];
      expect(Object.keys(sel).sort()).toEqual(['customer', 'id', 'title']);
      expect(Object.keys(sel.customer).sort()).toEqual(['id', 'name']);
      const selId = (await call(base, 'GET', '/Order?select=customer.name&lookups=id&pageSize=1')).json.data[0];
      expect(selId.customer).toEqual({ id: expect.any(String) });
    });

    it('includes child rows under their key, with bare-id lookups', async () => {
      const order = (await call(base, 'POST', '/Order', { title: 'With lines', customer: { id: customers[0] } })).json.data[0];
      const lines = (
        await call(base, 'POST', '/OrderLine', [
          { order: { id: order }, product: { id: products[0] }, quantity: 2, unitPrice: 1.5 },
          { order: { id: order }, product: { id: products[1] }, quantity: 1, unitPrice: 3 },
        ])
      ).json.data;
      const one = (await runScenario(base, { name: 'get with include', url: `/Order/${order}?include=OrderLine.order`, status: 200 })).json;
      expect(one['OrderLine.order']).toEqual([
        expect.objectContaining({ id: lines[0], order, product: products[0], quantity: 2, unitPrice: 1.5 }),
        expect.objectContaining({ id: lines[1], order, product: products[1], quantity: 1, unitPrice: 3 }),
      ]);
      const list = (
        await runScenario(base, {
          name: 'list with include',
          url: `/Order?pageSize=1000&include=OrderLine.order&filter=${encodeURIComponent('title sw "With"')}`,
          status: 200,
        })
      ).json.data;
      expect(list).toHaveLength(1);
      expect(list[0]['OrderLine.order']).toHaveLength(2);
      const other = (await call(base, 'GET', `/Order?pageSize=1&include=OrderLine.order&filter=${encodeURIComponent('title eq "First"')}`)).json.data[0];
      expect(other['OrderLine.order']).toEqual([]);
      await runScenario(base, {
        name: 'unknown include',
        url: '/Order?include=OrderLine.product',
        status: 400,
        json: { code: 'INVALID_PARAMETER' },
        contains: ['OrderLine.order'],
      });
    });

    it('filters with every operator, and/or/parentheses and literals', async () => {
      const skus = async (filter: string) => {
        const r = await call(base, 'GET', `/Product?pageSize=1000&sortBy=sku&filter=${encodeURIComponent(filter)}`);
        expect(r.status, `${filter}: ${r.text}`).toBe(200);
        return r.json.data.map((p: any) => p.sku);
      };
      expect(await skus('sku eq "p07"')).toEqual(['p07']);
      expect(await skus('stock ne 1 and stock lt 4')).toEqual(['p02', 'p03']);
      expect(await skus('price gt 36')).toEqual(['p25']);
      expect(await skus('price ge 36')).toEqual(['p24', 'p25']);
      expect(await skus('stock le 2')).toEqual(['p01', 'p02']);
      expect(await skus('name con "_kettle 1"')).toEqual(['p02', 'p12', 'p14', 'p16', 'p18', 'p20']);
      expect(await skus('name con "kettle 1" and name ncon "_"')).toEqual([]);
      expect(await skus('name sw "Red 10"')).toEqual(['p01']);
      expect(await skus('name sw "red"')).toEqual([]); // case-sensitive
      expect(await skus('name ew "% Kettle" and stock lt 4')).toEqual(['p01', 'p03']);
      expect(await skus('description eq null and stock gt 3')).toEqual(['p04', 'p05']);
      expect(await skus('description ne null and stock lt 7')).toEqual(['p06']);
      expect(await skus('active eq false and (stock lt 5 or stock gt 24)')).toEqual(['p01', 'p04', 'p25']);
      expect(await skus('stock lt 3 or stock gt 23 and category eq "tools"')).toEqual(['p01', 'p02', 'p25']);
      expect(await skus('(stock lt 3 or stock gt 23) and category eq "tools"')).toEqual(['p25']);
      expect(await skus('stock Lt 2 AND active EQ false')).toEqual(['p01']); // keywords and operators are case-insensitive
      expect((await call(base, 'GET', `/Product?filter=${encodeURIComponent('STOCK lt 2')}`)).status).toBe(400); // names are not
      expect(await skus('name sw~ "RED 10"')).toEqual(['p01']); // ~: case-insensitive
      expect(await skus('name ew~ "KETTLE 1" and stock lt 5')).toEqual(['p02']);
      expect(await skus("price gt exp('Pow(6, 2)')")).toEqual(['p25']); // 37.5 > 36
      expect(await skus('stock le exp("Floor(5 / 2) + 1")')).toEqual(['p01', 'p02', 'p03']);
      const customersSince = async (filter: string) => (await call(base, 'GET', `/Customer?count=only&filter=${encodeURIComponent(filter)}`)).json.meta.count;
      expect(await customersSince("createdAt gt exp('now() - 1D')")).toBeGreaterThanOrEqual(3);
      expect(await customersSince("createdAt gt exp('now() + 1D')")).toBe(0);
      expect(await customersSince('name eq~ "CHLOÉ COSTA"')).toBe(1); // non-ASCII letters fold too
      // A "+" inside exp() must travel as %2B; a raw "+" in a URL is a space.
      const plus = await call(base, 'GET', `/Product?count=only&filter=stock%20lt%20exp('1%2B1')`);
      expect(plus.json.meta.count).toBe(1);
      await runScenario(base, {
        name: 'exp too long',
        url: `/Product?filter=${encodeURIComponent(`stock lt exp('${'1+'.repeat(100)}1')`)}`,
        status: 400,
        json: { code: 'INVALID_FILTER' },
        contains: ['200'],
      });
      const orders = await call(base, 'GET', `/Order?pageSize=1000&filter=${encodeURIComponent('customer.name sw "Ada" and paid eq false')}`);
      expect(orders.status).toBe(200);
      expect(orders.json.data.every((o: any) => o.customer.name.startsWith('Ada'))).toBe(true);
      const bad: Scenario[] = [
        { name: 'unknown property', url: '/Product?filter=colour%20eq%20%22red%22', status: 400, json: { code: 'INVALID_FILTER' }, contains: ['colour'] },
        { name: 'missing value', url: '/Product?filter=stock%20eq', status: 400, json: { code: 'INVALID_FILTER' } },
        { name: 'bad operator', url: '/Product?filter=stock%20is%203', status: 400, json: { code: 'INVALID_FILTER' } },
        { name: 'wrong literal type', url: '/Product?filter=stock%20eq%20%22many%22', status: 400, json: { code: 'INVALID_FILTER' }, contains: ['stock'] },
        { name: 'unbalanced', url: '/Product?filter=(stock%20eq%201', status: 400, json: { code: 'INVALID_FILTER' } },
        { name: 'sql-looking', url: `/Product?filter=${encodeURIComponent('sku eq "x\\" OR 1=1 --"')}`, status: 200, json: { data: [] } },
      ];
      for (const s of bad) await runScenario(base, s);
    });

    it('answers unknown routes and collections with the error body, and serves the OpenAPI document', async () => {
      await runScenario(base, { name: 'unknown collection', url: '/Nope', status: 404, json: { code: 'NOT_FOUND' }, contains: ['Nope'] });
      await runScenario(base, { name: 'unknown route', url: '/Order/a/b/c', status: 404, json: { code: 'NOT_FOUND' } });
      await runScenario(base, { name: 'method not allowed', method: 'PATCH', url: '/Order', body: {}, status: 405, json: { code: 'METHOD_NOT_ALLOWED' } });
      const doc = await runScenario(base, { name: 'openapi', url: '/_openapi', status: 200 });
      expect(doc.json.openapi).toBe('3.1.0');
      expect(Object.keys(doc.json.paths)).toContain('/Order/{id}');
    });

    it('writes a structured log line per request', async () => {
      await call(base, 'GET', '/Customer?pageSize=1', undefined, { 'x-request-id': 'trace-me-42' });
      const line = await waitFor(() =>
        server
          .output()
          .split('\n')
          .find((l) => l.includes('trace-me-42')),
      );
      expect(JSON.parse(line!)).toMatchObject({ msg: 'request', reqId: 'trace-me-42', method: 'GET', status: 200, app: 'shop' });
    });
  });
}

for (const backend of backends()) dataSuite(backend);
