/**
 * Views (SPEC §4.1, DESIGN §3): every collection operation through the view's built-in filter, on
 * every backend. Lists and counts see only matching rows; GET/PUT/PATCH/DELETE of a non-matching row
 * is 404; POST creates in the base collection without checking the filter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { call, runScenario, useHeaders } from '../support/scenario.js';

function viewSuite(backend: Backend): void {
  describe(`views on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let open: string[];
    let closed: string[];

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'examples/shop'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      useHeaders(base, (await adminIdentity(app, base)).headers);
      const customer = (await call(base, 'POST', '/Customer', { name: 'Viewer' })).json.data[0];
      const rows = Array.from({ length: 12 }, (_, i) => ({
        title: `V${String(i).padStart(2, '0')}`,
        customer: { id: customer },
        paid: i % 3 === 0,
        status: i === 1 ? 'cancelled' : 'new',
      }));
      const ids: string[] = (await call(base, 'POST', '/Order', rows)).json.data;
      open = ids.filter((_, i) => i % 3 !== 0 && i !== 1);
      closed = ids.filter((id) => !open.includes(id));
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('lists, counts, pages, selects and walks keysets over matching rows only', async () => {
      const all = await runScenario(base, { name: 'list', url: '/OpenOrders?pageSize=100&count=true', status: 200 });
      expect(all.json.meta.count).toBe(open.length);
      expect(all.json.data.map((o: any) => o.id)).toEqual([...open].sort());
      expect(all.json.data[0].customer).toMatchObject({ name: 'Viewer' });
      const filtered = await runScenario(base, { name: 'filter', url: `/OpenOrders?count=only&filter=${encodeURIComponent('title ge "V06"')}`, status: 200 });
      expect(filtered.json.meta.count).toBe(4); // V07 V08 V10 V11
      const page2 = (await call(base, 'GET', '/OpenOrders?pageSize=3&pageNo=2&sortBy=title-&select=title')).json.data;
      expect(page2.map((o: any) => o.title)).toEqual(['V07', 'V05', 'V04']); // open: V02 V04 V05 V07 V08 V10 V11
      expect(Object.keys(page2[0]).sort()).toEqual(['id', 'title']);
      const first = (await call(base, 'GET', '/OpenOrders?pageSize=5')).json.data;
      const rest = (await call(base, 'GET', `/OpenOrders?pageSize=100&lastKey=${first[4].id}`)).json.data;
      expect([...first, ...rest].map((o: any) => o.id)).toEqual([...open].sort());
    });

    it('answers 404 for reads and writes of rows outside the view, and changes nothing', async () => {
      await runScenario(base, { name: 'get hidden', url: `/OpenOrders/${closed[0]}`, status: 404 });
      await runScenario(base, { name: 'patch hidden', method: 'PATCH', url: `/OpenOrders/${closed[0]}`, body: { title: 'hacked' }, status: 404 });
      await runScenario(base, {
        name: 'put hidden',
        method: 'PUT',
        url: `/OpenOrders/${closed[0]}`,
        body: { title: 'hacked', customer: { id: (await call(base, 'GET', `/Order/${closed[0]}`)).json.customer.id } },
        status: 404,
      });
      await runScenario(base, { name: 'delete hidden', method: 'DELETE', url: `/OpenOrders/${closed[0]}`, status: 404 });
      await runScenario(base, { name: 'bulk delete with a hidden id', method: 'DELETE', url: '/OpenOrders', body: [open[0], closed[1]], status: 404 });
      expect((await call(base, 'GET', `/Order/${closed[0]}`)).json.title).not.toBe('hacked');
      expect((await call(base, 'GET', `/Order/${open[0]}`)).status).toBe(200);
      await runScenario(base, { name: 'get visible', url: `/OpenOrders/${open[0]}`, status: 200 });
    });

    it('writes visible rows; PATCH out of the view commits and answers 200 with the row; POST creates in the base collection', async () => {
      const r = await runScenario(base, { name: 'patch visible', method: 'PATCH', url: `/OpenOrders/${open[1]}`, body: { title: 'renamed' }, status: 200 });
      expect(r.json.title).toBe('renamed');
      // The write commits, so the answer is 200 with the row as the base collection's GET rule shows it.
      const moved = await runScenario(base, { name: 'patch out of view', method: 'PATCH', url: `/OpenOrders/${open[2]}`, body: { paid: true }, status: 200 });
      expect(moved.json).toMatchObject({ id: open[2], paid: true });
      expect(moved.json.customer).toHaveProperty('name');
      expect((await call(base, 'GET', `/Order/${open[2]}`)).json.paid).toBe(true);
      await runScenario(base, { name: 'moved row is outside the view', url: `/OpenOrders/${open[2]}`, status: 404 });
      const customer = (await call(base, 'GET', `/Order/${open[0]}`)).json.customer.id;
      const created = await runScenario(base, {
        name: 'post paid through view',
        method: 'POST',
        url: '/OpenOrders',
        body: { title: 'paid already', paid: true, customer: { id: customer } },
        status: 201,
      });
      expect((await call(base, 'GET', `/Order/${created.json.data[0]}`)).status).toBe(200);
      expect((await call(base, 'GET', `/OpenOrders/${created.json.data[0]}`)).status).toBe(404);
      await runScenario(base, { name: 'delete visible', method: 'DELETE', url: `/OpenOrders/${open[3]}`, status: 204 });
      expect((await call(base, 'GET', `/Order/${open[3]}`)).status).toBe(404);
    });

    it('is described in the OpenAPI document with the base collection schemas', async () => {
      const doc = (await call(base, 'GET', '/_openapi')).json;
      expect(doc.paths['/OpenOrders'].get.operationId).toBe('listOpenOrders');
      expect(doc.paths['/OpenOrders/{id}'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Order' });
    });
  });
}

for (const backend of backends()) viewSuite(backend);
