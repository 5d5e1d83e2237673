/**
 * Reliable Web PubSub recovery on another instance, and fan-out over three instances (issue 24 §2;
 * wps-store.ts): three `svc serve` processes of examples/shop on one PostgreSQL database and a private
 * `redis-server`.
 *
 * - A message sent on one instance reaches subscribers spread over the three exactly once.
 * - The official client on the reliable protocol is connected to A through a small TCP proxy (the
 *   load balancer); messages flow from B; A is SIGKILLed and the proxy sends new connections to B; the
 *   client recovers there (no new `connected` event) and has every message once, in order.
 * - A recovery with a forged token, or after the state expired in Redis, is closed 1008 by B, and the
 *   genuine connection goes on; 300 malformed upgrades (recoveries of a connection held by another
 *   instance among them) never answer 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import WebSocket from 'ws';
import { WebPubSubClient, WebPubSubJsonProtocol, type OnGroupDataMessageArgs } from '@azure/web-pubsub-client';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { fuzzSeed, Prng, rawRequest } from '../support/hostile.js';
import { upgrade } from '../support/fuzz-cases.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let redis: PrivateRedis;
let a: TestServer;
let b: TestServer;
let c: TestServer;
let alice: Identity;
const clients: WebPubSubClient[] = [];

const portOf = (server: TestServer) => Number(new URL(server.url).port);

interface Client {
  c: WebPubSubClient;
  got: OnGroupDataMessageArgs['message'][];
  connected: string[];
  id: () => string;
}

/** An official Web PubSub client whose access URL comes from `base` (`http://host:port/api`). */
async function client(base: string, who: Identity, reliable: boolean): Promise<Client> {
  const c = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: who.headers })).json()).url },
    { ...(reliable ? {} : { protocol: WebPubSubJsonProtocol() }), messageRetryOptions: { maxRetries: 0 } },
  );
  clients.push(c);
  const got: Client['got'] = [];
  const connected: string[] = [];
  c.on('connected', (e) => connected.push(e.connectionId));
  c.on('group-message', (e) => got.push(e.message));
  await c.start();
  await waitFor(() => connected.length > 0);
  return { c, got, connected, id: () => connected[connected.length - 1] };
}

async function send(server: TestServer, channel: string, body: unknown): Promise<void> {
  const r = await fetch(`${server.url}/_rt/send`, {
    method: 'POST',
    headers: { ...alice.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ channel, body }),
  });
  expect(r.status).toBe(200);
}

/** Opens a raw recovery socket on `server` and resolves to its close code. */
function recoveryCloseCode(server: TestServer, connectionId: string, token: string): Promise<number> {
  const url = `${server.url.replace('http', 'ws')}/_rt/client?awps_connection_id=${encodeURIComponent(connectionId)}&awps_reconnection_token=${encodeURIComponent(token)}`;
  const ws = new WebSocket(url, 'json.reliable.webpubsub.azure.v1');
  ws.on('error', () => {});
  return new Promise((ok) => ws.on('close', (code) => ok(code)));
}

const numbers = (got: Client['got']) => got.map((m) => (m.data as { n: number }).n);

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(SHOP, 'postgresql');
  const env = { ...app.env, REDIS_URL: redis.url };
  // One after the other: each applies the migrations at start.
  a = await serve(app.dir, env);
  b = await serve(app.dir, env);
  c = await serve(app.dir, env);
  alice = await userIdentity(app, a.url, 'alice');
});

afterAll(async () => {
  for (const x of clients) x.stop();
  await Promise.all([a?.close(), b?.close(), c?.close()]);
  await redis?.stop();
  await app?.cleanup();
});

describe('three instances on one Redis', () => {
  it('a message sent on one instance reaches subscribers on all three exactly once', async () => {
    const subscribers = await Promise.all([a, b, c, a, b, c].map((s, i) => client(s.url, alice, i % 2 === 0)));
    for (const s of subscribers) await s.c.joinGroup('shop:spread');
    const sender = subscribers[1];
    for (let n = 0; n < 20; n++) {
      if (n % 2 === 0) await send([a, b, c][n % 3], 'spread', { n });
      else await sender.c.sendToGroup('shop:spread', { n }, 'json');
    }
    await waitFor(() => subscribers.every((s) => s.got.length >= 20));
    // A marker after the others proves no second copy was on its way.
    await send(c, 'spread', { n: 20 });
    await waitFor(() => subscribers.every((s) => s.got.length >= 21));
    const all = Array.from({ length: 21 }, (_, n) => n);
    for (const s of subscribers) expect(numbers(s.got).sort((x, y) => x - y)).toEqual(all);
  });

  it('a reliable client whose instance is SIGKILLed recovers on another one with every message once, in order', async () => {
    const proxy = new TcpProxy(portOf(a));
    const port = await proxy.listen();
    try {
      const sub = await client(`http://127.0.0.1:${port}/api`, alice, true);
      await sub.c.joinGroup('shop:feed');
      const total = 300;
      let n = 0;
      const publishing = (async () => {
        for (; n < total; n++) await send(b, 'feed', { n });
      })();
      await waitFor(() => sub.got.length >= 50);
      proxy.target = portOf(b);
      a.child.kill('SIGKILL');
      await publishing;
      await waitFor(() => sub.got.length >= total, 20_000);
      // A marker sent last: nothing else is on its way.
      await send(c, 'feed', { n: total });
      await waitFor(() => sub.got.length > total);
      expect(numbers(sub.got)).toEqual(Array.from({ length: total + 1 }, (_, i) => i));
      // Recovered, not restarted: the client saw one connection only.
      expect(sub.connected).toHaveLength(1);
    } finally {
      proxy.close();
    }
  }, 60_000);

  it('a forged token, or a connection that has ended, is not recovered on another instance', async () => {
    const held = await client(c.url, alice, true);
    await held.c.joinGroup('shop:kept');
    expect(await recoveryCloseCode(b, held.id(), 'forged-token')).toBe(1008);
    expect(await recoveryCloseCode(b, `${held.id()}x`, 'forged-token')).toBe(1008);
    // The genuine connection goes on.
    await send(b, 'kept', { n: 1 });
    await waitFor(() => held.got.length === 1);
    expect(held.connected).toHaveLength(1);

    // A connection whose recovery window is over (its state expired in Redis) is refused, real token and all.
    const raw = new WebSocket(`${(await (await fetch(`${c.url}/_rt/ws`, { headers: alice.headers })).json()).url}`, 'json.reliable.webpubsub.azure.v1');
    let id = '';
    let token = '';
    raw.on('message', (d) => {
      const f = JSON.parse(String(d));
      if (f.event === 'connected') [id, token] = [f.connectionId, f.reconnectionToken];
    });
    await waitFor(() => token);
    const key = `svc:shop:rt:wps:${id}`;
    const ttl = Number(redisCli('pttl', key));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(40_000);
    raw.terminate();
    redisCli('pexpire', key, '1');
    await waitFor(() => redisCli('exists', key) === '0');
    expect(await recoveryCloseCode(b, id, token)).toBe(1008);
  });
});

describe('recovery upgrades fuzzed on another instance', () => {
  const SEED = fuzzSeed();
  it(`300 malformed upgrades on B, recoveries of C's connection among them, never answer 5xx (seed ${SEED})`, async () => {
    const held = await client(c.url, alice, true);
    await held.c.joinGroup('shop:fuzzed');
    const tokens = [new URL((await (await fetch(`${b.url}/_rt/ws`, { headers: alice.headers })).json()).url).searchParams.get('access_token')!];
    const port = portOf(b);
    const r = new Prng(SEED);
    for (let n = 0; n < 300; n++) {
      const request = upgrade(r, tokens, [held.id()]);
      const { status } = await rawRequest(port, request);
      expect(status, `seed ${SEED}: ${request.slice(0, 300)}`).toBeLessThan(500);
    }
    // The held connection was never taken over.
    await send(b, 'fuzzed', { n: 1 });
    await waitFor(() => held.got.length === 1);
    expect(held.connected).toHaveLength(1);
  });
});

function redisCli(...args: string[]): string {
  return execFileSync('redis-cli', ['-p', String(redis.port), ...args])
    .toString()
    .trim();
}
