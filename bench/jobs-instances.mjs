#!/usr/bin/env node
/**
 * Jobs on three instances, full size (issue 33 "three instances"; the fast version is
 * test/e2e/jobs-instances.test.ts): three `svc serve` processes of the fixture
 * test/fixtures/apps/jobs-instances (bench/jobs-app.mjs) on one fresh PostgreSQL database and a
 * private `redis-server`, `SVC_JOBS_STALE_LOCK_MS=1500`.
 * 1. once: `BENCH_JOBS_CHANGES` (default 10,000) Tasks created in bulks of 10 round-robin over the
 *    three; every event must run exactly once (one Seen row per Task); reported: write time, time
 *    until the last delivery, deliveries/s over the three, runs per instance (log store).
 * 2. kill: as many Tasks again with runs of 20 ms: half written over the three, one instance
 *    SIGKILLed once 1,000 of them ran (a tenth when fewer), the other half written over the two left; nothing may be
 *    lost, duplicates at most the jobs locked at the kill; reported: duplicates, locked at the kill,
 *    kill → the dead instance's jobs handed back (no job locked before the kill is still locked).
 * 3. schedule: the killed instance started again; `everyTwo` (every 2 s) watched for
 *    `BENCH_JOBS_SCHEDULE_S` (default 30) seconds: each tick must run once, none missed.
 * Prints the figures as JSON on stdout; exits 1 when an event was lost, ran twice in step 1, or a
 * tick ran twice or was missed. `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { cleanup, log, onCleanup } from './processes.mjs';
import { countOf, graphileJobs, postRows, prepareJobsApp, select, serveApp, sleep, stopServer, until } from './jobs-app.mjs';

const CHANGES = Number(process.env.BENCH_JOBS_CHANGES ?? 10_000);
const SCHEDULE_S = Number(process.env.BENCH_JOBS_SCHEDULE_S ?? 30);
const BULK = 10;
/** Bulks in flight at once. */
const PARALLEL = 6;

const freePort = () =>
  new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  onCleanup(() => child.kill('SIGTERM'));
  await sleep(300);
  return `redis://127.0.0.1:${port}`;
}

/** A served instance whose stdout (pino lines at warn and above) is kept after it started. */
async function instance(name, dir, env) {
  const server = await serveApp(name, dir, env);
  server.out = '';
  server.child.stdout.on('data', (d) => (server.out += d));
  return server;
}

/** Creates `n` Tasks in bulks of {@link BULK} round-robin over `servers`; returns their ids. */
async function createTasks(servers, n, prefix, delayMs = 0) {
  const ids = [];
  let next = 0;
  const bulks = Math.ceil(n / BULK);
  const worker = async () => {
    for (let b = next++; b < bulks; b = next++) {
      const rows = Array.from({ length: Math.min(BULK, n - b * BULK) }, (_, i) => ({ title: `${prefix} ${b * BULK + i}`, delayMs }));
      ids.push(...(await postRows(servers[b % servers.length], 'Task', rows)));
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return ids;
}

/** How many times each of `ids` ran, from the Seen rows. */
async function runsOf(url, ids) {
  const times = new Map(ids.map((id) => [id, 0]));
  for (const { rowId } of await select(url, 'SELECT "rowId" FROM "Seen"')) if (times.has(rowId)) times.set(rowId, times.get(rowId) + 1);
  const counts = [...times.values()];
  return { lost: counts.filter((n) => n === 0).length, duplicates: counts.reduce((sum, n) => sum + Math.max(0, n - 1), 0) };
}

const figures = { changes: CHANGES, scheduleSeconds: SCHEDULE_S, failures: [] };
try {
  const redisUrl = await startRedis();
  const app = await prepareJobsApp('postgresql');
  const url = app.env.DATABASE_URL;
  const env = { ...app.env, REDIS_URL: redisUrl, SVC_JOBS_STALE_LOCK_MS: '1500' };
  const servers = [await instance('a', app.dir, env)];
  servers.push(...(await Promise.all([instance('b', app.dir, env), instance('c', app.dir, env)])));
  const seenCount = () => countOf(url, 'SELECT COUNT(*) AS n FROM "Seen"');
  const triggerJobsLeft = () => countOf(url, graphileJobs('svc_trigger'));

  // 1. Exactly once.
  log(`once: ${CHANGES} Tasks over three instances`);
  let t0 = performance.now();
  const onceIds = await createTasks(servers, CHANGES, 'once');
  const writeSeconds = (performance.now() - t0) / 1000;
  await until(async () => (await seenCount()) >= CHANGES && (await triggerJobsLeft()) === 0, 600_000, 'every event delivered');
  const deliverSeconds = (performance.now() - t0) / 1000;
  const once = await runsOf(url, onceIds);
  await sleep(1500); // the log store flushes every 500 ms
  const byInstance = await select(
    url,
    `SELECT "instance", COUNT(*) AS n FROM "_svc_logs" WHERE "kind" = 'job' AND "source" = 'tasks' GROUP BY "instance" ORDER BY 2 DESC`,
  );
  figures.once = {
    writeSeconds: +writeSeconds.toFixed(1),
    lastDeliverySeconds: +deliverSeconds.toFixed(1),
    deliveriesPerSecond: Math.round(CHANGES / deliverSeconds),
    ...once,
    runsPerInstance: byInstance.map((r) => Number(r.n)),
  };
  if (once.lost || once.duplicates) figures.failures.push(`once: ${once.lost} lost, ${once.duplicates} duplicates`);
  log(`once: ${JSON.stringify(figures.once)}`);

  // 2. One instance SIGKILLed mid-stream.
  log(`kill: ${CHANGES} Tasks of 20 ms, one instance killed mid-stream`);
  const before = await seenCount();
  t0 = performance.now();
  const killIds = await createTasks(servers, CHANGES / 2, 'kill', 20);
  const killAfter = Math.min(1000, CHANGES / 10);
  await until(async () => (await seenCount()) - before >= killAfter, 120_000, `${killAfter} runs before the kill`);
  const killed = servers.pop();
  const killedAt = new Date();
  await stopServer(killed, 'SIGKILL');
  const lockedAtKill = await countOf(url, graphileJobs('svc_trigger', 'j.locked_at IS NOT NULL'));
  const deliveredAtKill = (await seenCount()) - before;
  const lockedBefore = graphileJobs('svc_trigger', `j.locked_at IS NOT NULL AND j.locked_at < '${killedAt.toISOString()}'::timestamptz`);
  const handedBack = until(async () => (await countOf(url, lockedBefore)) === 0, 120_000, "the killed instance's jobs handed back").then(
    () => (Date.now() - killedAt.getTime()) / 1000,
  );
  killIds.push(...(await createTasks(servers, CHANGES / 2, 'after', 20)));
  const handBackSeconds = await handedBack;
  await until(async () => (await triggerJobsLeft()) === 0, 600_000, 'every event delivered after the kill');
  const kill = await runsOf(url, killIds);
  figures.kill = {
    deliveredAtKill,
    lockedAtKill,
    handBackSeconds: +handBackSeconds.toFixed(1),
    lastDeliverySeconds: +((performance.now() - t0) / 1000).toFixed(1),
    ...kill,
    sweepLogged: servers.some((s) => /released the jobs of \d+ job runner/.test(s.out)),
  };
  if (kill.lost) figures.failures.push(`kill: ${kill.lost} lost`);
  if (kill.duplicates > lockedAtKill) figures.failures.push(`kill: ${kill.duplicates} duplicates > ${lockedAtKill} locked at the kill`);
  log(`kill: ${JSON.stringify(figures.kill)}`);

  // 3. The schedule on three instances.
  servers.push(await instance('c2', app.dir, env));
  log(`schedule: every 2 s on three instances for ${SCHEDULE_S} s`);
  const from = Date.now();
  await sleep(SCHEDULE_S * 1000);
  const to = Date.now();
  await until(
    async () => (await countOf(url, graphileJobs('svc_schedule', `(j.payload->>'tick')::timestamptz <= to_timestamp(${to / 1000})`))) === 0,
    30_000,
    'every tick up to the end has run',
  );
  const ticks = (await select(url, 'SELECT "tick" FROM "Tick"')).map((r) => Date.parse(r.tick)).filter((t) => t > from && t <= to);
  const distinct = new Set(ticks).size;
  const expected = Math.floor(to / 2000) - Math.floor(from / 2000);
  figures.schedule = { expectedTicks: expected, ticks: distinct, ranTwice: ticks.length - distinct };
  if (ticks.length !== distinct || distinct !== expected) figures.failures.push(`schedule: ${distinct} of ${expected} ticks, ${ticks.length - distinct} twice`);
  log(`schedule: ${JSON.stringify(figures.schedule)}`);
} catch (err) {
  figures.failures.push(String(err?.stack ?? err));
} finally {
  await cleanup();
}
console.log(JSON.stringify(figures, null, 2));
process.exit(figures.failures.length ? 1 : 0);
