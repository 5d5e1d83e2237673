/**
 * Several instances on one PostgreSQL database and one Redis (issue "real-time" § Many instances;
 * DESIGN §4, §6): two `svc serve` processes of examples/shop share a private `redis-server` started by
 * the test. A write on A reaches a listener on B exactly once; a channel message sent on B reaches a
 * client on A; a join made on A of a connection held by B is in effect when A answers; a one-time URL
 * from A opens a socket on B once and never again; failed sign-ins on A and B share one limit. Then
 * Redis is killed mid-test: both servers keep answering, log the messages lost meanwhile, and fan-out
 * works again once Redis is back on the same port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import WebSocket from 'ws';
import { WebPubSubClient, WebPubSubJsonProtocol, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let redis: PrivateRedis;
let a: TestServer;
let b: TestServer;
let alice: Identity;
let admin: Identity;
const clients: WebPubSubClient[] = [];

/** An official Web PubSub client of `server` as `who` (plain protocol, no retries that would hide errors). */
async function client(server: TestServer, who: Identity): Promise<{ c: WebPubSubClient; got: OnGroupDataMessageArgs['message'][]; id: () => string }> {
  const c = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${server.url}/_rt/ws`, { headers: who.headers })).json()).url },
    { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
  );
  clients.push(c);
  const got: OnGroupDataMessageArgs['message'][] = [];
  let id = '';
  c.on('connected', (e) => (id = e.connectionId));
  c.on('group-message', (e) => got.push(e.message));
  await c.start();
  await waitFor(() => id);
  return { c, got, id: () => id };
}

async function post(server: TestServer, path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(server.url + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(SHOP, 'postgresql');
  const env = { ...app.env, REDIS_URL: redis.url };
  a = await serve(app.dir, env);
  b = await serve(app.dir, env);
  admin = await adminIdentity(app, a.url);
  alice = await userIdentity(app, a.url, 'alice');
});

afterAll(async () => {
  for (const c of clients) c.stop();
  await a?.close();
  await b?.close();
  await redis?.stop();
  await app?.cleanup();
});

describe('two instances on one Redis', () => {
  it('a write on A reaches a listener on B exactly once', async () => {
    const listener = await client(b, alice);
    expect((await post(b, '/Order/_listen', { connectionId: listener.id(), type: 'ws' }, alice)).status).toBe(200);
    const customer = (await post(a, '/Customer', { name: 'Ada', country: 'GB' }, admin)).json.data[0];
    const order = await post(a, '/Order', { title: 'kettle', customer }, alice);
    expect(order.status).toBe(201);
    await waitFor(() => listener.got.length > 0);
    // A marker write proves no second copy was on its way.
    const marker = await post(a, '/Order', { title: 'marker', customer }, alice);
    await waitFor(() => listener.got.length > 1);
    expect(listener.got.map((m) => m.data)).toEqual([
      { action: 'POST', path: 'shop/Order', ids: order.json.data },
      { action: 'POST', path: 'shop/Order', ids: marker.json.data },
    ]);
    expect(listener.got[0].group).toBe('shop:Order');
  });

  it('a channel message sent on B reaches a client on A; a join made on A of a connection held by B is in effect when A answers', async () => {
    const onA = await client(a, alice);
    await onA.c.joinGroup('shop:lobby');
    expect((await post(b, '/_rt/send', { channel: 'lobby', body: { from: 'B' } }, alice)).status).toBe(200);
    await waitFor(() => onA.got.some((m) => (m.data as any)?.from === 'B'));

    const onB = await client(b, alice);
    expect((await post(a, '/_rt/join', { connectionId: onB.id(), channel: 'room' }, alice)).status).toBe(200);
    // Sent at once after the answer, from the other instance: it must arrive.
    expect((await post(a, '/_rt/send', { channel: 'room', body: 'hello' }, alice)).status).toBe(200);
    await waitFor(() => onB.got.some((m) => m.data === 'hello'));
    expect(onB.got.filter((m) => m.data === 'hello')).toHaveLength(1);

    // Another identity may not join it from either instance; an unknown connection is 404.
    const bob = await userIdentity(app, a.url, 'bob');
    expect((await post(a, '/_rt/join', { connectionId: onB.id(), channel: 'room' }, bob)).status).toBe(403);
    expect((await post(a, '/_rt/join', { connectionId: `${onB.id().split('.')[0]}.nope`, channel: 'room' }, alice)).status).toBe(404);
    expect((await post(a, '/_rt/join', { connectionId: 'gone.nope', channel: 'room' }, alice)).status).toBe(404);
  });

  it('a one-time URL from A opens a socket on B once, and is refused on either afterwards', async () => {
    const url = (await (await fetch(`${a.url}/_rt/ws`, { headers: alice.headers })).json()).url as string;
    const onB = url.replace(new URL(a.url).host, new URL(b.url).host);
    const open = (target: string) =>
      new Promise<number>((ok) => {
        const ws = new WebSocket(target, 'json.webpubsub.azure.v1');
        ws.on('message', () => {
          ws.close();
          ok(101);
        });
        ws.on('unexpected-response', (_req, res) => ok(res.statusCode ?? 0));
        ws.on('error', () => {});
      });
    expect(await open(onB)).toBe(101);
    expect(await open(onB)).toBe(401);
    expect(await open(url)).toBe(401);
  });

  it('failed sign-ins on A and B count against one limit', async () => {
    const attempt = (server: TestServer) =>
      fetch(`${server.url}/_auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ authority: 'password', username: 'alice', password: 'wrong-password' }),
      }).then((r) => r.status);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push(await attempt(i % 2 === 0 ? a : b));
    expect(statuses.every((s) => s === 401)).toBe(true);
    expect(await attempt(a)).toBe(429);
    expect(await attempt(b)).toBe(429);
  });

  it('survives Redis restarting: no crash, lost messages logged, fan-out resumes', async () => {
    const onA = await client(a, alice);
    await onA.c.joinGroup('shop:after');
    await redis?.stop();
    // While Redis is down both instances keep answering; what B sends cannot reach A and is logged.
    for (let i = 0; i < 3; i++) expect((await post(b, '/_rt/send', { channel: 'after', body: `lost ${i}` }, alice)).status).toBe(200);
    expect((await fetch(`${a.url}/Product`, { headers: admin.headers })).status).toBe(200);
    await waitFor(() => /real-time message lost/.test(b.output()));
    expect(a.child.exitCode).toBeNull();
    expect(b.child.exitCode).toBeNull();
    await redis.start();
    // Both reconnect and re-subscribe on their own.
    await waitFor(async () => {
      await post(b, '/_rt/send', { channel: 'after', body: 'back' }, alice);
      return onA.got.some((m) => m.data === 'back');
    }, 20_000);
    expect(onA.got.some((m) => String(m.data).startsWith('lost'))).toBe(false);
    // B's log line comes through its stdout pipe, which may trail the message A got over its socket.
    await waitFor(() => /redis connection restored/.test(b.output()));
  }, 60_000);
});
