/**
 * The Web PubSub endpoint under bad input and hostile clients (SPEC §4.7; DESIGN §6; notes
 * realtime-protocols.md §1.1, §1.5): raw `ws` clients on `json.webpubsub.azure.v1` send invalid JSON,
 * binary frames, unknown types, oversized frames and floods, and get the close codes of the emulator;
 * an upgrade without our subprotocol is refused; a client that stops reading is dropped once its send
 * buffer is over `sendBufferBytes` while the others keep receiving; SIGTERM on `svc serve` closes
 * every socket with 1001 and exits 0. The server keeps serving the other connections throughout.
 * In-process server on SQLite with examples/shop and small `realtime` limits in its svc.json.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import WebSocket from 'ws';
import { WebPubSubClient, WebPubSubJsonProtocol, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { prepareApp, runCli, serve, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');
const PLAIN = 'json.webpubsub.azure.v1';
const LIMITS = { maxFrameBytes: 4096, maxMessagesPerSecond: 50, sendBufferBytes: 64 * 1024 };

let app: PreparedApp;
let server: RunningServer;
let base: string;
let alice: Identity;
let bob: Identity;
/** An official client in `shop:watch` for the whole file: it must outlive every hostile one. */
let watcher: WebPubSubClient;
const watched: OnGroupDataMessageArgs['message'][] = [];

/** A raw socket with the frames it got and its close code. */
interface Raw {
  ws: WebSocket;
  frames: any[];
  connectionId: string;
  closed: Promise<number>;
}

/** Opens a raw socket on `apiBase` through a fresh one-time URL and waits for `connected`. */
async function raw(headers: Record<string, string>, apiBase = base): Promise<Raw> {
  const url = (await (await fetch(`${apiBase}/_rt/ws`, { headers })).json()).url as string;
  const ws = new WebSocket(url, PLAIN);
  const frames: any[] = [];
  const closed = new Promise<number>((ok, fail) => {
    ws.once('close', (code) => ok(code));
    // A socket the server should close but does not fails its test here, not at the test timeout.
    setTimeout(() => fail(new Error('the socket was not closed within 10 s')), 10_000).unref();
  });
  closed.catch(() => {});
  ws.on('message', (d) => frames.push(JSON.parse(String(d))));
  ws.on('error', () => {});
  await waitFor(() => frames.length > 0);
  expect(frames[0]).toMatchObject({ type: 'system', event: 'connected' });
  return { ws, frames, connectionId: frames[0].connectionId, closed };
}

async function post(path: string, body: unknown, headers: Record<string, string>): Promise<number> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await r.arrayBuffer();
  return r.status;
}

/** Proves the server still serves: a message sent over HTTP reaches the watcher. */
async function stillServing(tag: string): Promise<void> {
  expect(await post('/_rt/send', { channel: 'watch', body: tag }, bob.headers)).toBe(200);
  await waitFor(() => watched.some((m) => m.data === tag));
}

beforeAll(async () => {
  app = await prepareApp(SHOP, 'sqlite');
  const settings = JSON.parse(readFileSync(join(app.dir, 'svc.json'), 'utf8'));
  writeFileSync(join(app.dir, 'svc.json'), JSON.stringify({ ...settings, realtime: LIMITS }));
  // The server reads the generated manifest: generate again for the new limits.
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  expect(server.realtime.limits).toMatchObject(LIMITS);
  alice = await userIdentity(app, base, 'alice');
  bob = await userIdentity(app, base, 'bob');
  watcher = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: alice.headers })).json()).url },
    { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
  );
  watcher.on('group-message', (e) => watched.push(e.message));
  await watcher.start();
  await watcher.joinGroup('shop:watch');
});

afterAll(async () => {
  watcher?.stop();
  await server?.close();
  await app?.cleanup();
});

describe('bad frames', () => {
  it('invalid JSON closes 1007, a binary frame 1003, a JSON non-object 1007', async () => {
    const a = await raw(alice.headers);
    a.ws.send('{"type":"joinGroup",');
    expect(await a.closed).toBe(1007);
    const b = await raw(alice.headers);
    b.ws.send(Buffer.from('{"type":"ping"}'), { binary: true });
    expect(await b.closed).toBe(1003);
    const c = await raw(alice.headers);
    c.ws.send('[1,2]');
    expect(await c.closed).toBe(1007);
    await stillServing('after bad frames');
  });

  it('an unknown type with an ackId gets an error ack; without one it closes 1007; a bad ackId closes 1007', async () => {
    const a = await raw(alice.headers);
    a.ws.send(JSON.stringify({ type: 'teleport', ackId: 7 }));
    await waitFor(() => a.frames.find((f) => f.type === 'ack'));
    expect(a.frames.find((f) => f.type === 'ack')).toMatchObject({ ackId: 7, success: false, error: { name: 'BadRequest' } });
    // Still open: a ping is answered.
    a.ws.send('{"type":"ping"}');
    await waitFor(() => a.frames.some((f) => f.type === 'pong'));
    a.ws.send(JSON.stringify({ type: 'teleport' }));
    expect(await a.closed).toBe(1007);
    const b = await raw(alice.headers);
    b.ws.send(JSON.stringify({ type: 'joinGroup', group: 'shop:x', ackId: -1 }));
    expect(await b.closed).toBe(1007);
  });

  it('bad sendToGroup data gets a BadRequest ack and the connection stays', async () => {
    const a = await raw(alice.headers);
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', ackId: 1, dataType: 'binary', data: 'not base64!' }));
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', ackId: 2, dataType: 'text', data: 5 }));
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', ackId: 3, dataType: 'xml', data: '<a/>' }));
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', ackId: 4, dataType: 'json', data: null }));
    await waitFor(() => a.frames.filter((f) => f.type === 'ack').length === 4);
    for (const ack of a.frames.filter((f) => f.type === 'ack')) expect(ack).toMatchObject({ success: false, error: { name: 'BadRequest' } });
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', ackId: 5, dataType: 'text', data: 'fine' }));
    await waitFor(() => watched.some((m) => m.data === 'fine'));
    a.ws.close();
  });

  it(`a frame over maxFrameBytes (${LIMITS.maxFrameBytes}) closes 1009`, async () => {
    const a = await raw(alice.headers);
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:watch', dataType: 'text', data: 'x'.repeat(LIMITS.maxFrameBytes) }));
    expect(await a.closed).toBe(1009);
    expect(watched.some((m) => typeof m.data === 'string' && m.data.length >= LIMITS.maxFrameBytes)).toBe(false);
    await stillServing('after a big frame');
  });

  it(`a flood over maxMessagesPerSecond (${LIMITS.maxMessagesPerSecond}) closes 1008; a steady client is not flooded`, async () => {
    const a = await raw(alice.headers);
    for (let i = 0; i < 5 * LIMITS.maxMessagesPerSecond; i++) a.ws.send('{"type":"ping"}');
    expect(await a.closed).toBe(1008);
    // Well under the rate: every ping is answered and the socket stays.
    const b = await raw(alice.headers);
    for (let i = 0; i < 20; i++) {
      b.ws.send('{"type":"ping"}');
      await new Promise((r) => setTimeout(r, 40));
    }
    await waitFor(() => b.frames.filter((f) => f.type === 'pong').length === 20);
    expect(b.ws.readyState).toBe(WebSocket.OPEN);
    b.ws.close();
    await stillServing('after a flood');
  });

  it('an upgrade without our subprotocol is refused with 400', async () => {
    for (const protocols of [[], ['chat'], ['json.webpubsub.azure.v2']]) {
      const url = (await (await fetch(`${base}/_rt/ws`, { headers: alice.headers })).json()).url as string;
      const status = await new Promise<number>((ok, fail) => {
        const ws = new WebSocket(url, protocols);
        ws.once('unexpected-response', (_req, res) => {
          ok(res.statusCode!);
          res.resume();
        });
        ws.once('open', () => fail(new Error(`accepted ${JSON.stringify(protocols)}`)));
        ws.once('error', () => {});
      });
      expect(status, JSON.stringify(protocols)).toBe(400);
    }
    await stillServing('after refused upgrades');
  });
});

describe('slow reader', () => {
  it('a client that stops reading is dropped and counted; the other members keep receiving everything', async () => {
    const slow = await raw(alice.headers);
    slow.ws.send(JSON.stringify({ type: 'joinGroup', group: 'shop:firehose', ackId: 1 }));
    await waitFor(() => slow.frames.some((f) => f.type === 'ack' && f.success));
    const fast = await raw(bob.headers);
    fast.ws.send(JSON.stringify({ type: 'joinGroup', group: 'shop:firehose', ackId: 1 }));
    await waitFor(() => fast.frames.some((f) => f.type === 'ack' && f.success));
    const session = server.realtime.broker.get(slow.connectionId)!.transport as unknown as { socket: WebSocket };
    const serverSide = session.socket;
    const serverClosed = new Promise<void>((ok) => serverSide.once('close', () => ok()));
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();

    const before = server.realtime.broker.stats().slowDropped;
    const rssBefore = process.memoryUsage().rss;
    const chunk = 'y'.repeat(60 * 1024);
    const total = 400; // 24 MB: more than loopback's kernel buffers take
    let sentWhenDropped = -1;
    for (let n = 0; n < total; n++) {
      expect(await post('/_rt/send', { channel: 'firehose', body: { n, chunk } }, bob.headers)).toBe(200);
      if (sentWhenDropped < 0 && !server.realtime.broker.get(slow.connectionId)) sentWhenDropped = n + 1;
    }
    // Dropped during the flood, counted, and its socket ends (terminated if it never reads the close).
    expect(sentWhenDropped).toBeGreaterThan(0);
    expect(sentWhenDropped).toBeLessThan(total);
    expect(server.realtime.broker.stats().slowDropped).toBe(before + 1);
    await serverClosed;
    // Nothing was queued for it past the bound: the process did not grow by the 24 MB it was sent.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);

    // The reading member got every message, in order.
    await waitFor(() => fast.frames.filter((f) => f.type === 'message').length === total, 15000);
    expect(fast.frames.filter((f) => f.type === 'message').map((f) => f.data.n)).toEqual(Array.from({ length: total }, (_, n) => n));
    fast.ws.close();

    // The slow client, reading again, finds its socket closed.
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect([1006, 1008]).toContain(await slow.closed);
    await stillServing('after a slow reader');
  });
});

describe('SIGTERM', () => {
  it('svc serve closes sockets with 1001 and exits 0', async () => {
    const proc = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
    // Anonymous: GET /api/_rt/ws without credentials gives an anonymous connection.
    const a = await raw({}, proc.url);
    expect(a.frames[0].userId).toBeNull();
    const exit = proc.close();
    expect(await a.closed).toBe(1001);
    expect(a.frames.at(-1)).toMatchObject({ type: 'system', event: 'disconnected' });
    expect(await exit).toBe(0);
  });
});
