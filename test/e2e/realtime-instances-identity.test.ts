/**
 * Two `svc serve` instances of examples/shop on one PostgreSQL database and a private Redis (issue 20
 * §4, DESIGN §6): a SignalR connection negotiated on A whose socket opens on B works from both
 * instances (`_listen`, `_rt/join`); deleting or disabling an identity with the CLI closes its sockets
 * on both instances within 5 s, and a role change reaches its open connections' change feeds. A
 * change made through the admin endpoints of A, or by `svc user …` with Redis, reaches B's identity
 * cache at once over the bus rather than within the cache's TTL (docs/deploy.md "Caches across instances").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Redis } from 'ioredis';
import { HubConnectionBuilder, HttpTransportType, LogLevel, type HubConnection } from '@microsoft/signalr';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { IDENTITY_CACHE_TTL_MS } from '../../dist/runtime/auth/identity-cache.js';
import { PrivateRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { deletedAndDisabledIdentitiesLoseTheirSockets, prepareForRevocation, roleChangesReachOpenConnections } from '../support/identity-revocation.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let redis: PrivateRedis;
let a: TestServer;
let b: TestServer;
let admin: Identity;
const hubs: HubConnection[] = [];

async function post(server: TestServer, path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(server.url + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/**
 * A started `@microsoft/signalr` connection of `who` that negotiates on `negotiateOn` and opens its
 * socket on `socketOn` (a load balancer without sticky sessions), with the events it received.
 */
async function hubAcross(who: Identity, negotiateOn: TestServer, socketOn: TestServer) {
  const info = await (await fetch(`${negotiateOn.url}/_rt/hub`, { headers: who.headers })).json();
  const from = new URL(negotiateOn.url).host;
  const to = new URL(socketOn.url).host;
  const opened: string[] = [];
  class Rerouted extends WebSocket {
    constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
      opened.push(url.replace(from, to));
      super(url.replace(from, to), protocols, options);
    }
  }
  const connection = new HubConnectionBuilder()
    .withUrl(info.url, { accessTokenFactory: () => info.accessToken, transport: HttpTransportType.WebSockets, WebSocket: Rerouted as never })
    .configureLogging(LogLevel.None)
    .build();
  hubs.push(connection);
  const messages: any[] = [];
  const changes: any[] = [];
  let closed: Error | undefined | null = null;
  connection.on('message', (m) => messages.push(m));
  connection.on('change', (n) => changes.push(n));
  connection.onclose((err) => (closed = err));
  await connection.start();
  expect(opened).toHaveLength(1);
  expect(opened[0]).toContain(to);
  return { connection, messages, changes, closed: () => closed };
}

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(SHOP, 'postgresql');
  prepareForRevocation(app.dir);
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  const env = { ...app.env, REDIS_URL: redis.url };
  a = await serve(app.dir, env);
  b = await serve(app.dir, env);
  admin = await adminIdentity(app, a.url);
});

afterAll(async () => {
  await Promise.all(hubs.map((h) => h.stop().catch(() => undefined)));
  await a?.close();
  await b?.close();
  await redis?.stop();
  await app?.cleanup();
});

describe('a hub connection negotiated on A whose socket opens on B', () => {
  it('is joined and listened to from A and from B, and receives what both send', async () => {
    const alice = await userIdentity(app, a.url, 'alice');
    const hub = await hubAcross(alice, a, b);
    const id = hub.connection.connectionId!;
    for (const server of [a, b]) {
      expect((await post(server, '/_rt/join', { connectionId: id, channel: 'crossed' }, alice)).status).toBe(200);
      expect((await post(server, '/Order/_listen', { connectionId: id, type: 'hub' }, alice)).status).toBe(200);
    }
    expect((await post(a, '/_rt/send', { channel: 'crossed', body: 'from A' }, alice)).status).toBe(200);
    expect((await post(b, '/_rt/send', { channel: 'crossed', body: 'from B' }, alice)).status).toBe(200);
    await waitFor(() => hub.messages.length >= 2);
    expect(hub.messages.map((m) => m.data).sort()).toEqual(['from A', 'from B']);
    const customer = (await post(a, '/Customer', { name: 'Ada', country: 'GB' }, admin)).json.data[0];
    const order = (await post(a, '/Order', { title: 'kettle', customer }, alice)).json.data[0];
    await waitFor(() => hub.changes.length > 0);
    expect(hub.changes).toEqual([{ action: 'POST', path: 'shop/Order', ids: [order] }]);
    // Ownership is still checked where the connection lives.
    const bob = await userIdentity(app, a.url, 'bob');
    expect((await post(a, '/_rt/join', { connectionId: id, channel: 'crossed' }, bob)).status).toBe(403);
    // Once the socket is gone, the connection is gone from both instances.
    await hub.connection.stop();
    await waitFor(async () => (await post(a, '/_rt/join', { connectionId: id, channel: 'crossed' }, alice)).status === 404);
    expect((await post(b, '/_rt/join', { connectionId: id, channel: 'crossed' }, alice)).status).toBe(404);
  });
});

describe('identities that change, on two instances', () => {
  it('deleting or disabling an identity closes its sockets on both instances within 5 s and refuses its reliable recovery', async () => {
    await deletedAndDisabledIdentitiesLoseTheirSockets(app, [a.url, b.url]);
  }, 60_000);

  it('a role change reaches its open connections on both instances within 5 s', async () => {
    await roleChangesReachOpenConnections(app, [a.url, b.url], admin);
  }, 60_000);
});

describe('the identity cache across instances', () => {
  /** ms from `change()` until `who`'s token is refused on `server`, its identity having just been looked up there. */
  async function refusedAfter(server: TestServer, who: Identity, change: () => Promise<void>): Promise<number> {
    expect((await fetch(`${server.url}/Order`, { headers: who.headers })).status).toBe(200); // cached on `server` now
    const started = Date.now();
    await change();
    await waitFor(async () => (await fetch(`${server.url}/Order`, { headers: who.headers })).status === 401, IDENTITY_CACHE_TTL_MS + 2000);
    return Date.now() - started;
  }

  it('forgets an identity disabled through the admin endpoints of another instance at once, not after its TTL', async () => {
    const carol = await userIdentity(app, a.url, 'carol');
    const id = (await (await fetch(`${a.url}/_me`, { headers: carol.headers })).json()).id as string;
    const ms = await refusedAfter(b, carol, async () => {
      const r = await fetch(`${a.url}/_admin/identities/${id}`, {
        method: 'PATCH',
        headers: { ...admin.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ disabled: true }),
      });
      expect(r.status).toBe(200);
    });
    expect(ms).toBeLessThan(IDENTITY_CACHE_TTL_MS / 2);
  });

  it('`svc user disable` announces the change on the app’s Redis bus, which the instances act on', async () => {
    const dave = await userIdentity(app, a.url, 'dave');
    const id = (await (await fetch(`${a.url}/_me`, { headers: dave.headers })).json()).id as string;
    const listener = new Redis(redis.url);
    const heard: unknown[] = [];
    try {
      listener.on('message', (_channel: string, text: string) => heard.push(JSON.parse(text).message));
      await listener.subscribe('svc:shop:rt:all');
      const r = await runCli(['user', 'disable', app.dir, '--username', 'dave'], { ...app.env, REDIS_URL: redis.url });
      expect(r.code, r.stderr).toBe(0);
      await waitFor(() => heard.some((m: any) => m.t === 'identity'));
      expect(heard.filter((m: any) => m.t === 'identity')).toEqual([{ t: 'identity', kind: 'user', id }]);
    } finally {
      listener.disconnect();
    }
    await waitFor(async () => (await fetch(`${b.url}/Order`, { headers: dave.headers })).status === 401, IDENTITY_CACHE_TTL_MS / 2); // at once: well before the TTL would have forgotten it
  });
});

describe('the bus under malformed messages', () => {
  it('ignores what is not a message it knows, and both instances go on serving', async () => {
    const publisher = new Redis(redis.url);
    try {
      const bodies = [
        'not json',
        'null',
        '[]',
        '42',
        '{"from":"x"}',
        '{"from":"x","message":null}',
        '{"from":"x","message":{"t":"identity","kind":5,"id":{}}}',
        '{"from":"x","message":{"t":"identity","kind":"user"}}',
        '{"from":"x","message":{"t":"change","change":null}}',
        '{"from":"x","message":{"t":"change","change":{"collection":"Order","ids":"x"}}}',
        '{"from":"x","message":{"t":"group","message":"x"}}',
        '{"from":"x","message":{"t":"call","topic":"connection","payload":null,"callId":1,"from":null}}',
        '{"from":"x","message":{"t":"reply","callId":{}}}',
        '{"from":"x","message":{"t":"unknown"}}',
        '{"from":"x","message":{"t":"change","change":{"collection":"Nope","action":"POST","ids":["1"],"lookupIds":[]}}}',
        '{"from":"x","message":{"t":"group","message":{"group":"shop:none","dataType":"json","data":{},"fromConnectionId":null,"fromUserId":null,"noEcho":false}}}',
        '{"from":"x","message":{"t":"call","callId":"c1","from":"x","topic":"connection","payload":null}}',
        '{"from":"x","message":{"t":"call","callId":"c2","from":"x","topic":"connection","payload":{"op":"listen","connectionId":5,"collection":{}}}}',
        '{"from":"x","message":{"t":"call","callId":"c3","from":"x","topic":"agent","payload":null}}',
        '{"from":"x","message":{"t":"call","callId":"c4","from":"x","topic":"agent","payload":{"op":[1]}}}',
        '{"from":"x","message":{"t":"call","callId":"c5","from":"x","topic":"nope","payload":1}}',
      ];
      for (const body of bodies) await publisher.publish('svc:shop:rt:all', body);
      // A message after them all is still handled: an identity change reaches B's cache at once.
      const erin = await userIdentity(app, a.url, 'erin');
      const id = (await (await fetch(`${a.url}/_me`, { headers: erin.headers })).json()).id as string;
      expect((await fetch(`${b.url}/Order`, { headers: erin.headers })).status).toBe(200);
      await runCli(['user', 'disable', app.dir, '--username', 'erin'], app.env); // no REDIS_URL: the command announces nothing
      await publisher.publish('svc:shop:rt:all', JSON.stringify({ from: 'test', message: { t: 'identity', kind: 'user', id } }));
      await waitFor(async () => (await fetch(`${b.url}/Order`, { headers: erin.headers })).status === 401, IDENTITY_CACHE_TTL_MS / 2); // at once: well before the TTL would have forgotten it
      for (const server of [a, b]) expect((await fetch(`${server.url}/_health`)).status).toBe(200);
    } finally {
      publisher.disconnect();
    }
  });
});
