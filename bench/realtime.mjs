#!/usr/bin/env node
/**
 * The real-time section of `npm run bench` (bench/README.md "Real-time"): svc against a plain `ws`
 * broadcast server (bench/ws-broadcast-server.mjs) measured in the same run with the same client harness
 * (bench/rt-clients.mjs, its own process).
 *
 * 1. Fan-out: 10,000 subscribers joined to one channel over the Web PubSub JSON subprotocol, one
 *    publisher sending `sendToGroup` frames with a 200-byte JSON body at rising rates (3 s each). A rate
 *    is sustained when ≥ 99% of the deliveries arrive and p99 latency ≤ 250 ms (0.1 ms per subscriber
 *    above 2,500: 1 s at 10,000; BENCH_RT_MAX_P99_MS); the figure is the highest sustained deliveries
 *    per second, with p50/p99 at that rate.
 * 2. Write to notification: 100 connections `_listen` on Order; sequential `POST /api/Order`; latency
 *    from just before each POST to each of its 100 notifications (svc only: the baseline has no data).
 * 3. Idle connections: 20,000 idle sockets (fewer when the server's file-descriptor limit does not
 *    allow them: the run says so); the server's RSS growth per connection, both servers.
 * 4. The Redis hop (`redis`): two svc instances on a private `redis-server`, 100 subscribers on B; the
 *    same publisher rate sent on B (local) and on A (one hop through Redis pub/sub); the latency of
 *    each, and the difference at p50 and p99.
 *
 * The subscribers are spread over `BENCH_RT_CLIENT_PROCESSES` client processes (default: one per 8,000
 * sockets), each with its own file-descriptor limit; their latencies are merged as 0.1 ms histograms.
 *
 * svc runs examples/shop on SQLite (the fan-out does not touch the database; the write path is one
 * INSERT) with `realtime.maxMessagesPerSecond` raised so the publisher is not throttled (and
 * `maxConnectionsPerAddress`, since every bench socket comes from loopback).
 * Env: BENCH_ONLY (keys `fanout`, `notify`, `idle`, `redis`; default all four), BENCH_RT_SUBSCRIBERS
 * (10000), BENCH_RT_IDLE (20000), BENCH_RT_STEP_S (3), BENCH_RT_CLIENT_PROCESSES. Writes
 * bench/results/realtime.json.
 */
import { execFileSync, fork, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import WebSocket from 'ws';
import { CLI, ROOT, cleanup, log, onCleanup, runCli, startServer } from './processes.mjs';

const BENCH_DIR = import.meta.dirname;
const RESULTS = join(BENCH_DIR, 'results', 'realtime.json');
const int = (name, fallback) => (process.env[name] ? Number(process.env[name]) : fallback);
const SUBSCRIBERS = int('BENCH_RT_SUBSCRIBERS', 10_000);
const IDLE = int('BENCH_RT_IDLE', 20_000);
const CLIENT_PROCESSES = int('BENCH_RT_CLIENT_PROCESSES', Math.max(1, Math.ceil(Math.max(SUBSCRIBERS, IDLE) / 8000)));
/** p99 bound of a sustained fan-out rate: 250 ms, or 0.1 ms per subscriber (writing one message to 10,000 sockets takes ~100 ms of one core). */
const MAX_P99_MS = int('BENCH_RT_MAX_P99_MS', Math.max(250, SUBSCRIBERS / 10));
const HOP_SUBSCRIBERS = 100;
const HOP_RATE = 200;
const STEP_S = int('BENCH_RT_STEP_S', 3);
const LISTENERS = 100;
const WRITES = 200;
const RATES = [1, 2, 3, 5, 7, 10, 20, 30, 40, 50, 60, 70, 85, 100, 120, 140, 170, 200, 250, 300, 400, 500, 650, 800, 1000, 1300, 1600, 2000, 2600, 3200]; // publisher messages per second
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const KNOWN = ['fanout', 'notify', 'idle', 'redis'];
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

/**
 * `count` client processes behind one `rpc`: `open` spreads the URLs over them, `stats` merges their
 * histograms, `arrivals` concatenates, the rest goes to all.
 */
function clientPool(count) {
  const members = Array.from({ length: count }, () => clientProcess());
  const all = (message) => Promise.all(members.map((m) => m.rpc(message)));
  const rpc = async (message) => {
    if (message.cmd === 'open') {
      const parts = members.map(() => []);
      message.urls.forEach((u, i) => parts[i % count].push(u));
      const answers = await Promise.all(members.map((m, i) => (parts[i].length === 0 ? { connectionIds: [] } : m.rpc({ ...message, urls: parts[i] }))));
      return { ok: true, connectionIds: answers.flatMap((a) => a.connectionIds) };
    }
    const answers = await all(message);
    if (message.cmd === 'stats') {
      const histogram = new Map();
      for (const a of answers) for (const [b, n] of Object.entries(a.histogram)) histogram.set(Number(b), (histogram.get(Number(b)) ?? 0) + n);
      const received = answers.reduce((sum, a) => sum + a.received, 0);
      return { ok: true, received, latencies: percentilesOf(histogram) };
    }
    if (message.cmd === 'arrivals') return { ok: true, arrivals: answers.flatMap((a) => a.arrivals) };
    return { ok: true };
  };
  return { rpc };
}

/** p50, p99 and max (ms) of a 0.1 ms histogram. */
function percentilesOf(histogram) {
  const buckets = [...histogram.entries()].sort((x, y) => x[0] - y[0]);
  const total = buckets.reduce((sum, [, n]) => sum + n, 0);
  const at = (q) => {
    if (total === 0) return null;
    const rank = Math.min(total - 1, Math.floor(total * q));
    let seen = 0;
    for (const [b, n] of buckets) {
      seen += n;
      if (seen > rank) return b / 10;
    }
    return buckets.at(-1)[0] / 10;
  };
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** The soft file-descriptor limit of a process (Linux), or Infinity. */
function openFilesOf(pid) {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
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
    step.sustained = step.delivered >= 0.99 && step.p99Ms !== null && step.p99Ms <= MAX_P99_MS;
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
  const WARM = 200;
  const limit = openFilesOf(target.pid);
  // Room for the warm-up sockets and the server's own descriptors (database, Redis, files).
  const count = Math.min(IDLE, limit - WARM - 100);
  if (count < IDLE)
    log(
      `${target.name} idle: the server's file-descriptor limit is ${limit}: measuring ${count} connections, not ${IDLE} (docs/realtime.md "Many connections")`,
    );
  await clients.rpc({ cmd: 'open', urls: await urlsOf(target, WARM) }); // warm up code paths
  // The one-time URLs are fetched before the first reading: what minting them costs is not a connection's.
  const urls = await urlsOf(target, count);
  await sleep(2000);
  const before = rssKiB(target.pid);
  await clients.rpc({ cmd: 'open', urls });
  await sleep(3000);
  const after = rssKiB(target.pid);
  await clients.rpc({ cmd: 'close' });
  const perConnectionKiB = round((after - before) / count);
  log(`${target.name} idle: ${count} connections, RSS ${before} → ${after} KiB: ${perConnectionKiB} KiB per connection`);
  return { connections: count, asked: IDLE, fileDescriptorLimit: limit, rssBeforeKiB: before, rssAfterKiB: after, perConnectionKiB };
}

/** A free TCP port on loopback. */
function freePort() {
  return new Promise((ok) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** One publisher step on `url` to `group` at HOP_RATE; the subscribers' latency. */
async function hopStep(url, clients, group) {
  const pub = await publisher(url);
  await clients.rpc({ cmd: 'reset' });
  const sent = await publish(pub, group, HOP_RATE, STEP_S);
  let stats;
  for (let waited = 0; waited < 3000; waited += 100) {
    await sleep(100);
    stats = await clients.rpc({ cmd: 'stats' });
    if (stats.received >= sent * HOP_SUBSCRIBERS) break;
  }
  pub.terminate();
  return { delivered: round(stats.received / (sent * HOP_SUBSCRIBERS)), p50Ms: round(stats.latencies.p50), p99Ms: round(stats.latencies.p99) };
}

/** The Redis hop: two svc instances on a private redis-server (see the module notes). */
async function redisHop(appDir, env, headers, clients) {
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  onCleanup(() => redis.kill('SIGKILL'));
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'pipe' });
      break;
    } catch {
      await sleep(50);
    }
  }
  const redisEnv = { ...env, REDIS_URL: `redis://127.0.0.1:${port}` };
  const a = await startServer('svc-a', [CLI, 'serve', appDir, '--port', '0'], redisEnv, /serving \S+ at (http:\/\/\S+)/);
  const b = await startServer('svc-b', [CLI, 'serve', appDir, '--port', '0'], redisEnv, /serving \S+ at (http:\/\/\S+)/);
  const targetA = { name: 'svc-a', api: a.url, headers, pid: a.pid };
  const targetB = { name: 'svc-b', api: b.url, headers, pid: b.pid };
  const group = 'shop:hop';
  await clients.rpc({ cmd: 'open', urls: await urlsOf(targetB, HOP_SUBSCRIBERS), group });
  await hopStep((await urlsOf(targetB, 1))[0], clients, group); // warm-up
  const local = await hopStep((await urlsOf(targetB, 1))[0], clients, group);
  const remote = await hopStep((await urlsOf(targetA, 1))[0], clients, group);
  await clients.rpc({ cmd: 'close' });
  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  const result = {
    subscribers: HOP_SUBSCRIBERS,
    rate: HOP_RATE,
    local,
    remote,
    addedP50Ms: round(remote.p50Ms - local.p50Ms),
    addedP99Ms: round(remote.p99Ms - local.p99Ms),
  };
  log(
    `redis hop (${HOP_SUBSCRIBERS} subscribers on B, ${HOP_RATE} msg/s): sent on B p50 ${local.p50Ms} ms p99 ${local.p99Ms} ms; sent on A p50 ${remote.p50Ms} ms p99 ${remote.p99Ms} ms; added p50 ${result.addedP50Ms} ms, p99 ${result.addedP99Ms} ms`,
  );
  return result;
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
  const clients = clientPool(CLIENT_PROCESSES);
  const results = {
    machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', loadAverageAtStart: loadavg().map(round) },
    clientProcesses: CLIENT_PROCESSES,
    subscribers: SUBSCRIBERS,
    maxP99Ms: MAX_P99_MS,
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
  if (wanted('redis')) results.redisHop = await redisHop(appDir, env, headers, clients);

  const out = (s) => process.stdout.write(`${s}\n`);
  out(
    `\nsvc real-time bench: ${SUBSCRIBERS} subscribers over ${CLIENT_PROCESSES} client processes, ${STEP_S} s per rate, sustained at p99 ≤ ${MAX_P99_MS} ms; node ${results.machine.node}, ${results.machine.cpus} CPUs, load average at start ${results.machine.loadAverageAtStart.join(' ')}`,
  );
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
  if (results.idle) {
    const { svc: si, ws: wi } = results.idle;
    out(
      `idle connections: svc ${si.perConnectionKiB} KiB each at ${si.connections}, ws ${wi.perConnectionKiB} KiB each at ${wi.connections} (asked ${IDLE}; server fd limit ${si.fileDescriptorLimit})`,
    );
  }
  if (results.redisHop) {
    const h = results.redisHop;
    out(
      `redis hop (${h.subscribers} subscribers, ${h.rate} msg/s): added p50 ${h.addedP50Ms} ms, p99 ${h.addedP99Ms} ms (local p50 ${h.local.p50Ms}/p99 ${h.local.p99Ms}, via redis p50 ${h.remote.p50Ms}/p99 ${h.remote.p99Ms})`,
    );
  }
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
