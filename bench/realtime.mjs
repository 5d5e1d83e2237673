#!/usr/bin/env node
/**
 * The real-time section of `npm run bench` (bench/README.md "Real-time"): svc against a plain `ws`
 * broadcast server (bench/ws-broadcast-server.mjs) measured in the same run with the same client harness
 * (bench/rt-clients.mjs, its own process).
 *
 * 1. Fan-out: 1,000 subscribers joined to one channel over the Web PubSub JSON subprotocol, one
 *    publisher sending `sendToGroup` frames with a 200-byte JSON body at rising rates (3 s each). A rate
 *    is sustained when ≥ 99% of the deliveries arrive and p99 latency ≤ 250 ms; the figure is the
 *    highest sustained deliveries per second, with p50/p99 at that rate.
 * 2. Write to notification: 100 connections `_listen` on Order; sequential `POST /api/Order`; latency
 *    from just before each POST to each of its 100 notifications (svc only: the baseline has no data).
 * 3. Idle connections: 10,000 idle sockets; the server's RSS growth per connection, both servers.
 *
 * svc runs examples/shop on SQLite (the fan-out does not touch the database; the write path is one
 * INSERT) with `realtime.maxMessagesPerSecond` raised so the publisher is not throttled (and
 * `maxConnectionsPerAddress`, since every bench socket comes from loopback).
 * Env: BENCH_ONLY (keys `fanout`, `notify`, `idle`; default all three), BENCH_RT_SUBSCRIBERS (1000),
 * BENCH_RT_IDLE (10000), BENCH_RT_STEP_S (3). Writes bench/results/realtime.json.
 */
import { fork } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import WebSocket from 'ws';
import { CLI, ROOT, cleanup, log, onCleanup, runCli, startServer } from './processes.mjs';

const BENCH_DIR = import.meta.dirname;
const RESULTS = join(BENCH_DIR, 'results', 'realtime.json');
const int = (name, fallback) => (process.env[name] ? Number(process.env[name]) : fallback);
const SUBSCRIBERS = int('BENCH_RT_SUBSCRIBERS', 1000);
const IDLE = int('BENCH_RT_IDLE', 10_000);
const STEP_S = int('BENCH_RT_STEP_S', 3);
const LISTENERS = 100;
const WRITES = 200;
const RATES = [10, 20, 30, 40, 50, 60, 70, 85, 100, 120, 140, 170, 200, 250, 300, 400, 500, 650, 800, 1000, 1300, 1600, 2000, 2600, 3200]; // publisher messages per second
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const KNOWN = ['fanout', 'notify', 'idle'];
const wanted = (key) => (ONLY.length === 0 ? true : ONLY.includes(key));
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The client process and a request/answer helper over IPC. */
function clientProcess() {
  const child = fork(join(BENCH_DIR, 'rt-clients.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  onCleanup(() => child.kill('SIGKILL'));
  let queue = Promise.resolve();
  const rpc = (message) =>
    (queue = queue.then(
      () =>
        new Promise((ok, fail) => {
          child.once('message', (m) => (m.ok ? ok(m) : fail(new Error(m.error))));
          child.send(message);
        }),
    ));
  return { rpc, pid: child.pid };
}

/** CPU time (user + system) the process has used, ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

/** `count` connection URLs of a target (svc: one-time URLs from `_rt/ws`, fetched 50 at a time). */
async function urlsOf(target, count) {
  if (!target.api) return Array.from({ length: count }, () => target.ws);
  const urls = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Math.min(50, count - i);
    urls.push(
      ...(await Promise.all(Array.from({ length: batch }, async () => (await (await fetch(`${target.api}/_rt/ws`, { headers: target.headers })).json()).url))),
    );
  }
  return urls;
}

/** A publisher socket on `url`; resolves once connected. */
function publisher(url) {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, 'json.webpubsub.azure.v1', { perMessageDeflate: false });
    ws.once('message', () => ok(ws));
    ws.on('error', fail);
  });
}

/** Ack ids of the publisher: never reused on one connection (a repeat is answered `Duplicate`, not delivered). */
let ackId = 0;

/** Sends `rate` messages per second for `seconds` to `group`; returns how many were sent. */
async function publish(ws, group, rate, seconds) {
  const pad = 'x'.repeat(120);
  let sent = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  while (performance.now() < end) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) {
      const data = { t: now(), seq: sent, pad };
      ws.send(JSON.stringify({ type: 'sendToGroup', group, dataType: 'json', data, noEcho: true, ackId: ++ackId }));
    }
    await sleep(5);
  }
  return sent;
}

async function fanOut(target, clients) {
  const group = 'shop:bench';
  await clients.rpc({ cmd: 'open', urls: await urlsOf(target, SUBSCRIBERS), group });
  const pub = await publisher((await urlsOf(target, 1))[0]);
  const steps = [];
  for (const rate of RATES) {
    await clients.rpc({ cmd: 'reset' });
    const cpuBefore = cpuMs(target.pid);
    const sent = await publish(pub, group, rate, STEP_S);
    const expected = sent * SUBSCRIBERS;
    let stats;
    for (let waited = 0; waited < 3000; waited += 100) {
      await sleep(100);
      stats = await clients.rpc({ cmd: 'stats' });
      if (stats.received >= expected) break;
    }
    const step = {
      rate,
      deliveriesPerSecond: Math.round(stats.received / STEP_S),
      // Server CPU per 1,000 deliveries: what a delivery costs, whatever the client side could take.
      serverCpuMsPer1k: stats.received === 0 ? null : round(((cpuMs(target.pid) - cpuBefore) / stats.received) * 1000),
      delivered: stats.received / expected,
      p50Ms: round(stats.latencies.p50),
      p99Ms: round(stats.latencies.p99),
    };
    step.sustained = step.delivered >= 0.99 && step.p99Ms !== null && step.p99Ms <= 250;
    steps.push(step);
    log(
      `${target.name} fan-out ${rate}/s × ${SUBSCRIBERS}: ${step.deliveriesPerSecond} deliveries/s, ${(step.delivered * 100).toFixed(1)}% delivered, p50 ${step.p50Ms} ms, p99 ${step.p99Ms} ms, server CPU ${step.serverCpuMsPer1k} ms per 1,000 deliveries`,
    );
    if (!step.sustained) break;
    await sleep(500);
  }
  pub.terminate();
  await clients.rpc({ cmd: 'close' });
  const best = steps.filter((s) => s.sustained).at(-1) ?? null;
  return { steps, best };
}

async function writeToNotification(target, clients, customer) {
  const { connectionIds } = await clients.rpc({ cmd: 'open', urls: await urlsOf(target, LISTENERS) });
  const post = (path, body) =>
    fetch(target.api + path, { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  for (const connectionId of connectionIds) {
    const r = await post('/Order/_listen', { connectionId, type: 'ws' });
    if (r.status !== 200) throw new Error(`_listen answered ${r.status}: ${await r.text()}`);
  }
  const latencies = [];
  const postMs = [];
  for (let i = 0; i < WRITES; i++) {
    await clients.rpc({ cmd: 'reset' });
    const t0 = now();
    const r = await post('/Order', { title: `bench ${i}`, customer });
    postMs.push(now() - t0);
    if (r.status !== 201) throw new Error(`POST /Order answered ${r.status}`);
    let arrivals = [];
    for (let waited = 0; arrivals.length < LISTENERS && waited < 5000; waited += 2) {
      arrivals = (await clients.rpc({ cmd: 'arrivals' })).arrivals;
      if (arrivals.length < LISTENERS) await sleep(2);
    }
    if (arrivals.length < LISTENERS) throw new Error(`write ${i}: ${arrivals.length} of ${LISTENERS} notifications arrived`);
    latencies.push(...arrivals.map((a) => a - t0));
  }
  await clients.rpc({ cmd: 'close' });
  const sorted = Float64Array.from(latencies).sort();
  const posts = Float64Array.from(postMs).sort();
  const p = (a, q) => round(a[Math.min(a.length - 1, Math.floor(a.length * q))]);
  return { writes: WRITES, listeners: LISTENERS, p50Ms: p(sorted, 0.5), p99Ms: p(sorted, 0.99), postP50Ms: p(posts, 0.5), postP99Ms: p(posts, 0.99) };
}

async function idleCost(target, clients) {
  await clients.rpc({ cmd: 'open', urls: await urlsOf(target, 200) }); // warm up code paths
  await sleep(2000);
  const before = rssKiB(target.pid);
  await clients.rpc({ cmd: 'open', urls: await urlsOf(target, IDLE) });
  await sleep(3000);
  const after = rssKiB(target.pid);
  await clients.rpc({ cmd: 'close' });
  const perConnectionKiB = round((after - before) / IDLE);
  log(`${target.name} idle: ${IDLE} connections, RSS ${before} → ${after} KiB: ${perConnectionKiB} KiB per connection`);
  return { connections: IDLE, rssBeforeKiB: before, rssAfterKiB: after, perConnectionKiB };
}

const round = (v) => (v === null || v === undefined ? null : Math.round(v * 10) / 10);

async function main() {
  const unknown = ONLY.filter((k) => !KNOWN.includes(k));
  if (ONLY.length > 0 && unknown.length === ONLY.length) return; // BENCH_ONLY picked HTTP endpoints only
  const appDir = mkdtempSync(join(tmpdir(), 'svc-bench-rt-'));
  onCleanup(() => rmSync(appDir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'examples/shop'), appDir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
  const svcJson = JSON.parse(readFileSync(join(appDir, 'svc.json'), 'utf8'));
  writeFileSync(
    join(appDir, 'svc.json'),
    JSON.stringify({ ...svcJson, realtime: { maxMessagesPerSecond: 1_000_000, sendBufferBytes: 16 * 1024 * 1024, maxConnectionsPerAddress: 1_000_000 } }),
  );
  const env = { DATABASE_URL: `file:${join(appDir, 'data', 'bench.db')}`, SVC_LOG_LEVEL: 'warn' };
  runCli(['generate', appDir], env);
  runCli(['migrate', appDir], env);
  runCli(['user', 'create', appDir, '--username', 'bench', '--password', 'bench-password-1'], env);
  const svc = await startServer('svc', [CLI, 'serve', appDir, '--port', '0'], env, /serving \S+ at (http:\/\/\S+)/);
  const base = await startServer('ws', [join(BENCH_DIR, 'ws-broadcast-server.mjs')], { PORT: '0' }, /listening at (ws:\/\/\S+)/);
  const signIn = await fetch(`${svc.url}/_auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authority: 'password', username: 'bench', password: 'bench-password-1' }),
  });
  const headers = { authorization: `Bearer ${(await signIn.json()).access_token}` };
  const targets = {
    svc: { name: 'svc', api: svc.url, headers, pid: svc.pid },
    ws: { name: 'ws', ws: base.url, pid: base.pid },
  };
  const clients = clientProcess();
  const results = {
    machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown' },
    subscribers: SUBSCRIBERS,
    stepSeconds: STEP_S,
  };

  if (wanted('fanout')) {
    results.fanOut = {};
    // Interleaved: svc, the baseline, svc again; the better svc run counts (the first warms the JIT).
    const first = await fanOut(targets.svc, clients);
    results.fanOut.ws = await fanOut(targets.ws, clients);
    const second = await fanOut(targets.svc, clients);
    results.fanOut.svc = (second.best?.deliveriesPerSecond ?? 0) >= (first.best?.deliveriesPerSecond ?? 0) ? second : first;
    const s = results.fanOut.svc.best?.deliveriesPerSecond ?? 0;
    const w = results.fanOut.ws.best?.deliveriesPerSecond ?? 0;
    results.fanOut.ratio = w === 0 ? null : round(s / w);
  }
  if (wanted('notify')) {
    const customer = (
      await (
        await fetch(`${svc.url}/Customer`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Bench', country: 'NO' }),
        })
      ).json()
    ).data[0];
    results.writeToNotification = await writeToNotification(targets.svc, clients, customer);
  }
  if (wanted('idle')) results.idle = { svc: await idleCost(targets.svc, clients), ws: await idleCost(targets.ws, clients) };

  const out = (s) => process.stdout.write(`${s}\n`);
  out(`\nsvc real-time bench: ${SUBSCRIBERS} subscribers, ${STEP_S} s per rate; node ${results.machine.node}, ${results.machine.cpus} CPUs`);
  if (results.fanOut) {
    for (const [name, r] of Object.entries({ svc: results.fanOut.svc, ws: results.fanOut.ws })) {
      const b = r.best;
      out(
        `fan-out ${name.padEnd(4)} best sustained: ${b ? `${b.rate} msg/s → ${b.deliveriesPerSecond} deliveries/s, p50 ${b.p50Ms} ms, p99 ${b.p99Ms} ms, server CPU ${b.serverCpuMsPer1k} ms per 1,000 deliveries` : 'none'}`,
      );
    }
    out(`fan-out svc / ws deliveries per second: ${results.fanOut.ratio}`);
  }
  if (results.writeToNotification) {
    const n = results.writeToNotification;
    out(
      `write → notification (${n.listeners} listeners, ${n.writes} POSTs): p50 ${n.p50Ms} ms, p99 ${n.p99Ms} ms (the POST itself: p50 ${n.postP50Ms} ms, p99 ${n.postP99Ms} ms)`,
    );
  }
  if (results.idle) out(`idle connections (${IDLE}): svc ${results.idle.svc.perConnectionKiB} KiB each, ws ${results.idle.ws.perConnectionKiB} KiB each`);
  results.date = new Date().toISOString();
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  out(`results written to ${RESULTS}`);
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  exitCode = 1;
  process.stderr.write(`bench: FAILED: ${err?.stack ?? err}\n`);
} finally {
  await cleanup();
}
process.exit(exitCode);
