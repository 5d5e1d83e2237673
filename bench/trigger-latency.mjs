#!/usr/bin/env node
/**
 * What a trigger costs (issue 33 figures), on SQLite and PostgreSQL, one `svc serve` of the fixture
 * test/fixtures/apps/jobs-instances (bench/jobs-app.mjs) per database:
 * - latency: one-row `POST /api/Task` sent at `BENCH_TRIGGER_RATE` per second (default 200) for
 *   `BENCH_TRIGGER_SECONDS` (default 10), open loop; the trigger function `record` notes `Date.now()`
 *   as it starts. Reported: p50/p99/max of start − the event's `at` (the capture's clock in the
 *   writing statement, just before the commit) and of start − the moment the POST's answer arrived
 *   (negative when the run started first). Goal: p50 ≤ 10 ms, p99 ≤ 100 ms.
 * - POST req/s: autocannon (10 connections, 2 s warm-up, `BENCH_TRIGGER_POST_SECONDS` measured, default
 *   8; 0 skips this part), `POST /api/Plain` (no trigger) and `POST /api/Task` (one trigger) alternated twice; ratio
 *   Task ÷ Plain, goal ≥ 0.9. Twice: with the same instance running the trigger's jobs (capture and
 *   delivery share its CPU), and with `"jobs": false` in svc.json (capture only; the jobs wait).
 * Prints the figures as JSON on stdout. `npm run build` first; `BENCH_TRIGGER_BACKENDS=sqlite` for one.
 */
import autocannon from 'autocannon';
import { cleanup, log } from './processes.mjs';
import { countOf, postRows, prepareJobsApp, quantile, select, serveApp, sleep, stopServer, until } from './jobs-app.mjs';

const RATE = Number(process.env.BENCH_TRIGGER_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_TRIGGER_SECONDS ?? 10);
const POST_SECONDS = Number(process.env.BENCH_TRIGGER_POST_SECONDS ?? 8);
const BACKENDS = (process.env.BENCH_TRIGGER_BACKENDS ?? 'sqlite,postgresql').split(',');

const stats = (values) => ({ p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: Math.max(...values) });

/** Open-loop one-row POSTs at RATE/s for SECONDS; then the latencies of their trigger runs. */
async function latency(server, url) {
  const answered = new Map();
  const pending = [];
  const failed = new Map(); // error message → count
  const t0 = performance.now();
  const total = RATE * SECONDS;
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(
      postRows(server, 'Task', { title: `latency ${i}` }).then(
        ([id]) => answered.set(id, Date.now()),
        (err) => failed.set(err.message.slice(0, 120), (failed.get(err.message.slice(0, 120)) ?? 0) + 1),
      ),
    );
  }
  await Promise.all(pending);
  const sentPerSecond = total / ((performance.now() - t0) / 1000);
  await until(async () => (await countOf(url, 'SELECT COUNT(*) AS n FROM "Seen"')) >= answered.size + 200, 120_000, 'every run');
  const seen = (await select(url, 'SELECT "rowId", "at", "startedAt" FROM "Seen"')).filter((r) => answered.has(r.rowId));
  return {
    changes: answered.size,
    failed: Object.fromEntries(failed),
    sentPerSecond: Math.round(sentPerSecond),
    commitToStartMs: stats(seen.map((r) => Number(r.startedAt) - Date.parse(r.at))),
    answerToStartMs: stats(seen.map((r) => Number(r.startedAt) - answered.get(r.rowId))),
  };
}

/** autocannon POSTs of one row to `collection` for `seconds`; req/s. */
async function postRate(server, collection, seconds) {
  const r = await autocannon({
    url: `${server.url}/${collection}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'bench row', delayMs: 0 }),
    connections: 10,
    duration: seconds,
  });
  if (r.non2xx || r.errors) log(`${collection}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.total / r.duration;
}

/** Plain and Task alternated twice (each after a warm-up); mean req/s of each and the ratio. */
async function postRatio(server) {
  const rates = { Plain: [], Task: [] };
  for (let round = 0; round < 2; round++)
    for (const collection of ['Plain', 'Task']) {
      await postRate(server, collection, 2);
      rates[collection].push(await postRate(server, collection, POST_SECONDS));
    }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const plain = mean(rates.Plain);
  const task = mean(rates.Task);
  return { plainReqPerSec: Math.round(plain), taskReqPerSec: Math.round(task), ratio: +(task / plain).toFixed(2) };
}

const figures = { rate: RATE, seconds: SECONDS, failures: [] };
try {
  for (const backend of BACKENDS) {
    const app = await prepareJobsApp(backend);
    let server = await serveApp(`${backend}`, app.dir, app.env);
    const url = app.env.DATABASE_URL;
    // Warm-up: 200 changes (the worker threads, the statement caches), all delivered.
    for (let i = 0; i < 20; i++)
      await postRows(
        server,
        'Task',
        Array.from({ length: 10 }, (_, j) => ({ title: `warm ${i * 10 + j}` })),
      );
    await until(async () => (await countOf(url, 'SELECT COUNT(*) AS n FROM "Seen"')) >= 200, 60_000, 'the warm-up runs');
    log(`${backend}: latency at ${RATE} changes/s for ${SECONDS} s`);
    const result = { latency: await latency(server, url) };
    log(`${backend}: ${JSON.stringify(result.latency)}`);
    if (POST_SECONDS <= 0) {
      figures[backend] = result;
      continue;
    }
    log(`${backend}: POST req/s with and without a trigger (jobs run by the same instance)`);
    result.postWithJobs = await postRatio(server);
    log(`${backend}: ${JSON.stringify(result.postWithJobs)}`);
    await stopServer(server);
    // Capture only: a copy of the app with `"jobs": false`, on a database of its own.
    const captureOnly = await prepareJobsApp(backend, { jobs: false });
    server = await serveApp(`${backend}-capture`, captureOnly.dir, captureOnly.env);
    log(`${backend}: POST req/s with and without a trigger (capture only, "jobs": false)`);
    result.postCaptureOnly = await postRatio(server);
    log(`${backend}: ${JSON.stringify(result.postCaptureOnly)}`);
    await stopServer(server);
    figures[backend] = result;
  }
} catch (err) {
  figures.failures.push(String(err?.stack ?? err));
} finally {
  await cleanup();
}
console.log(JSON.stringify(figures, null, 2));
process.exit(figures.failures.length ? 1 : 0);
