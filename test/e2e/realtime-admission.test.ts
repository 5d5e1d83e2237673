/**
 * What one client may take (issue 20 §2; DESIGN §6; docs/realtime.md "Limits and bad input"):
 * - one address holds at most `maxConnectionsPerAddress` sockets, Web PubSub and hub together: the next
 *   upgrade answers 429 `RATE_LIMITED`, and a slot frees when a socket closes;
 * - anonymous connections get `anonymousMaxFrameBytes` (4096: a larger frame closes 1009) and
 *   `anonymousMaxMessagesPerSecond` (10: a flood closes 1008), signed-in ones keep `maxFrameBytes` and
 *   `maxMessagesPerSecond`;
 * - at the default limits (1 MiB frames, 1 MiB send buffers) a sender's burst of six full frames to a
 *   public channel leaves a member that paused reading connected — it gets every message once it reads
 *   again — while a member that never reads is dropped.
 * - behind a trusted proxy (svc.json `trustedProxies`), sockets and failed sign-ins are counted per
 *   client address of `X-Forwarded-For` (read from the right), so one client cannot spend another's
 *   limit, nor escape its own by sending the header itself.
 * In-process server on SQLite with examples/shop, `maxConnectionsPerAddress` 8, and the test itself as
 * the trusted proxy (`trustedProxies: ["127.0.0.1"]`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import type WebSocket from 'ws';
import { prepareApp, runCli, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { hubRecords, openRaw, rawRequest, RS, upgradeRequest, type RawSocket } from '../support/hostile.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');
const PER_ADDRESS = 8;
const MiB = 1024 * 1024;

let app: PreparedApp;
let server: RunningServer;
let base: string;
let alice: Identity;
const open: RawSocket[] = [];

/** A Web PubSub socket of `who` (plain protocol), past its `connected` frame. */
async function wps(headers: Record<string, string> = {}, upgradeHeaders: Record<string, string> = {}): Promise<RawSocket & { id: string }> {
  const { url } = (await (await fetch(`${base}/_rt/ws`, { headers })).json()) as { url: string };
  const s = await openRaw(url, ['json.webpubsub.azure.v1'], undefined, upgradeHeaders);
  open.push(s);
  await waitFor(() => s.frames.length > 0);
  return { ...s, id: s.frames[0].connectionId };
}

/** Closes every socket of the test and waits until the server counts none from loopback. */
async function closeAll(): Promise<void> {
  for (const s of open.splice(0)) s.ws.terminate();
  await waitFor(() => server.realtime.addresses.count('127.0.0.1') === 0);
}

/** The TCP socket under a `ws` client (to pause and resume reading). */
const tcp = (ws: WebSocket) => (ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;

beforeAll(async () => {
  app = await prepareApp(SHOP, 'sqlite');
  const settings = JSON.parse(readFileSync(join(app.dir, 'svc.json'), 'utf8'));
  writeFileSync(join(app.dir, 'svc.json'), JSON.stringify({ ...settings, realtime: { maxConnectionsPerAddress: PER_ADDRESS }, trustedProxies: ['127.0.0.1'] }));
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  alice = await userIdentity(app, base, 'alice');
  expect(server.realtime.limits).toMatchObject({ maxFrameBytes: MiB, sendBufferBytes: MiB, anonymousMaxFrameBytes: 4096, anonymousMaxMessagesPerSecond: 10 });
});

afterAll(async () => {
  for (const s of open.splice(0)) s.ws.terminate();
  await server?.close();
  await app?.cleanup();
});

describe('connections per address', () => {
  it(`socket ${PER_ADDRESS + 1} from one address is refused with 429 RATE_LIMITED, on either endpoint; a closed socket frees its slot`, async () => {
    for (let i = 0; i < PER_ADDRESS / 2; i++) await wps();
    const { accessToken } = (await (await fetch(`${base}/_rt/hub`)).json()) as { accessToken: string };
    const hubUrl = `ws://127.0.0.1:${server.port}/api/_rt/signalr?access_token=${accessToken}`;
    for (let i = 0; i < PER_ADDRESS / 2; i++) open.push(await openRaw(hubUrl, [], hubRecords));
    expect(server.realtime.addresses.count('127.0.0.1')).toBe(PER_ADDRESS);

    const refused = await rawRequest(server.port, upgradeRequest('/api/_rt/client?access_token=x', { 'Sec-WebSocket-Protocol': 'json.webpubsub.azure.v1' }));
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('"code":"RATE_LIMITED"');
    await expect(openRaw(hubUrl, [], hubRecords)).rejects.toThrow('429');
    // Refused upgrades hold no slot; a closed socket gives its slot back.
    expect(server.realtime.addresses.count('127.0.0.1')).toBe(PER_ADDRESS);
    const first = open.shift()!;
    first.ws.close();
    await waitFor(() => server.realtime.addresses.count('127.0.0.1') === PER_ADDRESS - 1);
    await wps();
    await closeAll();
  });
});

describe('behind a trusted proxy', () => {
  const forwarded = (address: string) => ({ 'X-Forwarded-For': address });
  const upgradeFrom = (address: string) =>
    rawRequest(server.port, upgradeRequest('/api/_rt/client?access_token=x', { 'Sec-WebSocket-Protocol': 'json.webpubsub.azure.v1', ...forwarded(address) }));

  it('counts sockets per X-Forwarded-For client: one client at its limit leaves the others theirs, and cannot escape it by sending the header', async () => {
    for (let i = 0; i < PER_ADDRESS; i++) await wps({}, forwarded('203.0.113.7'));
    expect(server.realtime.addresses.count('203.0.113.7')).toBe(PER_ADDRESS);
    expect(server.realtime.addresses.count('127.0.0.1')).toBe(0);
    expect((await upgradeFrom('203.0.113.7')).status).toBe(429);
    // The client's own header stands left of what the proxy appended: the rightmost untrusted hop counts.
    expect((await upgradeFrom('198.51.100.1, 203.0.113.7')).status).toBe(429);
    // Another client (past admission: its made-up token is what fails) and the proxy's own requests.
    expect((await upgradeFrom('203.0.113.8')).status).toBe(401);
    expect((await upgradeFrom('not an address')).status).toBe(401);
    await wps();
    for (const s of open.splice(0)) s.ws.terminate();
    await waitFor(() => server.realtime.addresses.count('203.0.113.7') === 0 && server.realtime.addresses.count('127.0.0.1') === 0);
  });

  it('counts failed sign-ins per X-Forwarded-For client: ten failures lock the account for that client only', async () => {
    await userIdentity(app, base, 'proxied');
    const signIn = (address: string, password: string) =>
      fetch(`${base}/_auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...forwarded(address) },
        body: JSON.stringify({ authority: 'password', username: 'proxied', password }),
      });
    for (let i = 0; i < 10; i++) expect((await signIn('203.0.113.20', 'wrong-password')).status).toBe(401);
    expect((await signIn('203.0.113.20', 'pw-proxied-long')).status).toBe(429);
    expect((await signIn('198.51.100.9, 203.0.113.20', 'pw-proxied-long')).status).toBe(429);
    expect((await signIn('203.0.113.21', 'pw-proxied-long')).status).toBe(200);
  });
});

describe('anonymous limits', () => {
  it('an anonymous frame over 4096 bytes closes 1009; a signed-in one of 64 KiB is delivered', async () => {
    const anon = await wps();
    anon.ws.send(JSON.stringify({ type: 'event', event: 'x', data: 'a'.repeat(4096) }));
    expect((await anon.closed).code).toBe(1009);
    const a = await wps(alice.headers);
    a.ws.send(JSON.stringify({ type: 'joinGroup', group: 'shop:big', ackId: 1 }));
    a.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:big', ackId: 2, dataType: 'text', data: 'b'.repeat(64 * 1024) }));
    await waitFor(() => a.frames.some((f) => f.type === 'message' && f.data.length === 64 * 1024));
    expect(a.frames.filter((f) => f.type === 'ack').map((f) => f.success)).toEqual([true, true]);
    await closeAll();
  });

  it('an anonymous burst of 30 pings closes 1008 (10 per second, bursts of 20); a signed-in burst of 300 is answered', async () => {
    const anon = await wps();
    for (let i = 0; i < 30; i++) anon.ws.send('{"type":"ping"}');
    expect((await anon.closed).code).toBe(1008);
    const { accessToken } = (await (await fetch(`${base}/_rt/hub`)).json()) as { accessToken: string };
    const hub = await openRaw(`ws://127.0.0.1:${server.port}/api/_rt/signalr?access_token=${accessToken}`, [], hubRecords);
    open.push(hub);
    hub.ws.send(JSON.stringify({ protocol: 'json', version: 1 }) + RS);
    for (let i = 0; i < 30; i++) hub.ws.send(JSON.stringify({ type: 6 }) + RS);
    expect((await hub.closed).code).toBe(1008);
    const signedIn = await wps(alice.headers);
    for (let i = 0; i < 300; i++) signedIn.ws.send('{"type":"ping"}');
    await waitFor(() => signedIn.frames.filter((f) => f.type === 'pong').length === 300);
    await closeAll();
  });
});

describe('slow readers at the limits', () => {
  it('a burst of six full frames does not drop a member that paused reading; a member that never reads is dropped', async () => {
    const sender = await wps(alice.headers);
    const reader = await wps(alice.headers);
    const paused = await wps(alice.headers);
    const stuck = await wps(alice.headers);
    for (const s of [reader, paused, stuck]) {
      s.ws.send(JSON.stringify({ type: 'joinGroup', group: 'shop:burst', ackId: 1 }));
      await waitFor(() => s.frames.some((f) => f.type === 'ack'));
    }
    const before = server.realtime.broker.stats().slowDropped;
    const serverSide = (id: string) => (server.realtime.broker.get(id)!.transport as unknown as { socket: WebSocket }).socket;
    tcp(paused.ws).pause();
    tcp(stuck.ws).pause();
    // Six frames as large as maxFrameBytes allows (the sendToGroup envelope included).
    const envelope = Buffer.byteLength(JSON.stringify({ type: 'sendToGroup', group: 'shop:burst', ackId: 99, dataType: 'text', data: '' }));
    for (let n = 0; n < 6; n++) {
      sender.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:burst', ackId: 10 + n, dataType: 'text', data: String(n).repeat(MiB - envelope - 8) }));
    }
    await waitFor(() => reader.frames.filter((f) => f.type === 'message').length === 6, 20_000);
    // The paused member's queue went over sendBufferBytes during the burst: the old rule dropped it here.
    expect(serverSide(paused.id).bufferedAmount).toBeGreaterThan(MiB);
    expect(server.realtime.broker.get(paused.id)).toBeDefined();
    tcp(paused.ws).resume();
    await waitFor(() => paused.frames.filter((f) => f.type === 'message').length === 6, 20_000);
    expect(paused.frames.filter((f) => f.type === 'message').map((f) => f.data[0])).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(server.realtime.broker.stats().slowDropped).toBe(before);

    // The member that never reads: still over the bound after the grace, it goes at the next message.
    let n = 0;
    await waitFor(() => {
      sender.ws.send(JSON.stringify({ type: 'sendToGroup', group: 'shop:burst', dataType: 'text', data: `tick ${n++}` }));
      return server.realtime.broker.get(stuck.id) === undefined;
    }, 10_000);
    expect(server.realtime.broker.stats().slowDropped).toBe(before + 1);
    expect(server.realtime.broker.get(reader.id)).toBeDefined();
    expect(server.realtime.broker.get(paused.id)).toBeDefined();
    await closeAll();
  });
});
