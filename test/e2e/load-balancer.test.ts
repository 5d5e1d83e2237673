/**
 * Three instances behind a real load balancer, surviving the loss of one (issue 24 §3, docs/deploy.md):
 * three `svc serve` processes of examples/shop on one fresh PostgreSQL database and a private
 * `redis-server` (its own keys and channels: no other test can publish into it), with HAProxy in front
 * (test/support/haproxy.ts: round robin, no stickiness, health checks on `/api/_ready`). Through HAProxy
 * only: mixed HTTP load (reads and acknowledged writes), 96 WebSocket clients (the official Web PubSub
 * client, a quarter of them on its reliable subprotocol, and the official SignalR client) in one
 * channel, eight of them with a `_listen` change feed, and an agent session
 * held by the instance about to die. Then that instance is SIGKILLed:
 * - only requests in flight at the kill may fail (none is retried by the test);
 * - every acknowledged write is in the database;
 * - the clients reconnect through HAProxy, and a channel message and a change notification sent after
 *   that reach every one of them (the feed re-established in `connected`, as docs/realtime.md says, or
 *   carried over by the recovery of a reliable connection);
 * - the agent session is taken over by a surviving instance and the thread goes on.
 * Then SIGTERM drains a second instance under the same load (`SVC_DRAIN_SECONDS`): `_ready` turns 503
 * while requests are still served, HAProxy takes it out before it stops listening, not one request
 * fails, and its sockets close with 1001.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { WebPubSubClient, WebPubSubJsonProtocol } from '@azure/web-pubsub-client';
import { HubConnectionBuilder, HttpTransportType, LogLevel, type HubConnection } from '@microsoft/signalr';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { HaproxyProcess } from '../support/haproxy.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { waitFor } from '../support/wait.js';

const SHOP = join(ROOT, 'examples/shop');
const WPS_CLIENTS = 48;
const HUB_CLIENTS = 48;
const LISTENERS = 8;

let app: PreparedApp;
let redis: PrivateRedis;
let model: ModelServer;
let proxy: HaproxyProcess;
const servers: TestServer[] = [];
let api = '';
let alice: Identity;
let customer = '';
const wps: WebPubSubClient[] = [];
const hubs: HubConnection[] = [];
/** The Web PubSub and SignalR clients in channel `lb`, made by the first test. */
let clients: Seen[] = [];

/** What one client saw: connections made, connection ids in order (once rejoined/re-listened), channel messages, change notifications. */
interface Seen {
  connected: number;
  ids: string[];
  messages: unknown[];
  changes: string[][];
}

async function post(base: string, path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/**
 * An official Web PubSub client through the balancer, in channel `lb`; `listen` redoes `_listen` on
 * each connect; `reliable` keeps the client's default subprotocol (its recovery may reach another
 * instance, which takes the connection over with its channels and change feed: docs/realtime.md).
 */
async function wpsClient(listen: boolean, reliable: boolean): Promise<Seen> {
  const seen: Seen = { connected: 0, ids: [], messages: [], changes: [] };
  const c = new WebPubSubClient(
    { getClientAccessUrl: async () => (await (await fetch(`${api}/_rt/ws`, { headers: alice.headers })).json()).url },
    {
      ...(reliable ? {} : { protocol: WebPubSubJsonProtocol() }),
      messageRetryOptions: { maxRetries: 0 },
      reconnectRetryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 1000 },
    },
  );
  wps.push(c);
  c.on('connected', (e) => {
    seen.connected += 1;
    // Server-side subscriptions belong to one connection: made again after every reconnect (docs/realtime.md).
    if (listen)
      void post(api, '/Order/_listen', { connectionId: e.connectionId, type: 'ws' }, alice).then((r) => r.status === 200 && seen.ids.push(e.connectionId));
    else seen.ids.push(e.connectionId);
  });
  c.on('group-message', (e) => {
    if (e.message.group === 'shop:Order') seen.changes.push((e.message.data as { ids: string[] }).ids);
    else seen.messages.push(e.message.data);
  });
  await c.start();
  await c.joinGroup('shop:lb'); // rejoined by the client itself after a reconnect
  await waitFor(() => seen.ids.length > 0);
  return seen;
}

/** An official SignalR client through the balancer (negotiate and socket may reach different instances), in channel `lb`. */
async function hubClient(): Promise<Seen> {
  const seen: Seen = { connected: 1, ids: [], messages: [], changes: [] };
  const info = await (await fetch(`${api}/_rt/hub`, { headers: alice.headers })).json();
  const hub = new HubConnectionBuilder()
    .withUrl(info.url, { accessTokenFactory: () => info.accessToken, transport: HttpTransportType.WebSockets })
    .withAutomaticReconnect([0, 200, 500, 1000, 2000, 2000, 2000, 2000])
    .configureLogging(LogLevel.None)
    .build();
  hubs.push(hub);
  hub.on('message', (m) => seen.messages.push(m.data));
  // A hub join is server-side state of one connection: joined again after a reconnect.
  hub.onreconnected((id) => {
    seen.connected += 1;
    void hub.invoke('join', 'lb').then(() => seen.ids.push(id!));
  });
  await hub.start();
  await hub.invoke('join', 'lb');
  seen.ids.push(hub.connectionId!);
  return seen;
}

/** Sends channel messages through the balancer until every client got one (each reconnected and in `lb` again). */
async function everyClientGets(label: string): Promise<void> {
  await waitFor(async () => {
    const marker = `${label} ${performance.now()}`;
    expect((await post(api, '/_rt/send', { channel: 'lb', body: marker }, alice)).status).toBe(200);
    return waitFor(() => clients.every((c) => c.messages.includes(marker)), 1000).catch(() => false);
  }, 20_000);
}

/** One HTTP request of the load: when it started and ended (ms, `performance.now()`), and whether it succeeded. */
interface Outcome {
  start: number;
  end: number;
  ok: boolean;
  what: string;
}

/**
 * Runs `workers` loops of reads and writes through the balancer until `stop()`; each write answered
 * 201 is an acknowledged write, its id kept. No request is retried.
 */
function load(workers: number) {
  const outcomes: Outcome[] = [];
  const acked: string[] = [];
  let running = true;
  let n = 0;
  const one = async (i: number): Promise<void> => {
    const start = performance.now();
    const kind = i % 3;
    const what = ['GET /Product', 'GET /Order', 'POST /Order'][kind];
    try {
      const r =
        kind === 2
          ? await fetch(`${api}/Order`, {
              method: 'POST',
              headers: { ...alice.headers, 'content-type': 'application/json' },
              body: JSON.stringify({ title: `lb ${i}`, customer }),
              signal: AbortSignal.timeout(15_000),
            })
          : await fetch(`${api}/${kind === 0 ? 'Product?pageSize=5' : 'Order?pageSize=5&sortBy=placedAt-'}`, {
              headers: alice.headers,
              signal: AbortSignal.timeout(15_000),
            });
      const body = await r.text();
      const ok = kind === 2 ? r.status === 201 : r.status === 200;
      if (ok && kind === 2) acked.push(...(JSON.parse(body).data as string[]));
      outcomes.push({ start, end: performance.now(), ok, what: `${what} ${r.status}${ok ? '' : ` ${body.slice(0, 120)}`}` });
    } catch (e) {
      const cause = (e as Error & { cause?: Error }).cause;
      outcomes.push({ start, end: performance.now(), ok: false, what: `${what} ${(e as Error).message}${cause ? `: ${cause.message}` : ''}` });
    }
  };
  const loops = Array.from({ length: workers }, async () => {
    while (running) await one(n++);
  });
  return {
    outcomes,
    acked,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Resolves when `server`'s process has exited; the time of that (`performance.now()`). */
const exited = (server: TestServer) =>
  new Promise<number>((ok) =>
    server.child.exitCode !== null || server.child.signalCode !== null ? ok(performance.now()) : server.child.once('exit', () => ok(performance.now())),
  );

beforeAll(async () => {
  model = await startModelServer();
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(SHOP, 'postgresql');
  // SIGTERM drains for 2.5 s (not ready, still serving): HAProxy's checks (every 1 s, 0.5 s once one
  // failed; two failures) take the instance out before it stops listening.
  const env = { ...app.env, REDIS_URL: redis.url, SHOP_MODEL_URL: model.url, SVC_DRAIN_SECONDS: '2.5' };
  // The first applies the migrations (README: migrate once, before the instances start); then the others.
  servers.push(await serve(app.dir, env));
  servers.push(...(await Promise.all([1, 2].map(() => serve(app.dir, env)))));
  proxy = await HaproxyProcess.start(servers.map((s, i) => ({ name: `s${i}`, address: new URL(s.url).host })));
  api = `${proxy.url}/api`;
  alice = await userIdentity(app, api, 'alice');
  customer = (await post(api, '/Customer', { name: 'Ada', country: 'GB' }, alice)).json.data[0];
});

afterAll(async () => {
  for (const c of wps) c.stop();
  await Promise.all(hubs.map((h) => h.stop().catch(() => {})));
  await proxy?.stop();
  for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) await s.close();
  await redis?.stop();
  await model?.close();
  await app?.cleanup();
});

describe('three instances behind HAProxy', () => {
  it('survives SIGKILL of one: only in-flight requests fail, acknowledged writes stay, clients, feeds and the agent session go on', async () => {
    clients = await Promise.all([
      // A quarter on the reliable protocol, listeners among them: a reliable connection recovered on
      // another instance keeps its id (no `connected`, so no new `_listen`) and its change feed.
      ...Array.from({ length: WPS_CLIENTS }, (_, i) => wpsClient(i < LISTENERS, i % 4 === 3)),
      ...Array.from({ length: HUB_CLIENTS }, () => hubClient()),
    ]);
    const listeners = clients.slice(0, LISTENERS);

    // The agent session runs on the instance about to die: its connect is made there directly.
    const victim = servers[0];
    const events: any[] = [];
    let agentConnection = '';
    const agent = new WebPubSubClient(
      { getClientAccessUrl: async () => (await (await fetch(`${api}/_rt/ws`, { headers: alice.headers })).json()).url },
      { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 }, reconnectRetryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 1000 } },
    );
    wps.push(agent);
    let agentUp = false;
    agent.on('connected', (e) => {
      agentConnection = e.connectionId;
      agentUp = true;
    });
    agent.on('disconnected', () => (agentUp = false));
    agent.on('group-message', (e) => typeof e.message.data === 'string' && events.push(JSON.parse(e.message.data)));
    await agent.start();
    await waitFor(() => agentConnection);
    model.script({ text: ['Hello from the first instance'] });
    const connected = await post(victim.url, '/agentConnect', { connectionId: agentConnection, message: 'Who answers?' }, alice);
    expect(connected.status, JSON.stringify(connected.json)).toBe(200);
    await waitFor(() => events.find((e) => e.type === 'turn-completed'), 15_000);

    const traffic = load(8);
    await new Promise((r) => setTimeout(r, 1500)); // load before the kill, to have requests in flight at it
    const before = traffic.outcomes.length;
    const killedAt = performance.now();
    victim.child.kill('SIGKILL');
    const goneAt = await exited(victim);
    await waitFor(async () => (await proxy.serverStates()).s0 === 'DOWN', 30_000);
    await new Promise((r) => setTimeout(r, 1000)); // load after HAProxy took it out, too
    await traffic.stop();

    const failed = traffic.outcomes.filter((o) => !o.ok);
    const inFlightAtKill = traffic.outcomes.filter((o) => o.start <= goneAt && o.end >= killedAt);
    expect(traffic.outcomes.length - before).toBeGreaterThan(50);
    // Retry-free: only a request that had started before the process was gone may fail.
    expect(failed.filter((o) => o.start > goneAt).map((o) => o.what)).toEqual([]);
    expect(failed.length).toBeLessThanOrEqual(inFlightAtKill.length);

    // Every acknowledged write is in the database.
    const db = new pg.Client({ connectionString: app.env.DATABASE_URL });
    await db.connect();
    try {
      const found = await db.query('SELECT id FROM "Order" WHERE id = ANY($1::uuid[])', [traffic.acked]);
      expect(found.rowCount).toBe(traffic.acked.length);
    } finally {
      await db.end();
    }

    // Every client is connected again (those of the dead instance with a new connection id), and what
    // is sent now reaches each one once: the channel through HAProxy, the change feed of the listeners.
    await everyClientGets('after the kill');
    expect(clients.filter((c) => c.ids.length > 1).length).toBeGreaterThan(0);
    // Each listener listens again on its new connection before the write (an answered `_listen` counts).
    await waitFor(() => listeners.every((l) => l.ids.length === l.connected), 30_000);
    const order = await post(api, '/Order', { title: 'after the kill', customer }, alice);
    expect(order.status).toBe(201);
    await waitFor(() => listeners.every((l) => l.changes.some((ids) => ids.includes(order.json.data[0]))), 30_000);

    // The agent session is taken over by a surviving instance; the thread goes on.
    await waitFor(() => agentUp, 30_000);
    const startAt = events.length;
    model.script({ text: ['A survivor here'] });
    const again = await post(api, '/agentConnect', { connectionId: agentConnection, message: 'Still there?' }, alice);
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    expect(again.json.channel).toBe(connected.json.channel);
    await waitFor(() => events.slice(startAt).find((e) => e.type === 'turn-completed'), 20_000);
    expect(servers.slice(1).some((s) => /taking it over/.test(s.output()))).toBe(true);
    expect(model.requests.at(-1)!.body.messages.map((m) => m.content)).toContain('Who answers?');
  });

  it('drains on SIGTERM under load: HAProxy takes the instance out before it stops listening, not one request fails', async () => {
    const traffic = load(8);
    await new Promise((r) => setTimeout(r, 1000));
    const draining = servers[1];
    // A socket held by the draining instance, to see its close code.
    const url = (await (await fetch(`${draining.url}/_rt/ws`, { headers: alice.headers })).json()).url as string;
    const raw = new WebSocket(url, 'json.webpubsub.azure.v1');
    const closeCode = new Promise<number>((ok) => raw.once('close', (code) => ok(code)));
    await new Promise((ok) => raw.once('message', ok));
    let downBeforeExit = false;
    const stopped = draining.close(); // SIGTERM
    // Draining: not ready, still serving, each response ending its connection.
    const ready = await waitFor(async () => {
      const r = await fetch(`${draining.url}/_ready`);
      return r.status === 503 && ((await r.json()) as { draining?: boolean }).draining && r;
    }, 2000);
    expect(ready.headers.get('connection')).toBe('close');
    const served = await fetch(`${draining.url}/Product?pageSize=1`, { headers: alice.headers });
    expect(served.status).toBe(200);
    expect(served.headers.get('connection')).toBe('close');
    while (draining.child.exitCode === null) {
      if ((await proxy.serverStates()).s1 === 'DOWN' && !/server stopped/.test(draining.output())) downBeforeExit = true;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await stopped).toBe(0);
    await new Promise((r) => setTimeout(r, 1000));
    await traffic.stop();
    expect(downBeforeExit).toBe(true);
    expect(await closeCode).toBe(1001); // going away: the clients reconnect elsewhere
    expect(traffic.outcomes.length).toBeGreaterThan(50);
    expect(traffic.outcomes.filter((o) => !o.ok).map((o) => o.what)).toEqual([]);
    // Its sockets were closed with 1001 (going away): the clients are back on the last instance.
    await everyClientGets('after the drain');
  });
});
