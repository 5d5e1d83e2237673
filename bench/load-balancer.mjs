#!/usr/bin/env node
/**
 * Three instances behind HAProxy losing one (issue 24 §3; `npm run bench:lb`, bench/README.md): three
 * `svc serve` processes of examples/shop on a fresh PostgreSQL database and a private `redis-server`,
 * HAProxy in front (bench/haproxy.mjs, the configuration of docs/deploy.md; Debian's package is installed
 * when missing, as for the tests: scripts/debian-package.mjs). Through HAProxy only:
 * `BENCH_LB_CLIENTS` WebSocket clients (half the official Web PubSub client, half the official
 * SignalR client; default 1,000) in one channel, and HTTP load (`BENCH_LB_WORKERS` loops of two reads
 * and one acknowledged write). Then one instance is SIGKILLed. Reported (JSON on stdout):
 * - RSS of each instance and of HAProxy before and after the clients connected, per idle connection;
 * - failed requests (only those in flight at the kill may fail) and acknowledged writes missing from
 *   the database (must be 0);
 * - reconnect times of the clients the dead instance held (kill → connected again and back in the
 *   channel: p50, p99, max; and from the client's own disconnect event), and whether a message sent
 *   afterwards reached every client;
 * - this process's event-loop delay around the kill (the clients and the load share it: a late timer
 *   here lengthens every time measured);
 * - HTTP throughput (requests/s) in the 5 s before the kill and in 5 s from 3 s after it.
 * Exits 1 when a request not in flight failed, a write is missing, or a client did not come back.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { WebPubSubClient, WebPubSubJsonProtocol } from '@azure/web-pubsub-client';
import { HubConnectionBuilder, HttpTransportType, LogLevel } from '@microsoft/signalr';
import { createDatabase } from './database.mjs';
import { HAPROXY_PROGRAM, haproxyConfig } from './haproxy.mjs';
import { CLI, ROOT, cleanup, log, onCleanup, runCli, startServer } from './processes.mjs';
import { findOrInstall } from '../scripts/debian-package.mjs';

const CLIENTS = Number(process.env.BENCH_LB_CLIENTS ?? 1000);
const WORKERS = Number(process.env.BENCH_LB_WORKERS ?? 16);
const PG_URL = process.env.BENCH_PG_URL ?? process.env.SVC_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

const freePort = () =>
  new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

/** Resident set size of a process, KiB (Linux `/proc/<pid>/status`). */
const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

/** Starts a child and registers its kill on cleanup. */
function spawnChild(bin, args) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  onCleanup(
    () =>
      new Promise((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) return ok();
        child.once('exit', ok);
        child.kill('SIGTERM');
      }),
  );
  return { child, output: () => out };
}

async function waitUntil(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** `show stat` on HAProxy's admin socket: each server's state by name. */
async function serverStates(socketPath) {
  const { connect } = await import('node:net');
  const csv = await new Promise((ok, fail) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('error', fail);
    socket.on('end', () => ok(answer));
    socket.write('show stat\n');
  });
  const states = {};
  for (const row of csv.split('\n').slice(1)) {
    const cells = row.split(',');
    if (cells[0] === 'svc' && cells[1] && cells[1] !== 'BACKEND' && cells[1] !== 'FRONTEND') states[cells[1]] = cells[17];
  }
  return states;
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : null);
const round = (v) => (v === null ? null : Math.round(v));

async function main() {
  // Debian's haproxy (SVC_TEST_HAPROXY first), installed when missing and this process may, as the tests do.
  const haproxyBin = findOrInstall({ ...HAPROXY_PROGRAM, withoutIt: 'the load-balancer bench cannot run', who: 'svc bench' });
  if (!haproxyBin) throw new Error('HAProxy is not installed: apt-get install -y haproxy');
  const appDir = mkdtempSync(join(tmpdir(), 'svc-bench-lb-'));
  onCleanup(() => rmSync(appDir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'examples/shop'), appDir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
  // Every client reaches the instances from HAProxy's address: the per-address limit must allow them all.
  const svcJson = JSON.parse(readFileSync(join(appDir, 'svc.json'), 'utf8'));
  writeFileSync(join(appDir, 'svc.json'), JSON.stringify({ ...svcJson, realtime: { maxConnectionsPerAddress: 100_000 } }));
  const db = await createDatabase(PG_URL);
  const redisPort = await freePort();
  const redis = spawnChild('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  const env = { DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${redisPort}`, SVC_LOG_LEVEL: 'warn', SVC_DRAIN_SECONDS: '2.5' };
  runCli(['generate', appDir], env);
  runCli(['migrate', appDir], env);
  runCli(['user', 'create', appDir, '--username', 'bench', '--password', 'bench-password-1'], env);
  await waitUntil(() => redis.child.pid !== undefined, 5000, 'redis');
  const servers = await Promise.all([0, 1, 2].map((i) => startServer(`s${i}`, [CLI, 'serve', appDir, '--port', '0'], env, /serving \S+ at (http:\/\/\S+)/)));

  const lbPort = await freePort();
  const socketPath = join(appDir, 'haproxy.sock');
  writeFileSync(
    join(appDir, 'haproxy.cfg'),
    haproxyConfig(
      `127.0.0.1:${lbPort}`,
      servers.map((s) => ({ name: s.name, address: new URL(s.url).host })),
      socketPath,
      Math.max(4000, CLIENTS * 3),
    ),
  );
  const haproxy = spawnChild(haproxyBin, ['-db', '-f', join(appDir, 'haproxy.cfg')]);
  await waitUntil(
    async () => {
      if (haproxy.child.exitCode !== null) throw new Error(`haproxy exited: ${haproxy.output()}`);
      const states = await serverStates(socketPath).catch(() => ({}));
      return servers.every((s) => states[s.name] === 'UP');
    },
    20_000,
    'HAProxy sees every instance up',
  );
  const api = `http://127.0.0.1:${lbPort}/api`;
  const signIn = await fetch(`${api}/_auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authority: 'password', username: 'bench', password: 'bench-password-1' }),
  });
  const headers = { authorization: `Bearer ${(await signIn.json()).access_token}` };
  const post = (path, body) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const customer = (await (await post('/Customer', { name: 'Bench', country: 'NO' })).json()).data[0];

  // Memory before the clients.
  const rssBefore = { servers: servers.map((s) => rssKiB(s.pid)), haproxy: rssKiB(haproxy.child.pid) };

  // The clients: half Web PubSub, half SignalR, opened in batches of 100.
  const clients = [];
  const wpsClient = async () => {
    const c = { kind: 'wps', connects: [], drops: [], messages: new Set() };
    const client = new WebPubSubClient(
      { getClientAccessUrl: async () => (await (await fetch(`${api}/_rt/ws`, { headers })).json()).url },
      { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 }, reconnectRetryOptions: { retryDelayInMs: 100, maxRetryDelayInMs: 1000 } },
    );
    // Rejoined by the client itself after `connected`; counted back once the group is joined again.
    client.on('connected', (e) => c.connects.push({ id: e.connectionId, at: now() }));
    client.on('group-message', (e) => c.messages.add(e.message.data));
    client.on('disconnected', () => c.drops.push(now()));
    c.stop = () => client.stop();
    await client.start();
    await client.joinGroup('shop:lb');
    return c;
  };
  const hubClient = async () => {
    const c = { kind: 'hub', connects: [], drops: [], messages: new Set() };
    const info = await (await fetch(`${api}/_rt/hub`, { headers })).json();
    const hub = new HubConnectionBuilder()
      .withUrl(info.url, { accessTokenFactory: () => info.accessToken, transport: HttpTransportType.WebSockets })
      .withAutomaticReconnect([0, 200, 500, 1000, 2000, 2000, 2000, 2000])
      .configureLogging(LogLevel.None)
      .build();
    hub.on('message', (m) => c.messages.add(m.data));
    hub.onreconnecting(() => c.drops.push(now()));
    hub.onreconnected((id) => void hub.invoke('join', 'lb').then(() => c.connects.push({ id, at: now() })));
    c.stop = () => hub.stop().catch(() => {});
    await hub.start();
    await hub.invoke('join', 'lb');
    c.connects.push({ id: hub.connectionId, at: now() });
    return c;
  };
  onCleanup(() => Promise.all(clients.map((c) => c.stop())));
  const opening = now();
  for (let i = 0; i < CLIENTS; i += 100) {
    const batch = Array.from({ length: Math.min(100, CLIENTS - i) }, (_, j) => ((i + j) % 2 === 0 ? wpsClient() : hubClient()));
    clients.push(...(await Promise.all(batch)));
  }
  const openSeconds = (now() - opening) / 1000;
  await sleep(3000); // idle: let allocation settle before reading RSS
  const rssIdle = { servers: servers.map((s) => rssKiB(s.pid)), haproxy: rssKiB(haproxy.child.pid) };
  log(`${clients.length} clients connected in ${openSeconds.toFixed(1)} s`);

  // HTTP load: reads and acknowledged writes, never retried.
  const outcomes = [];
  const acked = [];
  let running = true;
  let n = 0;
  const one = async (i) => {
    const start = now();
    const kind = i % 3;
    try {
      const r =
        kind === 2
          ? await post('/Order', { title: `lb ${i}`, customer })
          : await fetch(`${api}/${kind === 0 ? 'Product?pageSize=5' : 'Order?pageSize=5&sortBy=placedAt-'}`, { headers });
      const body = await r.text();
      const ok = r.status === (kind === 2 ? 201 : 200);
      if (ok && kind === 2) acked.push(...JSON.parse(body).data);
      outcomes.push({ start, end: now(), ok, what: `${r.status}` });
    } catch (e) {
      outcomes.push({ start, end: now(), ok: false, what: `${e.message}${e.cause ? `: ${e.cause.message}` : ''}` });
    }
  };
  const loops = Array.from({ length: WORKERS }, async () => {
    while (running) await one(n++);
  });
  await sleep(7000);

  // How late this process's own timers run around the kill: part of every time measured here.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const victim = servers[0];
  const killedAt = now();
  const gone = new Promise((ok) => victim.child.once('exit', () => ok(now())));
  victim.child.kill('SIGKILL');
  const goneAt = await gone;
  await waitUntil(async () => (await serverStates(socketPath)).s0 === 'DOWN', 10_000, 'HAProxy marks the dead instance down');
  const downAt = now();
  await sleep(8000);
  running = false;
  await Promise.all(loops);
  loopDelay.disable();

  // Clients that were on the dead instance: those that connected again after the kill.
  const moved = clients.filter((c) => c.connects.some((x) => x.at > killedAt));
  const backAt = (c) => c.connects.find((x) => x.at > killedAt).at;
  const reconnectMs = moved.map((c) => backAt(c) - killedAt).sort((a, b) => a - b);
  const fromDropMs = moved
    .filter((c) => c.drops.some((d) => d > killedAt))
    .map((c) => backAt(c) - c.drops.find((d) => d > killedAt))
    .sort((a, b) => a - b);
  const marker = `after ${Date.now()}`;
  await post('/_rt/send', { channel: 'lb', body: marker });
  let reached = 0;
  await waitUntil(
    () => {
      reached = clients.filter((c) => c.messages.has(marker)).length;
      return reached === clients.length;
    },
    10_000,
    'the message after the kill reaches every client',
  ).catch((e) => log(e.message));

  const failed = outcomes.filter((o) => !o.ok);
  const failedAfter = failed.filter((o) => o.start > goneAt);
  const rate = (from, to) => Math.round(outcomes.filter((o) => o.end >= from && o.end < to).length / ((to - from) / 1000));
  const check = new pg.Client({ connectionString: db.url });
  await check.connect();
  const found = (await check.query('SELECT count(*)::int AS n FROM "Order" WHERE id = ANY($1::uuid[])', [acked])).rows[0].n;
  await check.end();

  const perConnection = (before, after, count) => Math.round(((after - before) * 1024) / count);
  const held = clients.length / servers.length;
  const results = {
    machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown' },
    clients: { total: clients.length, wps: clients.filter((c) => c.kind === 'wps').length, hub: clients.filter((c) => c.kind === 'hub').length, openSeconds },
    memory: {
      serverRssMiB: { before: rssBefore.servers.map((k) => Math.round(k / 1024)), idle: rssIdle.servers.map((k) => Math.round(k / 1024)) },
      serverBytesPerIdleConnection: perConnection(
        rssBefore.servers.reduce((a, b) => a + b, 0),
        rssIdle.servers.reduce((a, b) => a + b, 0),
        clients.length,
      ),
      perInstanceConnections: Math.round(held),
      haproxyRssMiB: { before: Math.round(rssBefore.haproxy / 1024), idle: Math.round(rssIdle.haproxy / 1024) },
      haproxyBytesPerConnection: perConnection(rssBefore.haproxy, rssIdle.haproxy, clients.length),
    },
    kill: {
      processGoneMs: Math.round(goneAt - killedAt),
      markedDownMs: Math.round(downAt - killedAt),
      requests: outcomes.length,
      failed: failed.length,
      failedNotInFlight: failedAfter.length,
      failures: [...new Set(failed.map((o) => o.what))],
      ackedWrites: acked.length,
      ackedWritesMissing: acked.length - found,
    },
    reconnect: {
      clients: moved.length,
      p50Ms: round(percentile(reconnectMs, 0.5)),
      p99Ms: round(percentile(reconnectMs, 0.99)),
      maxMs: round(reconnectMs.at(-1) ?? null),
      fromDisconnectP50Ms: round(percentile(fromDropMs, 0.5)),
      fromDisconnectP99Ms: round(percentile(fromDropMs, 0.99)),
      messageAfterReachedClients: reached,
    },
    benchEventLoopDelayMs: { p50: round(loopDelay.percentile(50) / 1e6), p99: round(loopDelay.percentile(99) / 1e6), max: round(loopDelay.max / 1e6) },
    throughput: { beforeRps: rate(killedAt - 5000, killedAt), afterRps: rate(killedAt + 3000, killedAt + 8000) },
  };
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  const ok = failedAfter.length === 0 && results.kill.ackedWritesMissing === 0 && reached === clients.length;
  if (!ok) log('FAILED: a request not in flight failed, a write is missing, or a client did not come back');
  return ok;
}

main()
  .then(async (ok) => {
    await cleanup();
    process.exit(ok ? 0 : 1);
  })
  .catch(async (err) => {
    log(`failed: ${err.stack ?? err.message}`);
    await cleanup();
    process.exit(1);
  });
