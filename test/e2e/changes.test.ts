/**
 * Change sets of the unit of work (issue "runtime core") and the change notifications built on them
 * (issue "real-time", SPEC §4.7, §6.1): every write path — POST one and many, PUT, PATCH, DELETE one and
 * many, nested children created/updated/deleted through a parent, writes through a view, writes by
 * function code, and the in-process API client — reports, after its commit, one change per collection
 * with the request's method, every affected id and the rows' lookup ids (read before a delete). A
 * rejected or rolled-back request reports nothing. The server runs in this process over real HTTP, on
 * both databases, with a sink that records what it is handed; beside it a real Web PubSub client
 * subscribed with `_listen` to every collection must hear exactly one notification `{ action, path,
 * ids }` per reported change, in order, and nothing else (a marker message sent after each step proves
 * nothing more was on its way). Every collection of the app copy gets a LISTEN rule for this.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { WebPubSubClient, WebPubSubJsonProtocol } from '@azure/web-pubsub-client';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, type PreparedApp, trustLoopback } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call, useHeaders } from '../support/scenario.js';
// The built runtime: the SQLite driver's worker threads load from dist/.
import { apiClientFor, startServer, type Caller, type Change, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

function dataSuite(backend: Backend): void {
  describe(`change sets on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let base: string;
    let admin: Identity;
    const published: { changes: Change[]; reqId: string }[] = [];
    let customer: string;
    let product: string;

    /** Every change set ever published (never reset, unlike `published`). */
    const history: Change[][] = [];
    /** What the Web PubSub client listening to every collection heard, in order. */
    const heard: { group: string; data: unknown }[] = [];
    let feed: WebPubSubClient | undefined;
    let marks = 0;

    /**
     * Runs `fn` and returns the change sets published meanwhile, after checking that the listening
     * client heard exactly their notifications, in order, and nothing else.
     */
    async function changesOf(fn: () => Promise<unknown>): Promise<Change[][]> {
      const before = published.length;
      const fromHistory = history.length;
      const fromHeard = heard.length;
      await fn();
      const mark = `mark-${++marks}`;
      expect((await call(base, 'POST', '/_rt/send', { channel: 'marker', body: mark })).status).toBe(200);
      await waitFor(() => heard.some((h) => h.data === mark));
      const notes = heard.slice(fromHeard).filter((h) => h.group !== 'shop:marker');
      const expected = history
        .slice(fromHistory)
        .flat()
        .map((c) => ({ group: `shop:${c.collection}`, data: { action: c.action, path: `shop/${c.collection}`, ids: c.ids } }));
      expect(notes).toEqual(expected);
      return published.slice(before).map((p) => p.changes);
    }
    const sorted = (c: Change[]) => c.map((x) => ({ ...x, ids: [...x.ids].sort(), lookupIds: [...x.lookupIds].sort() }));

    beforeAll(async () => {
      app = await prepareApp(SHOP, backend, trustLoopback); // x-request-id of the test is kept
      // Every collection may be listened to (the shop grants LISTEN on Order only).
      for (const name of ['Customer', 'Product', 'OrderLine']) {
        const file = join(app.dir, 'collections', `${name}.json`);
        const definition = JSON.parse(readFileSync(file, 'utf8'));
        definition.access.push({ method: 'LISTEN', roleNames: ['_AUTHENTICATED_USER'] });
        writeFileSync(file, JSON.stringify(definition));
      }
      const generated = await runCli(['generate', app.dir], app.env);
      expect(generated.code, generated.stderr).toBe(0);
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env },
        logger: pino({ level: 'silent' }),
        sink: {
          publish: (changes, origin) => {
            published.push({ changes, reqId: origin.reqId });
            history.push(changes);
          },
        },
      });
      base = server.url;
      admin = await adminIdentity(app, base);
      useHeaders(base, admin.headers);
      let connectionId = '';
      feed = new WebPubSubClient(
        { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: admin.headers })).json()).url },
        { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
      );
      feed.on('connected', (e) => (connectionId = e.connectionId));
      feed.on('group-message', (e) => heard.push({ group: e.message.group, data: e.message.data }));
      await feed.start();
      await waitFor(() => connectionId);
      await feed.joinGroup('shop:marker');
      for (const name of ['Customer', 'Product', 'Order', 'OrderLine']) {
        expect((await call(base, 'POST', `/${name}/_listen`, { connectionId, type: 'ws' })).status).toBe(200);
      }
      customer = (await call(base, 'POST', '/Customer', { name: 'Ada', country: 'GB' })).json.data[0];
      product = (await call(base, 'POST', '/Product', { sku: 'p1', name: 'Kettle', price: 10, stock: 5 })).json.data[0];
    });
    afterAll(async () => {
      feed?.stop();
      await server?.close();
      await app?.cleanup();
    });

    it('POST one and many: one change with every id and the lookup ids', async () => {
      let ids: string[] = [];
      const sets = await changesOf(async () => {
        const r = await call(
          base,
          'POST',
          '/Order',
          [
            { title: 'a', customer: { id: customer } },
            { title: 'b', customer: { id: customer } },
          ],
          { 'x-request-id': 'walk-post' },
        );
        expect(r.status).toBe(201);
        ids = r.json.data;
      });
      expect(sets).toEqual([[{ collection: 'Order', action: 'POST', ids, lookupIds: [customer] }]]);
      expect(published.at(-1)!.reqId).toBe('walk-post');
    });

    it('nested children through a parent: each collection reports its own change', async () => {
      let order = '';
      const created = await changesOf(async () => {
        const r = await call(base, 'POST', '/Order', {
          title: 'with lines',
          customer: { id: customer },
          'OrderLine.order': [
            { product: { id: product }, quantity: 1, unitPrice: 2 },
            { product: { id: product }, quantity: 2, unitPrice: 2 },
          ],
        });
        expect(r.status).toBe(201);
        order = r.json.data[0];
      });
      expect(created).toHaveLength(1);
      const lines = (await call(base, 'GET', `/Order/${order}?include=OrderLine.order`)).json['OrderLine.order'] as { id: string }[];
      expect(sorted(created[0])).toEqual(
        sorted([
          { collection: 'Order', action: 'POST', ids: [order], lookupIds: [customer] },
          { collection: 'OrderLine', action: 'POST', ids: lines.map((l) => l.id), lookupIds: [order, product] },
        ]),
      );
      // PATCH: one line updated, one removed (missing from the array), one created.
      const patched = await changesOf(async () => {
        const r = await call(base, 'PATCH', `/Order/${order}`, {
          title: 'patched',
          'OrderLine.order': [
            { id: lines[0].id, quantity: 9 },
            { product: { id: product }, quantity: 3, unitPrice: 1 },
          ],
        });
        expect(r.status).toBe(200);
      });
      const after = (await call(base, 'GET', `/Order/${order}?include=OrderLine.order`)).json['OrderLine.order'] as { id: string }[];
      const added = after.map((l) => l.id).filter((id) => id !== lines[0].id);
      expect(sorted(patched[0])).toEqual(
        sorted([
          { collection: 'Order', action: 'PATCH', ids: [order], lookupIds: [customer] },
          { collection: 'OrderLine', action: 'PATCH', ids: [lines[1].id, lines[0].id, ...added], lookupIds: [order, product] },
        ]),
      );
    });

    it('PUT, PATCH and DELETE one, through the collection and through a view', async () => {
      const id = (await call(base, 'POST', '/Order', { title: 'v', customer: { id: customer } })).json.data[0];
      expect(await changesOf(() => call(base, 'PUT', `/Order/${id}`, { title: 'put', customer: { id: customer } }))).toEqual([
        [{ collection: 'Order', action: 'PUT', ids: [id], lookupIds: [customer] }],
      ]);
      // A view reports its base collection.
      expect(await changesOf(() => call(base, 'PATCH', `/OpenOrders/${id}`, { paid: true }))).toEqual([
        [{ collection: 'Order', action: 'PATCH', ids: [id], lookupIds: [customer] }],
      ]);
      // The lookup ids of a deleted row are read before the delete.
      expect(await changesOf(() => call(base, 'DELETE', `/Order/${id}`))).toEqual([
        [{ collection: 'Order', action: 'DELETE', ids: [id], lookupIds: [customer] }],
      ]);
    });

    it('writes by function code report like HTTP writes (placeOrder: the order and its line)', async () => {
      await call(base, 'PATCH', `/Product/${product}`, { stock: 50, active: true });
      let order = '';
      const sets = await changesOf(async () => {
        const r = await call(base, 'POST', '/_invoke/placeOrder', { customer, sku: 'p1', quantity: 2 });
        expect(r.status, JSON.stringify(r.json)).toBe(201);
        order = r.json.order;
      });
      const lines = (await call(base, 'GET', `/Order/${order}?include=OrderLine.order`)).json['OrderLine.order'] as { id: string }[];
      expect(sets.map(sorted)).toEqual([
        sorted([
          { collection: 'Order', action: 'POST', ids: [order], lookupIds: [customer] },
          { collection: 'OrderLine', action: 'POST', ids: lines.map((l) => l.id), lookupIds: [order, product] },
        ]),
      ]);
    });

    it('id and lookupIds narrow a subscription; two _listen calls still deliver each notification once', async () => {
      const [first, second] = (
        await call(base, 'POST', '/Order', [
          { title: 'watched', customer: { id: customer } },
          { title: 'other', customer: { id: customer } },
        ])
      ).json.data as string[];
      let connectionId = '';
      const narrow = new WebPubSubClient(
        { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: admin.headers })).json()).url },
        { protocol: WebPubSubJsonProtocol() },
      );
      const got: unknown[] = [];
      narrow.on('connected', (e) => (connectionId = e.connectionId));
      narrow.on('group-message', (e) => got.push(e.message.data));
      await narrow.start();
      try {
        await waitFor(() => connectionId);
        expect((await call(base, 'POST', '/Order/_listen', { connectionId, type: 'ws', id: first })).status).toBe(200);
        expect((await call(base, 'POST', '/Order/_listen', { connectionId, type: 'ws', id: first })).status).toBe(200);
        expect((await call(base, 'POST', '/OrderLine/_listen', { connectionId, type: 'ws', lookupIds: [second] })).status).toBe(200);
        await changesOf(async () => {
          await call(base, 'PATCH', `/Order/${second}`, { title: 'not watched' });
          await call(base, 'PATCH', `/Order/${first}`, { title: 'watched again' });
          await call(base, 'POST', '/OrderLine', { order: { id: first }, product: { id: product }, quantity: 1, unitPrice: 1 });
          await call(base, 'POST', '/OrderLine', { order: { id: second }, product: { id: product }, quantity: 1, unitPrice: 1 });
        });
        await waitFor(() => got.length >= 2);
        const line = (await call(base, 'GET', `/OrderLine?filter=order eq "${second}"`)).json.data[0].id;
        // The marker of changesOf went only to the feed: one more write proves nothing else is coming here.
        await call(base, 'PATCH', `/Order/${first}`, { title: 'last' });
        await waitFor(() => got.length >= 3);
        expect(got).toEqual([
          { action: 'PATCH', path: 'shop/Order', ids: [first] },
          { action: 'POST', path: 'shop/OrderLine', ids: [line] },
          { action: 'PATCH', path: 'shop/Order', ids: [first] },
        ]);
      } finally {
        narrow.stop();
      }
    });

    it('bulk DELETE reports every id', async () => {
      const ids = (
        await call(base, 'POST', '/Order', [
          { title: 'x', customer: { id: customer } },
          { title: 'y', customer: { id: customer } },
        ])
      ).json.data as string[];
      const sets = await changesOf(() => call(base, 'DELETE', '/Order', ids));
      expect(sorted(sets[0])).toEqual(sorted([{ collection: 'Order', action: 'DELETE', ids, lookupIds: [customer] }]));
    });

    it('a rejected or rolled-back request reports nothing', async () => {
      const sets = await changesOf(async () => {
        // Validation: nothing reaches the database.
        expect((await call(base, 'POST', '/Order', [{ title: 'ok', customer: { id: customer } }, { title: 5 }])).status).toBe(400);
        // A dangling lookup: rejected by the database inside the unit of work.
        expect((await call(base, 'POST', '/Order', { title: 'dangling', customer: { id: '01890000-0000-7000-8000-000000000000' } })).status).toBe(400);
        // A child that belongs to another parent: the parent's update is rolled back.
        const a = (
          await call(base, 'POST', '/Order', {
            title: 'a',
            customer: { id: customer },
            'OrderLine.order': [{ product: { id: product }, quantity: 1, unitPrice: 1 }],
          })
        ).json.data[0];
        const b = (await call(base, 'POST', '/Order', { title: 'b', customer: { id: customer } })).json.data[0];
        const lineOfA = (await call(base, 'GET', `/Order/${a}?include=OrderLine.order`)).json['OrderLine.order'][0].id;
        published.length = 0;
        expect((await call(base, 'PATCH', `/Order/${b}`, { title: 'never', 'OrderLine.order': [{ id: lineOfA, quantity: 2 }] })).status).toBe(400);
        expect((await call(base, 'GET', `/Order/${b}`)).json.title).toBe('b');
        // Bulk delete with an unknown id: the partial delete is rolled back.
        expect((await call(base, 'DELETE', '/Order', [b, '01890000-0000-7000-8000-000000000000'])).status).toBe(404);
        expect((await call(base, 'GET', `/Order/${b}`)).status).toBe(200);
        // A row still referenced by a required lookup.
        expect((await call(base, 'DELETE', `/Customer/${customer}`)).status).toBe(409);
      });
      expect(sets.flat().filter((c) => c.collection !== 'Order' || c.action !== 'POST')).toEqual([]);
      expect(published).toEqual([]);
    });

    it('the in-process API client answers like HTTP and reports its changes', async () => {
      const caller: Caller = { kind: 'serviceAccount', id: admin.id, username: 'test-admin', roles: [], admin: true };
      const api = apiClientFor(server.runtime, caller, { reqId: 'in-process' });
      let id = '';
      const sets = await changesOf(async () => {
        const r = await api.request({ method: 'POST', path: '/Order', body: { title: 'in-process', customer: { id: customer } } });
        expect(r.status).toBe(201);
        id = (r.body as { data: string[] }).data[0];
      });
      expect(sets).toEqual([[{ collection: 'Order', action: 'POST', ids: [id], lookupIds: [customer] }]]);
      expect(published.at(-1)!.reqId).toBe('in-process');
      const row = await api.request({ method: 'GET', path: `/Order/${id}`, query: { select: 'title,createdBy' } });
      expect(row).toEqual({ status: 200, body: { id, title: 'in-process', createdBy: admin.id } });
      // Error bodies are those of HTTP, byte for byte.
      for (const [method, path, body] of [
        ['POST', '/Order', { title: 7 }],
        ['GET', '/Nope', undefined],
        ['PATCH', `/CustomerRevenue/${id}`, {}],
      ] as const) {
        const viaHttp = await call(base, method, path, body);
        const inProcess = await api.request({ method, path, body });
        expect(inProcess.status, `${method} ${path}`).toBe(viaHttp.status);
        if (path !== '/Nope') expect(inProcess.body).toEqual(viaHttp.json);
      }
      // An anonymous caller meets the same rules as over HTTP.
      const anonymous = apiClientFor(server.runtime, { kind: 'anonymous', id: null, username: null, roles: [], admin: false });
      expect((await anonymous.request({ method: 'GET', path: '/Order' })).status).toBe(401);
      // An aborted signal rolls the write back and publishes nothing.
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      const stopped = apiClientFor(server.runtime, caller, { signal: controller.signal });
      const before = published.length;
      const r = await stopped.request({
        method: 'POST',
        path: '/Order',
        body: [
          { title: 'never', customer: { id: customer } },
          { title: 'never', customer: { id: customer } },
        ],
      });
      expect(r.status).toBe(500);
      expect(published.length).toBe(before);
      expect((await call(base, 'GET', '/Order?filter=title eq "never"&count=only')).json.meta.count).toBe(0);
    });
  });
}

for (const backend of backends()) dataSuite(backend);
