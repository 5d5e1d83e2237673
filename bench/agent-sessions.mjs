#!/usr/bin/env node
/**
 * Agent sessions benchmark (issue 24 §1): what an agent session costs one `svc serve` instance, with
 * the scripted model of bench/agent-model-server.mjs on loopback (a fixed delay, then a short
 * streamed answer).
 *
 * - memory: after a warm-up (20 sessions, a turn each), N raw WebSocket connections (Web PubSub
 *   JSON subprotocol) are opened, then each is connected to its own agent session (the app's
 *   `benchConnect` function, `ctx.agent.connect`, identity `bench-<i>`). The server's RSS is read
 *   from /proc before the sockets, after them, and after the sessions: per-session KiB is
 *   (after sessions − after sockets) ÷ N; the total figure includes the sockets.
 * - latency: ROUNDS rounds of 100 turns sent at once (a `message` frame on 100 session channels,
 *   answered by `turn-completed`): a turn's added latency is its time from send to `turn-completed`
 *   minus the model's fixed delay.
 *
 * Usage: `node bench/agent-sessions.mjs` (`npm run build` first). Environment: AGENT_SESSIONS
 * (default 1000), AGENT_CONCURRENT (100), AGENT_ROUNDS (5), MODEL_DELAY_MS (200), AGENT_CONNECT_BATCH (50), AGENT_CPU_PROF (a
 * folder: the server writes CPU profiles of its threads there). Prints a summary
 * and the figures as JSON. Linux only (/proc).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { cleanup, CLI, log, onCleanup, ROOT, runCli, startServer } from './processes.mjs';

const SESSIONS = Number(process.env.AGENT_SESSIONS ?? 1000);
const CONCURRENT = Number(process.env.AGENT_CONCURRENT ?? 100);
const ROUNDS = Number(process.env.AGENT_ROUNDS ?? 5);
const DELAY_MS = Number(process.env.MODEL_DELAY_MS ?? 200);
const WARM = 20;
/** Sessions connected at once (main before issue 24 §1 needed fewer: each connect started a worker thread). */
const CONNECT_BATCH = Number(process.env.AGENT_CONNECT_BATCH ?? 50);
const GOAL_TOTAL_KIB = 1024 * 1024;
const GOAL_P99_MS = 50;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (v) => Math.round(v * 10) / 10;
const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
};

function procStatus(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number.parseInt(line.slice(field.length + 1).trim(), 10);
}

/** A raw Web PubSub JSON client: resolves once `connected`; `waitFor(type)` awaits an agent frame. */
function openSocket(url) {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, 'json.webpubsub.azure.v1', { perMessageDeflate: false });
    const client = { ws, connectionId: '', channel: '', waiters: [] };
    client.waitFor = (type) => new Promise((resolve) => client.waiters.push({ type, resolve }));
    client.send = (data) => ws.send(JSON.stringify({ type: 'sendToGroup', group: client.channel, dataType: 'json', data, noEcho: true }));
    ws.on('error', fail);
    ws.on('message', (raw) => {
      const m = JSON.parse(raw.toString());
      if (m.type === 'system' && m.event === 'connected') {
        client.connectionId = m.connectionId;
        return ok(client);
      }
      if (m.type !== 'message' || typeof m.data !== 'string') return;
      const event = JSON.parse(m.data);
      const i = client.waiters.findIndex((w) => w.type === event.type);
      if (i >= 0) client.waiters.splice(i, 1)[0].resolve(event);
    });
  });
}

async function inBatches(count, size, fn) {
  const out = [];
  for (let i = 0; i < count; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, count - i) }, (_, j) => fn(i + j)))));
  return out;
}

async function main() {
  const appDir = mkdtempSync(join(tmpdir(), 'svc-bench-agent-'));
  onCleanup(() => rmSync(appDir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'bench/agent-app'), appDir, { recursive: true });
  const model = await startServer('model', [join(ROOT, 'bench/agent-model-server.mjs')], { DELAY_MS: String(DELAY_MS) }, /listening at (\S+)/);
  const env = { DATABASE_URL: `file:${join(appDir, 'data', 'bench.db')}`, SVC_LOG_LEVEL: 'warn', MODEL_URL: model.url };
  runCli(['generate', appDir], env);
  runCli(['migrate', appDir], env);
  runCli(['user', 'create', appDir, '--username', 'bench', '--password', 'bench-password-1'], env);
  const svc = await startServer(
    'svc',
    [...(process.env.AGENT_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.AGENT_CPU_PROF}`] : []), CLI, 'serve', appDir, '--port', '0'],
    env,
    /serving \S+ at (http:\/\/\S+)/,
  );
  const signIn = await fetch(`${svc.url}/_auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authority: 'password', username: 'bench', password: 'bench-password-1' }),
  });
  const headers = { authorization: `Bearer ${(await signIn.json()).access_token}` };
  const socket = async () => openSocket((await (await fetch(`${svc.url}/_rt/ws`, { headers })).json()).url);
  const connect = async (client, identityId) => {
    const t0 = performance.now();
    const r = await fetch(`${svc.url}/benchConnect`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ identityId, connectionId: client.connectionId }),
    });
    if (r.status !== 200) throw new Error(`benchConnect answered ${r.status}: ${await r.text()}`);
    client.channel = (await r.json()).channel;
    return performance.now() - t0;
  };
  const turn = async (client, text) => {
    const done = client.waitFor('turn-completed');
    const t0 = performance.now();
    client.send({ type: 'message', text });
    const event = await done;
    if (event.status !== 'completed') throw new Error(`a turn failed: ${JSON.stringify(event)}`);
    return performance.now() - t0 - DELAY_MS;
  };

  log(`agent sessions: warm-up (${WARM} sessions, a turn each)`);
  const warm = await inBatches(WARM, CONNECT_BATCH, async (i) => {
    const c = await socket();
    await connect(c, `warm-${i}`);
    return c;
  });
  await Promise.all(warm.map((c) => turn(c, 'warm up')));
  await sleep(2000);
  const pid = svc.pid;
  const rssBeforeKiB = procStatus(pid, 'VmRSS');
  const threadsBefore = procStatus(pid, 'Threads');

  log(`agent sessions: ${SESSIONS} sockets`);
  const clients = await inBatches(SESSIONS, 50, () => socket());
  await sleep(2000);
  const rssSocketsKiB = procStatus(pid, 'VmRSS');
  log(`agent sessions: ${SESSIONS} sessions`);
  const connectMs = await inBatches(SESSIONS, CONNECT_BATCH, (i) => connect(clients[i], `bench-${i}`));
  await sleep(3000);
  const rssAfterKiB = procStatus(pid, 'VmRSS');
  const threadsAfter = procStatus(pid, 'Threads');

  log(`agent sessions: ${ROUNDS} rounds of ${CONCURRENT} turns at once (model delay ${DELAY_MS} ms)`);
  await Promise.all(clients.slice(0, CONCURRENT).map((c) => turn(c, 'warm this session')));
  const added = [];
  for (let r = 0; r < ROUNDS; r++) added.push(...(await Promise.all(clients.slice(0, CONCURRENT).map((c, i) => turn(c, `question ${r}-${i}`)))));
  const rssEndKiB = procStatus(pid, 'VmRSS');
  for (const c of [...warm, ...clients]) c.ws.terminate();

  const results = {
    machine: { node: process.version, cpus: cpus().length },
    sessions: SESSIONS,
    memory: {
      rssBeforeKiB,
      rssAfterSocketsKiB: rssSocketsKiB,
      rssAfterSessionsKiB: rssAfterKiB,
      rssAfterTurnsKiB: rssEndKiB,
      perSocketKiB: round((rssSocketsKiB - rssBeforeKiB) / SESSIONS),
      perSessionKiB: round((rssAfterKiB - rssSocketsKiB) / SESSIONS),
      threadsBefore,
      threadsAfter,
    },
    connectMs: { p50: round(percentile(connectMs, 0.5)), p99: round(percentile(connectMs, 0.99)) },
    turns: {
      concurrent: CONCURRENT,
      rounds: ROUNDS,
      modelDelayMs: DELAY_MS,
      addedMs: { p50: round(percentile(added, 0.5)), p99: round(percentile(added, 0.99)), max: round(Math.max(...added)) },
    },
  };
  const m = results.memory;
  const t = results.turns.addedMs;
  process.stdout.write(
    `agent sessions: RSS ${rssBeforeKiB} KiB → ${rssAfterKiB} KiB with ${SESSIONS} connected sessions (${m.perSocketKiB} KiB a socket, ` +
      `${m.perSessionKiB} KiB a session; goal ≤ 1 GiB total: ${rssAfterKiB <= GOAL_TOTAL_KIB ? 'met' : 'MISSED'}); threads ${threadsBefore} → ${threadsAfter}\n` +
      `agent sessions: connect p50 ${results.connectMs.p50} ms; ${CONCURRENT} turns at once, added latency p50 ${t.p50} ms, p99 ${t.p99} ms, max ${t.max} ms ` +
      `(goal p99 ≤ ${GOAL_P99_MS} ms: ${t.p99 <= GOAL_P99_MS ? 'met' : 'MISSED'})\n`,
  );
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main()
  .catch((err) => {
    log(`agent sessions failed: ${err.stack ?? err}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
