/**
 * @module The identity-revocation scenario of issue 20 §4, run against one instance (SQLite) or
 * several (PostgreSQL + Redis): `svc user delete|disable|set-roles` and `svc service-account delete`
 * run as real processes while the identity holds sockets on every instance — raw reliable Web PubSub
 * sockets and `@microsoft/signalr` hub connections. Deleted and disabled identities lose every socket
 * within 5 s of the command's end, a reliable connection waiting for recovery cannot be recovered,
 * and a role change stops the change feeds the new roles no longer allow.
 *
 * The app must be examples/shop with `prepareForRevocation` applied before `svc generate`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { HubConnectionBuilder, HttpTransportType, LogLevel, type HubConnection } from '@microsoft/signalr';
import { runCli, type PreparedApp } from './cli.js';
import { createServiceAccount, createUser, serviceAccountToken, userToken, type Identity } from './auth.js';
import { waitFor } from './wait.js';

/** Changes become visible within this long after the command ends (issue 20 §4), ms. */
const WITHIN_MS = 5000;
const RELIABLE = 'json.reliable.webpubsub.azure.v1';

/** Adds a LISTEN rule for the role `clerk` to the shop's Product (run `svc generate` after). */
export function prepareForRevocation(dir: string): void {
  const file = join(dir, 'collections', 'Product.json');
  const product = JSON.parse(readFileSync(file, 'utf8'));
  product.access.push({ method: 'LISTEN', roleNames: ['clerk'] });
  writeFileSync(file, JSON.stringify(product, null, 2));
}

/** A raw reliable Web PubSub socket: its connection id, recovery token, frames, and how it closed. */
interface RawSocket {
  ws: WebSocket;
  connectionId: string;
  reconnectionToken: string;
  frames: any[];
  closed: () => number | null;
}

async function rawSocket(base: string, who: Identity): Promise<RawSocket> {
  const r = await fetch(`${base}/_rt/ws`, { headers: who.headers });
  expect(r.status).toBe(200);
  const ws = new WebSocket((await r.json()).url, RELIABLE);
  const frames: any[] = [];
  let code: number | null = null;
  ws.on('message', (data) => frames.push(JSON.parse(data.toString())));
  ws.on('close', (c) => (code = c));
  ws.on('error', () => {});
  const connected = await waitFor(() => frames.find((f) => f.event === 'connected'));
  return { ws, connectionId: connected.connectionId, reconnectionToken: connected.reconnectionToken, frames, closed: () => code };
}

/** Tries to recover `socket`'s connection (notes §1.5); resolves with the close code, or 0 when it stays open. */
function recover(base: string, socket: RawSocket): Promise<number> {
  const url = new URL(`${base.replace(/^http/, 'ws')}/_rt/client`);
  url.searchParams.set('awps_connection_id', socket.connectionId);
  url.searchParams.set('awps_reconnection_token', socket.reconnectionToken);
  return new Promise((ok) => {
    const ws = new WebSocket(url, RELIABLE);
    // A give-up for a server that never closes it (0 then fails the test), not a bound under test:
    // generous, it costs nothing when the close comes.
    const timer = setTimeout(() => {
      ws.terminate();
      ok(0);
    }, 10_000);
    ws.on('close', (code) => {
      clearTimeout(timer);
      ok(code);
    });
    ws.on('error', () => {});
  });
}

/** A started hub connection and the time it closed (null while open). */
async function hub(
  base: string,
  who: Identity,
  all: HubConnection[],
): Promise<{ connection: HubConnection; closedAt: () => number | null; changes: any[]; messages: any[] }> {
  const info = await (await fetch(`${base}/_rt/hub`, { headers: who.headers })).json();
  const connection = new HubConnectionBuilder()
    .withUrl(info.url, { accessTokenFactory: () => info.accessToken, transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  all.push(connection);
  let closedAt: number | null = null;
  const changes: any[] = [];
  const messages: any[] = [];
  connection.onclose(() => (closedAt = Date.now()));
  connection.on('change', (n) => changes.push(n));
  connection.on('message', (m) => messages.push(m));
  await connection.start();
  return { connection, closedAt: () => closedAt, changes, messages };
}

async function post(base: string, path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

/** Runs a CLI command that must succeed; resolves when the process has ended. */
async function cli(app: PreparedApp, args: string[]): Promise<void> {
  const r = await runCli(args, app.env);
  expect(r.code, r.stderr).toBe(0);
}

/**
 * Deleting or disabling an identity closes its sockets on every server within 5 s, and a reliable
 * connection of it that waits for recovery cannot be recovered.
 * @param bases - the `/api` URLs of every instance
 */
export async function deletedAndDisabledIdentitiesLoseTheirSockets(app: PreparedApp, bases: string[]): Promise<void> {
  const hubs: HubConnection[] = [];
  try {
    const password = 'password-123';
    await createUser(app, 'dora', password);
    await createUser(app, 'dan', password);
    const bot = await createServiceAccount(app, 'bot');
    const dora = await userToken(bases[0], 'dora', password);
    const dan = await userToken(bases[0], 'dan', password);
    const botIdentity = await serviceAccountToken(bases[0], bot.clientId, bot.clientSecret);
    const sockets = { dora: [] as RawSocket[], dan: [] as RawSocket[] };
    const hubsOf = { dora: [] as Awaited<ReturnType<typeof hub>>[], bot: [] as Awaited<ReturnType<typeof hub>>[] };
    const dropped: RawSocket[] = [];
    for (const base of bases) {
      sockets.dora.push(await rawSocket(base, dora));
      hubsOf.dora.push(await hub(base, dora, hubs));
      sockets.dan.push(await rawSocket(base, dan));
      hubsOf.bot.push(await hub(base, botIdentity, hubs));
      // A reliable connection whose socket dropped: it waits for its client's recovery.
      const waiting = await rawSocket(base, dan);
      waiting.ws.terminate();
      dropped.push(waiting);
    }
    await Promise.all([
      cli(app, ['user', 'delete', app.dir, '--username', 'dora']),
      cli(app, ['user', 'disable', app.dir, '--username', 'dan']),
      cli(app, ['service-account', 'delete', app.dir, '--client-id', bot.clientId]),
    ]);
    const done = Date.now();
    await waitFor(
      () => [...sockets.dora, ...sockets.dan].every((s) => s.closed() !== null) && [...hubsOf.dora, ...hubsOf.bot].every((h) => h.closedAt() !== null),
      WITHIN_MS + 2000,
    );
    for (const s of [...sockets.dora, ...sockets.dan]) expect(s.closed()).toBe(1008);
    for (const h of [...hubsOf.dora, ...hubsOf.bot]) expect(h.closedAt()! - done).toBeLessThan(WITHIN_MS);
    expect(Date.now() - done).toBeLessThan(WITHIN_MS + 500);
    // Recovery is refused (1008), and a fresh connection too: the identity's tokens no longer work.
    for (const [i, base] of bases.entries()) {
      expect(await recover(base, dropped[i])).toBe(1008);
      expect((await fetch(`${base}/_rt/ws`, { headers: dan.headers })).status).toBe(401);
      expect((await fetch(`${base}/_rt/hub`, { headers: botIdentity.headers })).status).toBe(401);
    }
  } finally {
    await Promise.all(hubs.map((h) => h.stop().catch(() => undefined)));
  }
}

/**
 * A role change reaches open connections within 5 s: a change feed granted by a role the identity
 * lost stops on every server, while one its remaining roles allow goes on.
 */
export async function roleChangesReachOpenConnections(app: PreparedApp, bases: string[], admin: Identity): Promise<void> {
  const hubs: HubConnection[] = [];
  try {
    await createUser(app, 'rita', 'password-123', ['clerk']);
    const rita = await userToken(bases[0], 'rita', 'password-123');
    const connections = [];
    for (const base of bases) {
      const h = await hub(base, rita, hubs);
      const id = h.connection.connectionId!;
      expect((await post(base, '/Product/_listen', { connectionId: id, type: 'hub' }, rita)).status).toBe(200);
      expect((await post(base, '/Order/_listen', { connectionId: id, type: 'hub' }, rita)).status).toBe(200);
      expect((await post(base, '/_rt/join', { connectionId: id, channel: 'marks' }, rita)).status).toBe(200);
      connections.push(h);
    }
    let mark = 0;
    /** Writes a product, then sends a marker; true when every connection got the marker but not the product. */
    const productStopped = async (): Promise<boolean> => {
      const product = (await post(bases[0], '/Product', { sku: `r${Math.random()}`.slice(0, 20), name: 'Lamp', price: 5 }, admin)).json.data[0];
      const marker = `m${++mark}`;
      expect((await post(bases[0], '/_rt/send', { channel: 'marks', body: marker }, admin)).status).toBe(200);
      await waitFor(() => connections.every((h) => h.messages.some((m) => m.data === marker)));
      return connections.every((h) => !h.changes.some((c) => c.ids[0] === product));
    };
    expect(await productStopped()).toBe(false);
    await cli(app, ['user', 'set-roles', app.dir, '--username', 'rita', '--roles', '']);
    const done = Date.now();
    await waitFor(productStopped, WITHIN_MS + 2000);
    expect(Date.now() - done).toBeLessThan(WITHIN_MS + 1000);
    // Order's LISTEN rule (_AUTHENTICATED_USER) still holds: its feed goes on, and the socket stays open.
    const customer = (await post(bases[0], '/Customer', { name: 'Rita', country: 'GB' }, admin)).json.data[0];
    const order = (await post(bases[0], '/Order', { title: 'lamp', customer }, rita)).json.data[0];
    await waitFor(() => connections.every((h) => h.changes.some((c) => c.ids[0] === order)));
    expect(connections.every((h) => h.closedAt() === null)).toBe(true);
  } finally {
    await Promise.all(hubs.map((h) => h.stop().catch(() => undefined)));
  }
}
