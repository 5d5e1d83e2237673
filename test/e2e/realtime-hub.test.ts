/**
 * The hub with the real `@microsoft/signalr` client (SPEC §4.7, §6.1, §6.2; DESIGN §4 "Real-time
 * details"; notes realtime-protocols.md §2, §4 "SignalR client"): `GET /api/_rt/hub` → negotiate →
 * handshake; `_rt/join` with the negotiated connection id and `_rt/send` reach the client's `message`
 * event; `_listen` with type `hub` delivers `change` events; hub methods `join`/`send` answer
 * completions (an error one for a private channel); the redirect form (`withUrl(<base>/api/_rt/hub)`)
 * and `skipNegotiation` both connect; the server's fixed-interval pings keep a client with a short
 * server timeout alive; automatic reconnect after the server drops the socket gets a new id; a bad
 * token fails `start()`; the server's shutdown closes the client with an error.
 * In-process server on SQLite with examples/shop and `realtime.keepAliveSeconds` 0.3.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { HubConnectionBuilder, HttpTransportType, LogLevel, type HubConnection } from '@microsoft/signalr';
import { prepareApp, runCli, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let server: RunningServer;
let base: string;
let alice: Identity;
let admin: Identity;
const connections: HubConnection[] = [];

async function hubInfo(who: Identity): Promise<{ url: string; accessToken: string }> {
  const r = await fetch(`${base}/_rt/hub`, { headers: who.headers });
  expect(r.status).toBe(200);
  return r.json();
}

/** A started hub connection of `who` with a short server timeout (the server pings every 0.3 s). */
async function connect(who: Identity, configure: (b: HubConnectionBuilder) => HubConnectionBuilder = (b) => b): Promise<HubConnection> {
  const info = await hubInfo(who);
  const connection = configure(new HubConnectionBuilder().withUrl(info.url, { accessTokenFactory: () => info.accessToken }))
    .withServerTimeout(2000)
    .withKeepAliveInterval(500)
    .configureLogging(LogLevel.None)
    .build();
  connections.push(connection);
  await connection.start();
  return connection;
}

async function post(path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

beforeAll(async () => {
  app = await prepareApp(SHOP, 'sqlite');
  const settings = JSON.parse(readFileSync(join(app.dir, 'svc.json'), 'utf8'));
  writeFileSync(join(app.dir, 'svc.json'), JSON.stringify({ ...settings, realtime: { keepAliveSeconds: 0.3 } }));
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  admin = await adminIdentity(app, base);
  alice = await userIdentity(app, base, 'alice');
});

afterAll(async () => {
  await Promise.all(connections.map((c) => c.stop()));
  await server?.close();
  await app?.cleanup();
});

describe('hub', () => {
  it('connects; _rt/join + _rt/send reach the message event; _listen delivers change events', async () => {
    const connection = await connect(alice);
    expect(connection.connectionId).toMatch(/\./);
    const messages: unknown[] = [];
    const changes: unknown[] = [];
    connection.on('message', (m) => {
      messages.push(m);
    });
    connection.on('change', (n) => {
      changes.push(n);
    });
    expect(await post('/_rt/join', { connectionId: connection.connectionId, channel: 'chat' }, alice)).toEqual({ status: 200, json: { group: 'shop:chat' } });
    expect((await post('/_rt/send', { channel: 'chat', body: { hi: 1 } }, alice)).status).toBe(200);
    await waitFor(() => messages.length > 0);
    expect(messages).toEqual([{ channel: 'chat', data: { hi: 1 }, dataType: 'json', fromUserId: alice.id }]);

    expect((await post('/Order/_listen', { connectionId: connection.connectionId, type: 'hub' }, alice)).status).toBe(200);
    expect((await post('/Order/_listen', { connectionId: connection.connectionId, type: 'ws' }, alice)).status).toBe(400);
    const customer = (await post('/Customer', { name: 'Ada', country: 'GB' }, admin)).json.data[0];
    const order = (await post('/Order', { title: 'kettle', customer }, alice)).json.data[0];
    await waitFor(() => changes.length > 0);
    expect(changes).toEqual([{ action: 'POST', path: 'shop/Order', ids: [order] }]);
  });

  it('hub methods join, send and leave answer completions; a private channel is an error completion; send() gets no reply', async () => {
    const a = await connect(alice);
    const b = await connect(alice);
    const got: unknown[] = [];
    b.on('message', (m) => {
      got.push(m);
    });
    expect(await a.invoke('join', 'room')).toBeNull();
    expect(await b.invoke('JOIN', 'room')).toBeNull();
    expect(await a.invoke('send', 'room', 'one')).toBeNull();
    await a.send('send', 'room', 'two');
    await waitFor(() => got.length === 2);
    expect(got.map((m) => (m as { data: unknown }).data)).toEqual(['one', 'two']);
    await expect(a.invoke('join', 'secret:1')).rejects.toThrow(/private/);
    await expect(a.invoke('join', 'Order')).rejects.toThrow(/collection/);
    await expect(a.invoke('nope')).rejects.toThrow(/Unknown hub method/);
    expect(await b.invoke('leave', 'room')).toBeNull();
    await a.invoke('send', 'room', 'three');
    // A round trip on b proves 'three' would have arrived by now.
    await b.invoke('join', 'other');
    expect(got).toHaveLength(2);
  });

  it('a caller may join only its own hub connection; admins any', async () => {
    const bob = await userIdentity(app, base, 'bob');
    const connection = await connect(alice);
    expect((await post('/_rt/join', { connectionId: connection.connectionId, channel: 'chat' }, bob)).status).toBe(403);
    expect((await post('/_rt/join', { connectionId: connection.connectionId, channel: 'chat' }, admin)).status).toBe(200);
  });

  it('the redirect form and skipNegotiation both connect', async () => {
    const redirected = new HubConnectionBuilder()
      .withUrl(`${base}/_rt/hub`, { accessTokenFactory: () => alice.token })
      .configureLogging(LogLevel.None)
      .build();
    connections.push(redirected);
    await redirected.start();
    expect(redirected.connectionId).toMatch(/\./);
    expect(await redirected.invoke('join', 'chat')).toBeNull();

    const info = await hubInfo(alice);
    const direct = new HubConnectionBuilder()
      .withUrl(info.url, { skipNegotiation: true, transport: HttpTransportType.WebSockets, accessTokenFactory: () => info.accessToken })
      .configureLogging(LogLevel.None)
      .build();
    connections.push(direct);
    await direct.start();
    expect(direct.connectionId).toBeNull();
    expect(await direct.invoke('join', 'chat')).toBeNull();
  });

  it('pings keep a client with a 2 s server timeout connected through idle seconds', async () => {
    const connection = await connect(alice);
    let closed = false;
    connection.onclose(() => (closed = true));
    await new Promise((r) => setTimeout(r, 3500));
    expect(closed).toBe(false);
    expect(await connection.invoke('join', 'still-here')).toBeNull();
  });

  it('reconnects automatically with a new connection id after the server drops the socket', async () => {
    const connection = await connect(alice, (b) => b.withAutomaticReconnect([0, 100, 200]));
    const first = connection.connectionId!;
    let reconnected = '';
    connection.onreconnected((id) => (reconnected = id ?? ''));
    const transport = server.realtime.broker.get(first)!.transport as unknown as { socket: { terminate(): void } };
    transport.socket.terminate();
    await waitFor(() => reconnected, 5000);
    expect(reconnected).not.toBe(first);
    expect(server.realtime.broker.get(first)).toBeUndefined();
    const got: unknown[] = [];
    connection.on('message', (m) => {
      got.push(m);
    });
    expect((await post('/_rt/join', { connectionId: reconnected, channel: 'again' }, alice)).status).toBe(200);
    await post('/_rt/send', { channel: 'again', body: 'back' }, alice);
    await waitFor(() => got.length > 0);
  });

  it('refuses a bad token at negotiate and at the socket', async () => {
    const bad = new HubConnectionBuilder()
      .withUrl(`${base}/_rt/signalr`, { accessTokenFactory: () => 'not-a-token' })
      .configureLogging(LogLevel.None)
      .build();
    await expect(bad.start()).rejects.toThrow(/401/);
    const negotiate = await fetch(`${base}/_rt/signalr/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}` } });
    expect(negotiate.status).toBe(401);
    // A hub connection token is single-use.
    const info = await hubInfo(alice);
    const body = await (
      await fetch(`${info.url}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${info.accessToken}` } })
    ).json();
    expect(body).toMatchObject({ negotiateVersion: 1, availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text'] }] });
    const { default: WebSocket } = await import('ws');
    const open = () =>
      new Promise<number>((ok) => {
        const ws = new WebSocket(`${info.url.replace('http', 'ws')}?id=${body.connectionToken}`);
        ws.on('open', () => {
          ws.close();
          ok(101);
        });
        ws.on('unexpected-response', (_req, res) => ok(res.statusCode ?? 0));
        ws.on('error', () => {});
      });
    expect(await open()).toBe(101);
    expect(await open()).toBe(401);
  });

  it("the server's shutdown closes the client with an error that allows reconnecting", async () => {
    // A server of its own, so the others keep running.
    const own = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
    const info = await (await fetch(`${own.url}/_rt/hub`, { headers: alice.headers })).json();
    const connection = new HubConnectionBuilder()
      .withUrl(info.url, { accessTokenFactory: () => info.accessToken })
      .configureLogging(LogLevel.None)
      .build();
    await connection.start();
    let error: Error | undefined;
    const closed = new Promise<void>((ok) =>
      connection.onclose((e) => {
        error = e;
        ok();
      }),
    );
    await own.close();
    await closed;
    expect(error?.message).toMatch(/server shutting down/);
  });
});
