/**
 * The Web PubSub endpoint and the real-time HTTP endpoints (SPEC §4.7, §6.1, §6.2; notes
 * realtime-protocols.md §1 and §4), driven by the real `@azure/web-pubsub-client` (1.0.4) against an
 * in-process server on SQLite with examples/shop: connect on both subprotocols, client joins and
 * sends (json, text, binary, noEcho), server-side joins and HTTP sends, the channel and `_listen`
 * rules, Duplicate acks, keep-alive, fresh reconnects, and recovery of a reliable connection whose TCP
 * socket died (same connection, every message once and in order).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pino } from 'pino';
import WebSocket from 'ws';
import { SignJWT } from 'jose';
import { WebPubSubClient, WebPubSubJsonProtocol, type WebPubSubClientOptions, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let server: RunningServer;
let base: string;
let admin: Identity;
let alice: Identity;
let bob: Identity;
const anonymous: Record<string, string> = {};

/** A started client and what it saw. */
interface Probe {
  client: WebPubSubClient;
  connected: { connectionId: string; userId: string | null }[];
  disconnected: number;
  messages: OnGroupDataMessageArgs['message'][];
  /** The current connection id. */
  id(): string;
}

const clients: WebPubSubClient[] = [];

/** Starts a client whose every (re)connect fetches a fresh one-time URL with `headers`. */
async function connect(headers: Record<string, string>, options: WebPubSubClientOptions = {}): Promise<Probe> {
  const client = new WebPubSubClient(
    {
      getClientAccessUrl: async () => {
        const r = await fetch(`${base}/_rt/ws`, { headers });
        expect(r.status).toBe(200);
        return (await r.json()).url;
      },
    },
    { messageRetryOptions: { maxRetries: 0 }, ...options },
  );
  clients.push(client);
  const probe: Probe = { client, connected: [], disconnected: 0, messages: [], id: () => probe.connected.at(-1)!.connectionId };
  client.on('connected', (e) => probe.connected.push({ connectionId: e.connectionId, userId: e.userId ?? null }));
  client.on('disconnected', () => (probe.disconnected += 1));
  client.on('group-message', (e) => probe.messages.push(e.message));
  await client.start();
  await waitFor(() => probe.connected.length > 0);
  return probe;
}

async function post(path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/** The `errorDetail.name` of a rejected client call (a SendMessageError), or "resolved". */
async function ackError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return (err as { errorDetail?: { name?: string } }).errorDetail?.name ?? String(err);
  }
}

/**
 * Sends `marker` over HTTP to `channel` and waits until `p` has it. A connection's messages arrive in
 * the order the server sent them, so anything sent to `p` before the marker has arrived by then: this is
 * how the tests show that something did NOT arrive, without sleeping.
 */
async function flush(p: Probe, channel: string, marker: string): Promise<void> {
  expect((await post('/_rt/send', { channel, body: marker }, admin.headers)).status).toBe(200);
  await waitFor(() => p.messages.some((m) => m.data === marker));
}

/** The server's socket of a Web PubSub connection (the session of wps.ts), or throws. */
function serverSocket(connectionId: string): WebSocket {
  const socket = (server.realtime.broker.get(connectionId)?.transport as unknown as { socket: WebSocket | null } | undefined)?.socket;
  if (!socket) throw new Error(`no socket for ${connectionId}`);
  return socket;
}

/** The data of the messages a probe got on `group`. */
const dataOn = (p: Probe, group: string) => p.messages.filter((m) => m.group === group).map((m) => m.data);

beforeAll(async () => {
  app = await prepareApp(SHOP, 'sqlite');
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  admin = await adminIdentity(app, base);
  alice = await userIdentity(app, base, 'alice');
  bob = await userIdentity(app, base, 'bob');
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.stop();
});

afterAll(async () => {
  for (const c of clients.splice(0)) c.stop();
  await server?.close();
  await app?.cleanup();
});

describe('connecting', () => {
  it('on the default reliable protocol and the plain JSON protocol, with connectionId and userId', async () => {
    const reliable = await connect(alice.headers);
    const plain = await connect(alice.headers, { protocol: WebPubSubJsonProtocol() });
    for (const p of [reliable, plain]) {
      expect(p.connected).toHaveLength(1);
      expect(p.connected[0].userId).toBe(alice.id);
      expect(server.realtime.broker.get(p.id())?.caller.id).toBe(alice.id);
    }
    expect(reliable.id()).not.toBe(plain.id());
  });

  it('without credentials: an anonymous connection that may not join channels', async () => {
    const anon = await connect(anonymous);
    expect(anon.connected[0].userId).toBeNull();
    expect(await ackError(anon.client.joinGroup('shop:chat'))).toBe('Forbidden');
    expect(await ackError(anon.client.sendToGroup('shop:chat', 'x', 'text'))).toBe('Forbidden');
    expect((await post('/_rt/join', { connectionId: anon.id(), channel: 'chat' }, anonymous)).status).toBe(401);
    expect((await post('/_rt/send', { channel: 'chat', body: 1 }, anonymous)).status).toBe(401);
  });
});

describe('client groups', () => {
  it('join, send json/text/binary with fromUserId, noEcho, leave', async () => {
    const a = await connect(alice.headers);
    const b = await connect(bob.headers, { protocol: WebPubSubJsonProtocol() });
    expect(await a.client.joinGroup('shop:chat')).toMatchObject({ isDuplicated: false });
    await b.client.joinGroup('shop:chat');
    await b.client.joinGroup('shop:mark');

    await a.client.sendToGroup('shop:chat', { n: 1, s: 'ü' }, 'json');
    await a.client.sendToGroup('shop:chat', 'hello', 'text');
    const bytes = Uint8Array.from([0, 1, 2, 254, 255, 128, 7]);
    await a.client.sendToGroup('shop:chat', bytes.buffer, 'binary');
    for (const p of [a, b]) await waitFor(() => dataOn(p, 'shop:chat').length === 3);
    for (const p of [a, b]) {
      const [json, text, bin] = p.messages.filter((m) => m.group === 'shop:chat');
      expect(json).toMatchObject({ dataType: 'json', data: { n: 1, s: 'ü' }, fromUserId: alice.id });
      expect(text).toMatchObject({ dataType: 'text', data: 'hello' });
      expect(bin.dataType).toBe('binary');
      expect(bin.data).toBeInstanceOf(ArrayBuffer);
      expect([...new Uint8Array(bin.data as ArrayBuffer)]).toEqual([...bytes]);
    }
    // The reliable client numbers its messages; the plain one gets none.
    expect(a.messages.map((m) => m.sequenceId)).toEqual([1, 2, 3]);
    expect(b.messages.every((m) => m.sequenceId === undefined)).toBe(true);

    // noEcho: the sender gets nothing, the peer gets it.
    await b.client.sendToGroup('shop:chat', 'quiet', 'text', { noEcho: true });
    await waitFor(() => dataOn(a, 'shop:chat').includes('quiet'));
    expect(a.messages.at(-1)!.fromUserId).toBe(bob.id);
    await flush(b, 'chat', 'after quiet');
    expect(dataOn(b, 'shop:chat')).not.toContain('quiet');

    // After leaving, nothing arrives.
    expect(await b.client.leaveGroup('shop:chat')).toMatchObject({ isDuplicated: false });
    await a.client.sendToGroup('shop:chat', 'after', 'text');
    await waitFor(() => dataOn(a, 'shop:chat').includes('after'));
    await flush(b, 'mark', 'after leaving');
    expect(dataOn(b, 'shop:chat')).not.toContain('after');
  });

  it('the same explicit ackId twice: the second is a Duplicate', async () => {
    const a = await connect(alice.headers);
    expect(await a.client.joinGroup('shop:dup', { ackId: 4242 })).toEqual({ ackId: 4242, isDuplicated: false });
    expect(await a.client.joinGroup('shop:dup', { ackId: 4242 })).toEqual({ ackId: 4242, isDuplicated: true });
    expect(await a.client.sendToGroup('shop:dup', 'x', 'text', { ackId: 4243 })).toEqual({ ackId: 4243, isDuplicated: false });
    expect(await a.client.sendToGroup('shop:dup', 'x', 'text', { ackId: 4243 })).toEqual({ ackId: 4243, isDuplicated: true });
    // The duplicate was not delivered again.
    await flush(a, 'dup', 'end');
    expect(dataOn(a, 'shop:dup')).toEqual(['x', 'end']);
  });

  it('private channels and collection names are refused on the socket', async () => {
    const a = await connect(admin.headers);
    for (const group of ['shop:a:b', 'shop:Order', 'other:chat', 'chat']) {
      expect(await ackError(a.client.joinGroup(group))).toBe('Forbidden');
      expect(await ackError(a.client.sendToGroup(group, 'x', 'text'))).toBe('Forbidden');
    }
  });
});

describe('HTTP join and send', () => {
  it('_rt/join then _rt/send: a group-message on shop:chat', async () => {
    const a = await connect(alice.headers);
    expect(await post('/_rt/join', { connectionId: a.id(), channel: 'chat' }, alice.headers)).toEqual({ status: 200, json: { group: 'shop:chat' } });
    expect(await post('/_rt/send', { channel: 'chat', body: { hi: [1, 2] } }, bob.headers)).toEqual({ status: 200, json: { group: 'shop:chat' } });
    await waitFor(() => a.messages.length === 1);
    expect(a.messages[0]).toMatchObject({ group: 'shop:chat', dataType: 'json', data: { hi: [1, 2] }, fromUserId: bob.id });
  });

  it('a user joins only its own connection; an admin any; an unknown one is 404', async () => {
    const a = await connect(alice.headers);
    const other = await post('/_rt/join', { connectionId: a.id(), channel: 'chat' }, bob.headers);
    expect(other.status).toBe(403);
    expect(other.json.code).toBe('FORBIDDEN');
    expect((await post('/_rt/join', { connectionId: a.id(), channel: 'chat' }, admin.headers)).status).toBe(200);
    expect(server.realtime.broker.get(a.id())!.groups.has('shop:chat')).toBe(true);
    const unknown = await post('/_rt/join', { connectionId: `${server.realtime.instanceId}.nope`, channel: 'chat' }, alice.headers);
    expect(unknown.status).toBe(404);
    expect((await post('/_rt/join', { connectionId: 'garbage', channel: 'chat' }, alice.headers)).status).toBe(404);
  });

  it('private channels and collection names are 400 over HTTP, admins too', async () => {
    const a = await connect(admin.headers);
    for (const channel of ['a:b', 'Order', '', 5]) {
      for (const [path, body] of [
        ['/_rt/join', { connectionId: a.id(), channel }],
        ['/_rt/send', { channel, body: 1 }],
      ] as const) {
        const r = await post(path, body, admin.headers);
        expect(r.status, `${path} ${JSON.stringify(channel)}`).toBe(400);
        expect(r.json.code).toBe('INVALID_PARAMETER');
      }
    }
    expect((await post('/_rt/send', { channel: 'chat' }, admin.headers)).status).toBe(400);
  });

  it('a receive-only join (admin, readOnly) refuses the client send to that group', async () => {
    const a = await connect(alice.headers);
    expect((await post('/_rt/join', { connectionId: a.id(), channel: 'news', readOnly: true }, admin.headers)).status).toBe(200);
    expect(await ackError(a.client.sendToGroup('shop:news', 'x', 'text'))).toBe('Forbidden');
    // Joining on the socket keeps it receive-only; the group still delivers.
    await a.client.joinGroup('shop:news');
    expect(await ackError(a.client.sendToGroup('shop:news', 'x', 'text'))).toBe('Forbidden');
    await post('/_rt/send', { channel: 'news', body: 'extra' }, admin.headers);
    await waitFor(() => dataOn(a, 'shop:news').includes('extra'));
    expect(dataOn(a, 'shop:news')).toEqual(['extra']);
  });
});

describe('_listen', () => {
  it('Order (LISTEN rule): a user listens and gets change notifications; entity groups are receive-only', async () => {
    const a = await connect(alice.headers);
    expect(await post('/Order/_listen', { connectionId: a.id(), type: 'ws' }, alice.headers)).toEqual({ status: 200, json: { group: 'shop:Order' } });
    const customer = (await post('/Customer', { name: 'Ada', country: 'GB' }, alice.headers)).json.data[0];
    const order = await post('/Order', { title: 'o1', customer: { id: customer } }, alice.headers);
    expect(order.status).toBe(201);
    await waitFor(() => a.messages.length === 1);
    expect(a.messages[0]).toMatchObject({ group: 'shop:Order', dataType: 'json', data: { action: 'POST', path: 'shop/Order', ids: order.json.data } });
    expect(await ackError(a.client.sendToGroup('shop:Order', { forged: true }, 'json'))).toBe('Forbidden');
    // The wrong connection type is refused.
    expect((await post('/Order/_listen', { connectionId: a.id(), type: 'hub' }, alice.headers)).status).toBe(400);
  });

  it('refuses collections without a LISTEN rule (admins too), views, queries and bad bodies', async () => {
    const a = await connect(admin.headers);
    for (const name of ['Customer', 'Product', 'OrderLine']) {
      expect((await post(`/${name}/_listen`, { connectionId: a.id(), type: 'ws' }, admin.headers)).status, name).toBe(403);
    }
    for (const name of ['OpenOrders', 'CustomerRevenue']) {
      const r = await post(`/${name}/_listen`, { connectionId: a.id(), type: 'ws' }, admin.headers);
      expect(r.status, name).toBe(400);
      expect(r.json.code).toBe('LISTEN_ON_VIEW');
    }
    expect((await post('/Nope/_listen', { connectionId: a.id(), type: 'ws' }, admin.headers)).status).toBe(404);
    for (const body of [
      { type: 'ws' },
      { connectionId: a.id() },
      { connectionId: a.id(), type: 'sse' },
      { connectionId: a.id(), type: 'ws', id: 'not-a-guid' },
      { connectionId: a.id(), type: 'ws', lookupIds: ['x'] },
      [a.id()],
    ]) {
      expect((await post('/Order/_listen', body, admin.headers)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await post('/Order/_listen', { connectionId: a.id(), type: 'ws' }, anonymous)).status).toBe(401);
  });
});

describe('keep-alive and reconnects', () => {
  it.each([
    ['plain', { protocol: WebPubSubJsonProtocol() }],
    ['reliable', {}],
  ])('keep-alive on the %s protocol: pings get pongs, an idle client with a 1 s timeout keeps its socket', async (_kind, protocol) => {
    const a = await connect(alice.headers, { ...protocol, keepAliveIntervalInMs: 200, keepAliveTimeoutInMs: 1000 });
    await a.client.joinGroup('shop:idle');
    const socket = serverSocket(a.id());
    let pings = 0;
    socket.on('message', (data) => (pings += JSON.parse(String(data)).type === 'ping' ? 1 : 0));
    await new Promise((r) => setTimeout(r, 2500));
    expect(pings).toBeGreaterThanOrEqual(5);
    // Neither reconnected nor recovered: the server still writes to the first socket.
    expect(a.connected).toHaveLength(1);
    expect(a.disconnected).toBe(0);
    expect(serverSocket(a.id()) === socket).toBe(true);
    await post('/_rt/send', { channel: 'idle', body: 'still here' }, bob.headers);
    await waitFor(() => dataOn(a, 'shop:idle').includes('still here'));
  });

  it.each([
    ['plain', 1011],
    ['reliable', 1008],
  ])('a %s connection closed by the server (%i) reconnects afresh with a new id and rejoins', async (kind, code) => {
    const a = await connect(alice.headers, kind === 'plain' ? { protocol: WebPubSubJsonProtocol() } : {});
    await a.client.joinGroup('shop:again');
    const first = a.id();
    server.realtime.broker.get(first)!.transport.close(code, 'test');
    await waitFor(() => a.connected.length === 2, 3000);
    expect(a.id()).not.toBe(first);
    expect(server.realtime.broker.get(first)).toBeUndefined();
    // The client rejoined its own group.
    await post('/_rt/send', { channel: 'again', body: 'back' }, bob.headers);
    await waitFor(() => dataOn(a, 'shop:again').includes('back'));
  });

  it('a used, garbage, expired or wrong-purpose token is refused at the upgrade with 401', async () => {
    const url = (await (await fetch(`${base}/_rt/ws`, { headers: alice.headers })).json()).url as string;
    const first = await rawOpen(url);
    first.close();
    expect(await rawRefusal(url)).toBe(401);
    const u = new URL(url);
    u.searchParams.set('access_token', 'garbage');
    expect(await rawRefusal(u.toString())).toBe(401);
    const auth = server.realtime.auth;
    const sign = (pur: string, exp: number) =>
      new SignJWT({ pur, kind: 'user' })
        .setProtectedHeader({ alg: 'EdDSA', kid: auth.keys.kid, typ: 'rt+jwt' })
        .setIssuer(auth.issuer)
        .setAudience(`${auth.issuer}:rt`)
        .setSubject(alice.id)
        .setJti(crypto.randomUUID())
        .setExpirationTime(exp)
        .sign(auth.keys.privateKey);
    const now = Math.floor(Date.now() / 1000);
    u.searchParams.set('access_token', await sign('ws', now - 60));
    expect(await rawRefusal(u.toString())).toBe(401);
    u.searchParams.set('access_token', await sign('hub', now + 60));
    expect(await rawRefusal(u.toString())).toBe(401);
    // The control: a well-signed fresh one is accepted.
    u.searchParams.set('access_token', await sign('ws', now + 60));
    (await rawOpen(u.toString())).close();
  });
});

describe('reliable recovery', () => {
  it('a dead TCP socket: the same connection resumes with its groups and every message once, in order', async () => {
    const a = await connect(alice.headers);
    await a.client.joinGroup('shop:feed');
    expect((await post('/_rt/join', { connectionId: a.id(), channel: 'side' }, alice.headers)).status).toBe(200);
    const id = a.id();
    const before = serverSocket(id);
    const total = 60;
    for (let n = 0; n < total; n++) {
      if (n === 20) {
        // The socket dies without a close frame, as on a network drop.
        serverSocket(id).terminate();
      }
      expect((await post('/_rt/send', { channel: 'feed', body: n }, bob.headers)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 10));
    }
    await waitFor(() => dataOn(a, 'shop:feed').length >= total, 8000);
    await flush(a, 'feed', 'end');
    expect(dataOn(a, 'shop:feed')).toEqual([...Array.from({ length: total }, (_, n) => n), 'end']);
    const seqs = a.messages.map((m) => m.sequenceId!);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // Recovered, not reconnected: no second `connected`, the server still holds the same connection.
    expect(a.connected).toHaveLength(1);
    expect(server.realtime.broker.get(id)?.groups.has('shop:side')).toBe(true);
    expect(serverSocket(id) === before).toBe(false);
    await post('/_rt/send', { channel: 'side', body: 'side' }, bob.headers);
    await waitFor(() => dataOn(a, 'shop:side').includes('side'));
  });

  it('a half-open socket (the client gave up, the server did not see it): recovery takes over', async () => {
    const a = await connect(alice.headers);
    await a.client.joinGroup('shop:half');
    const id = a.id();
    const stale = serverSocket(id);
    // The server's old socket stops reading from the kernel, so it never sees the client drop it.
    (stale as unknown as { _socket: { _handle: { readStop(): void } } })._socket._handle.readStop();
    (a.client as unknown as { _wsClient: { _socket: { _socket: { destroy(): void } } } })._wsClient._socket._socket.destroy();
    await waitFor(() => serverSocket(id) !== stale, 3000);
    await post('/_rt/send', { channel: 'half', body: 'after' }, bob.headers);
    await waitFor(() => dataOn(a, 'shop:half').includes('after'));
    expect(a.connected).toHaveLength(1);
  });

  it('a wrong token leaves a waiting session alone; the right one resumes it and replays', async () => {
    const url = (await (await fetch(`${base}/_rt/ws`, { headers: alice.headers })).json()).url as string;
    const raw = new WebSocket(url, SUBPROTOCOL);
    const hello = await new Promise<{ connectionId: string; reconnectionToken: string }>((ok) => raw.once('message', (d) => ok(JSON.parse(String(d)))));
    expect((await post('/_rt/join', { connectionId: hello.connectionId, channel: 'raw' }, alice.headers)).status).toBe(200);
    raw.terminate();
    await waitFor(() => !(server.realtime.broker.get(hello.connectionId)!.transport as unknown as { socket: unknown }).socket);
    await post('/_rt/send', { channel: 'raw', body: 'while away' }, bob.headers);
    const recovery = `${base.replace(/^http/, 'ws')}/_rt/client?awps_connection_id=${encodeURIComponent(hello.connectionId)}&awps_reconnection_token=`;
    expect(await rawCloseCode(`${recovery}wrong`)).toBe(1008);
    expect(server.realtime.broker.get(hello.connectionId)).toBeDefined();
    const back = new WebSocket(recovery + encodeURIComponent(hello.reconnectionToken), SUBPROTOCOL);
    const replayed = await new Promise<any>((ok) => back.once('message', (d) => ok(JSON.parse(String(d)))));
    expect(replayed).toMatchObject({ type: 'message', group: 'shop:raw', data: 'while away', sequenceId: 1 });
    back.close();
  });

  it('a recovery with a wrong reconnection token is accepted and closed with 1008', async () => {
    const a = await connect(alice.headers);
    const url = `${base.replace(/^http/, 'ws')}/_rt/client?awps_connection_id=${encodeURIComponent(a.id())}&awps_reconnection_token=wrong`;
    expect(await rawCloseCode(url)).toBe(1008);
    const unknown = `${base.replace(/^http/, 'ws')}/_rt/client?awps_connection_id=nope&awps_reconnection_token=x`;
    expect(await rawCloseCode(unknown)).toBe(1008);
    // The live connection is untouched.
    expect(server.realtime.broker.get(a.id())).toBeDefined();
    await a.client.joinGroup('shop:untouched');
  });
});

const SUBPROTOCOL = 'json.reliable.webpubsub.azure.v1';

/** Opens a raw socket and waits for its `connected` frame. */
function rawOpen(url: string): Promise<WebSocket> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, SUBPROTOCOL);
    ws.once('message', () => ok(ws));
    ws.once('error', fail);
  });
}

/** The HTTP status a refused upgrade answered. */
function rawRefusal(url: string): Promise<number> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, SUBPROTOCOL);
    ws.once('unexpected-response', (_req, res) => {
      ok(res.statusCode!);
      res.resume();
    });
    ws.once('open', () => fail(new Error('the upgrade was accepted')));
    ws.once('error', () => {});
  });
}

/** Opens a raw socket and resolves with the close code the server sends. */
function rawCloseCode(url: string): Promise<number> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, SUBPROTOCOL);
    ws.once('close', (code) => ok(code));
    ws.once('unexpected-response', (_req, res) => fail(new Error(`refused with ${res.statusCode}`)));
    ws.once('error', () => {});
  });
}
