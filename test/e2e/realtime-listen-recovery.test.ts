/**
 * `_listen` change feeds of reliable Web PubSub connections across a recovery on another instance
 * (issue 24 §3; runtime/realtime/wps-listens.ts): three `svc serve` processes of examples/shop (with a
 * LISTEN rule for the role `clerk` on Product) on one PostgreSQL database and a private `redis-server`,
 * the official `@azure/web-pubsub-client` on its reliable protocol behind a small TCP proxy (the load
 * balancer).
 *
 * - A listens for two clients (one `_listen` forwarded from B, one with `id` and `lookupIds` filters
 *   from C and A); A is SIGKILLed and the clients recover through B: no `connected` event, no new
 *   `_listen`, and each write after reaches them exactly once, through the filters.
 * - C is alive when its client's socket is cut and the client recovers through B: C lets go (it holds
 *   no connection any more) and a write made on C reaches the client once. A `_listen` past
 *   `MAX_LISTEN_IDS` ids answers 400, also when B forwards it to C.
 * - Hostile listen entries written into the Redis hash (bad JSON, unknown collections, huge arrays,
 *   50,000 fields, random text) are dropped by the recovery, or it closes 1008; no instance fails.
 * - A role change made while no instance holds the connection (C killed, the proxy refusing): the
 *   recovery on B restores the feed the identity may still have and drops the one it may not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Redis } from 'ioredis';
import { WebPubSubClient } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { prepareForRevocation } from '../support/identity-revocation.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { MAX_LISTEN_IDS } from '../../dist/runtime/realtime/listen-filter.js';

const SHOP = join(ROOT, 'examples/shop');
const RELIABLE = 'json.reliable.webpubsub.azure.v1';

let app: PreparedApp;
let redis: PrivateRedis;
let r: Redis;
let a: TestServer;
let b: TestServer;
let c: TestServer;
let alice: Identity;
let admin: Identity;
let customer = '';
const clients: WebPubSubClient[] = [];
const proxies: TcpProxy[] = [];
const raws: WebSocket[] = [];
/** `_listen` calls made by this file. */
let listenCalls = 0;

const portOf = (server: TestServer) => Number(new URL(server.url).port);
const key = (connectionId: string) => `svc:shop:rt:wps:${connectionId}`;
/** The instance that made a connection id (`<instance>.<random>`). */
const madeOn = (connectionId: string) => connectionId.split('.')[0];

async function post(base: string, path: string, body: unknown, who: Identity, method = 'POST'): Promise<{ status: number; json: any }> {
  const res = await fetch(base + path, { method, headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function listen(base: string, who: Identity, collection: string, body: Record<string, unknown>): Promise<void> {
  listenCalls += 1;
  const res = await post(base, `/${collection}/_listen`, { type: 'ws', ...body }, who);
  expect(res.status, JSON.stringify(res.json)).toBe(200);
}

async function newOrder(base: string, title: string, customerId = customer): Promise<string> {
  const res = await post(base, '/Order', { title, customer: customerId }, alice);
  expect(res.status, JSON.stringify(res.json)).toBe(201);
  return res.json.data[0];
}

async function patchOrder(base: string, id: string, title: string): Promise<void> {
  expect((await post(base, `/Order/${id}`, { title }, alice, 'PATCH')).status).toBe(200);
}

/** A started official client on the reliable protocol, in channel `marks`, with what it received. */
interface Listener {
  changes: { path: string; action: string; ids: string[] }[];
  marks: unknown[];
  connected: string[];
  id: () => string;
}

async function listener(base: string, who: Identity): Promise<Listener> {
  const client = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: who.headers })).json()).url },
    { messageRetryOptions: { maxRetries: 0 } },
  );
  clients.push(client);
  const l: Listener = { changes: [], marks: [], connected: [], id: () => l.connected[l.connected.length - 1] };
  client.on('connected', (e) => l.connected.push(e.connectionId));
  client.on('group-message', (e) => {
    if (e.message.group === 'shop:marks') l.marks.push(e.message.data);
    else l.changes.push(e.message.data as Listener['changes'][number]);
  });
  await client.start();
  await waitFor(() => l.connected.length > 0);
  await client.joinGroup('shop:marks');
  return l;
}

/** Sends a marker through `server` after the writes made there and waits until each listener has it: nothing else is on its way. */
async function settled(server: TestServer, listeners: Listener[]): Promise<void> {
  const marker = `mark ${performance.now()}`;
  expect((await post(server.url, '/_rt/send', { channel: 'marks', body: marker }, alice)).status).toBe(200);
  await waitFor(() => listeners.every((l) => l.marks.includes(marker)), 10_000);
}

/** How many notifications of `collection` naming `id` a listener got. */
const count = (l: Listener, id: string, collection = 'Order') => l.changes.filter((n) => n.path === `shop/${collection}` && n.ids.includes(id)).length;

/** Waits until another instance than `from` holds the connection (it recorded that in Redis after restoring the feeds). */
async function movedFrom(connectionId: string, from: string): Promise<void> {
  await waitFor(async () => {
    const at = await r.hget(key(connectionId), 'at');
    return at !== null && at !== from;
  }, 30_000);
}

/** The `svc_realtime_connections` gauge of one instance. */
async function connectionsOn(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/_metrics`, { headers: admin.headers })).text();
  return Number(/^svc_realtime_connections (\d+)/m.exec(text)![1]);
}

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  r = new Redis(redis.url);
  app = await prepareApp(SHOP, 'postgresql');
  prepareForRevocation(app.dir);
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  const env = { ...app.env, REDIS_URL: redis.url };
  a = await serve(app.dir, env);
  [b, c] = await Promise.all([serve(app.dir, env), serve(app.dir, env)]);
  alice = await userIdentity(app, a.url, 'alice');
  admin = await adminIdentity(app, a.url);
  customer = (await post(a.url, '/Customer', { name: 'Ada', country: 'GB' }, alice)).json.data[0];
});

afterAll(async () => {
  for (const client of clients) client.stop();
  for (const ws of raws) ws.terminate();
  for (const p of proxies) p.close();
  r?.disconnect();
  await Promise.all([a, b, c].map((s) => s && s.child.exitCode === null && s.child.signalCode === null && s.close()));
  await redis?.stop();
  await app?.cleanup();
});

describe('change feeds of reliable connections recovered on another instance', () => {
  it('A dies: its clients recover through B with their _listen feeds and filters, each write after reaching them exactly once', async () => {
    const proxy = new TcpProxy(portOf(a));
    proxies.push(proxy);
    const via = `http://127.0.0.1:${await proxy.listen()}/api`;
    const [whole, narrow] = [await listener(via, alice), await listener(via, alice)];
    const other = (await post(a.url, '/Customer', { name: 'Bo', country: 'SE' }, alice)).json.data[0] as string;
    const [o1, o2] = [await newOrder(a.url, 'one'), await newOrder(a.url, 'two')];
    // Forwarded: B and C pass the calls to A, which holds the connections and mirrors them to Redis.
    await listen(b.url, alice, 'Order', { connectionId: whole.id() });
    await listen(c.url, alice, 'Order', { connectionId: narrow.id(), id: o1 });
    await listen(a.url, alice, 'Order', { connectionId: narrow.id(), lookupIds: [other] });
    expect(JSON.parse((await r.hget(key(whole.id()), 'l:Order'))!)).toEqual({ t: 'ws', a: true, i: [], k: [] });
    expect(JSON.parse((await r.hget(key(narrow.id()), 'l:Order'))!)).toEqual({ t: 'ws', a: false, i: [o1], k: [other] });
    await patchOrder(b.url, o1, 'one, before');
    await settled(b, [whole, narrow]);
    expect([count(whole, o1), count(narrow, o1)]).toEqual([1, 1]);
    const before = listenCalls;

    proxy.target = portOf(b);
    a.child.kill('SIGKILL');
    await movedFrom(whole.id(), madeOn(whole.id()));
    await movedFrom(narrow.id(), madeOn(narrow.id()));

    await patchOrder(c.url, o2, 'two, after');
    await patchOrder(c.url, o1, 'one, after');
    const o3 = await newOrder(c.url, 'three', other);
    await settled(c, [whole, narrow]);
    expect([count(whole, o1), count(whole, o2), count(whole, o3)]).toEqual([2, 1, 1]);
    // Through the filters: o1 by its id, o3 by its customer; never o2.
    expect([count(narrow, o1), count(narrow, o2), count(narrow, o3)]).toEqual([2, 0, 1]);
    // Recovered, not restarted, and nobody called _listen again.
    expect([whole.connected, narrow.connected].map((x) => x.length)).toEqual([1, 1]);
    expect(listenCalls).toBe(before);
  }, 60_000);

  it('C is alive when its client recovers through B: C lets go of the connection, and a write made on C arrives once', async () => {
    const proxy = new TcpProxy(portOf(c));
    proxies.push(proxy);
    const via = `http://127.0.0.1:${await proxy.listen()}/api`;
    const l = await listener(via, alice);
    // The bound on one subscription's ids is enforced where the connection lives, and answered through B.
    const ids = Array.from({ length: MAX_LISTEN_IDS + 1 }, (_, i) => `0190a1b2-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const tooMany = await post(b.url, '/Order/_listen', { connectionId: l.id(), type: 'ws', lookupIds: ids }, alice);
    expect([tooMany.status, tooMany.json.code]).toEqual([400, 'INVALID_PARAMETER']);
    expect(await r.hexists(key(l.id()), 'l:Order')).toBe(0);
    await listen(b.url, alice, 'Order', { connectionId: l.id(), lookupIds: ids.slice(1) });
    await listen(via, alice, 'Order', { connectionId: l.id() });
    await waitFor(async () => JSON.parse((await r.hget(key(l.id()), 'l:Order')) ?? '{}').a === true);
    expect(await connectionsOn(c)).toBe(1);

    proxy.target = portOf(b);
    proxy.cut();
    await movedFrom(l.id(), madeOn(l.id()));
    await waitFor(async () => (await connectionsOn(c)) === 0);
    const order = await newOrder(c.url, 'after the cut');
    await settled(c, [l]);
    expect(count(l, order)).toBe(1);
    expect(l.connected).toHaveLength(1);
  });
});

/** A raw reliable Web PubSub socket opened on `server`. */
async function rawReliable(server: TestServer): Promise<{ ws: WebSocket; id: string; token: string }> {
  const ws = new WebSocket((await (await fetch(`${server.url}/_rt/ws`, { headers: alice.headers })).json()).url, RELIABLE);
  raws.push(ws);
  ws.on('error', () => {});
  const connected = await new Promise<{ connectionId: string; reconnectionToken: string }>((ok) =>
    ws.on('message', (d) => {
      const f = JSON.parse(String(d));
      if (f.event === 'connected') ok(f);
    }),
  );
  return { ws, id: connected.connectionId, token: connected.reconnectionToken };
}

/**
 * Recovers a raw connection on `server`; resolves once it is settled: open (a `ping` answered) with
 * the frames it receives, or closed with a code.
 */
async function recoverRaw(server: TestServer, id: string, token: string): Promise<{ closed: number | null; frames: any[] }> {
  const url = `${server.url.replace('http', 'ws')}/_rt/client?awps_connection_id=${encodeURIComponent(id)}&awps_reconnection_token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(url, RELIABLE);
  raws.push(ws);
  ws.on('error', () => {});
  const frames: any[] = [];
  return new Promise((ok) => {
    ws.on('open', () => ws.send(JSON.stringify({ type: 'ping' })));
    ws.on('message', (d) => {
      const f = JSON.parse(String(d));
      if (f.type === 'pong') ok({ closed: null, frames });
      else frames.push(f);
    });
    ws.on('close', (code) => ok({ closed: code, frames }));
  });
}

const GUID = '0190a1b2-0000-7000-8000-000000000001';

/** Values a hostile listen entry may hold. */
function hostileValue(p: Prng): string {
  return p.pick([
    () => p.string(p.int(400)),
    () => '{"t":"ws","a":true,"i":[],"k":[]',
    () => JSON.stringify({ t: p.pick(['ws', 'hub', 'sse', 1, null]), a: p.pick([true, false, 'true', 0]), i: p.pick([[], [GUID], ['x'], 7]), k: [] }),
    () => JSON.stringify({ t: 'ws', a: false, i: Array(MAX_LISTEN_IDS + 1 + p.int(5000)).fill(GUID), k: [] }),
    () => '['.repeat(10_000 + p.int(90_000)),
    () => String(p.next()),
    () => 'null',
  ])();
}

describe('hostile listen entries in the Redis hash', () => {
  const SEED = fuzzSeed();
  it(`the recovery on another instance drops each invalid entry, or closes 1008; no instance fails (seed ${SEED})`, async () => {
    const p = new Prng(SEED);
    const fifty = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`l:x${i}`, '{"t":"ws","a":true,"i":[],"k":[]}']));
    // Each case: the fields written over the held state, and whether Order's feed survives (null: closed 1008).
    const cases: { fields: Record<string, string>; orderKept: boolean | null }[] = [
      {
        fields: { 'l:Bad': '{not json', 'l:NoSuchCollection': '{"t":"ws","a":true,"i":[],"k":[]}', 'l:Customer': '{"t":"ws","a":true,"i":[],"k":[]}' },
        orderKept: true,
      },
      { fields: { 'l:Product': '{"t":"ws","a":true,"i":[],"k":[]}' }, orderKept: true }, // alice is no clerk
      { fields: { 'l:Order': JSON.stringify({ t: 'ws', a: false, i: Array(MAX_LISTEN_IDS + 1).fill(GUID), k: [] }) }, orderKept: false },
      { fields: { 'l:Order': `"${'x'.repeat(5 * 1024 * 1024)}"` }, orderKept: false },
      { fields: { 'l:Order': '{"t":"hub","a":true,"i":[],"k":[]}' }, orderKept: false },
      { fields: { 'l:Order': '{"t":"ws","a":false,"i":["not-a-guid"],"k":[]}' }, orderKept: false },
      { fields: fifty, orderKept: true },
      { fields: { caller: '{' }, orderKept: null },
      { fields: { caller: JSON.stringify({ kind: 'root', id: 'x', roles: [], admin: true }) }, orderKept: null },
    ];
    for (let n = 0; n < 15; n++) {
      const fields: Record<string, string> = {};
      for (let f = 1 + p.int(4); f > 0; f--) fields[`l:${p.pick(['Product', 'Customer', 'Nope', p.string(p.int(300))])}`] = hostileValue(p);
      cases.push({ fields, orderKept: true });
    }
    for (const [i, { fields, orderKept }] of cases.entries()) {
      const what = `seed ${SEED}, case ${i}: ${JSON.stringify(fields).slice(0, 200)}`;
      const [holder, taker] = i % 2 === 0 ? [c, b] : [b, c];
      const raw = await rawReliable(holder);
      await listen(holder.url, alice, 'Order', { connectionId: raw.id });
      await waitFor(() => r.hexists(key(raw.id), 'l:Order'));
      raw.ws.terminate();
      await r.hset(key(raw.id), fields);
      const got = await recoverRaw(taker, raw.id, raw.token);
      if (orderKept === null) {
        expect(got.closed, what).toBe(1008);
        continue;
      }
      expect(got.closed, what).toBeNull();
      // Only valid entries stay in Redis: here Order's, when it was kept.
      const left = Object.keys(await r.hgetall(key(raw.id))).filter((k) => k.startsWith('l:'));
      expect(left, what).toEqual(orderKept ? ['l:Order'] : []);
      const order = await newOrder(taker.url, `fuzz ${i}`);
      if (orderKept) await waitFor(() => got.frames.some((f) => f.group === 'shop:Order' && f.data.ids.includes(order)), 5000);
      else
        expect(
          got.frames.filter((f) => f.group === 'shop:Order'),
          what,
        ).toEqual([]);
    }
    for (const server of [b, c]) {
      expect(server.child.exitCode).toBeNull();
      expect((await fetch(`${server.url}/_health`)).status).toBe(200);
    }
  }, 120_000);
});

describe('a role change while no instance holds the connection', () => {
  it('the recovery restores the feed the identity may still have and drops the one it may not', async () => {
    // Rita signs in and listens on C only, so B has not seen her identity before the recovery.
    const rita = await userIdentity(app, c.url, 'rita', ['clerk']);
    const proxy = new TcpProxy(portOf(c));
    proxies.push(proxy);
    const via = `http://127.0.0.1:${await proxy.listen()}/api`;
    const l = await listener(via, rita);
    await listen(c.url, rita, 'Product', { connectionId: l.id() });
    await listen(c.url, rita, 'Order', { connectionId: l.id() });
    const product = (await post(c.url, '/Product', { sku: 'r-1', name: 'Lamp', price: 5 }, admin)).json.data[0];
    await settled(c, [l]);
    expect(count(l, product, 'Product')).toBe(1);

    // Nothing answers (the proxy sends new connections to a closed port), C dies, and Rita loses `clerk`.
    proxy.target = 1;
    c.child.kill('SIGKILL');
    const roles = await runCli(['user', 'set-roles', app.dir, '--username', 'rita', '--roles', ''], app.env);
    expect(roles.code, roles.stderr).toBe(0);
    expect(await r.hexists(key(l.id()), 'l:Product')).toBe(1);
    proxy.target = portOf(b);
    await movedFrom(l.id(), madeOn(l.id()));

    expect(await r.hexists(key(l.id()), 'l:Product')).toBe(0);
    const [p2, order] = [(await post(b.url, '/Product', { sku: 'r-2', name: 'Desk', price: 9 }, admin)).json.data[0], await newOrder(b.url, 'for rita')];
    await settled(b, [l]);
    expect(count(l, p2, 'Product')).toBe(0);
    expect(count(l, order)).toBe(1);
    expect(l.connected).toHaveLength(1);
  }, 60_000);
});
