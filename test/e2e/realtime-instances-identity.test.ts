/**
 * Two `svc serve` instances of examples/shop on one PostgreSQL database and a private Redis (issue 20
 * §4, DESIGN §6): a SignalR connection negotiated on A whose socket opens on B works from both
 * instances (`_listen`, `_rt/join`); deleting or disabling an identity with the CLI closes its sockets
 * on both instances within 5 s, and a role change reaches its open connections' change feeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import WebSocket from 'ws';
import { HubConnectionBuilder, HttpTransportType, LogLevel, type HubConnection } from '@microsoft/signalr';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
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
