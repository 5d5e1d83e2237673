/**
 * Job throughput of one instance on PostgreSQL (DESIGN §12, issue 33: goal ≥ 2,000 trivial jobs/s per
 * instance on 2 cores). Uses the built `dist/` (run `npm run build` first): adds `--jobs` no-op jobs
 * through `JobEngine.add` (in transactions of 1,000), then starts one Graphile runner and times until
 * the handler has seen every job and none is left. Prints the add rate and the run rate.
 *
 *   node bench/jobs.mjs [--jobs 20000] [--concurrency 10] [--local-queue=N] [--complete-delay=MS] [--fail-delay=MS]
 *
 * Without the last three, the engine's defaults. `--local-queue=N` (> 1) lets the runner lock N jobs
 * per fetch (Graphile's `localQueue.size`; 0: off, Graphile's default); `--complete-delay=MS` batches
 * completions (Graphile's `completeJobBatchDelay`; -1: one statement per job, Graphile's default). Env `SVC_BENCH_PG_URL` (default `postgres://root@127.0.0.1:5432/postgres`) is the admin URL;
 * the database is created per run and dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../dist/runtime/data/database.js';
import { createGraphileEngine } from '../dist/runtime/jobs/graphile-engine.js';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '10' },
    'local-queue': { type: 'string' },
    'complete-delay': { type: 'string' },
    'fail-delay': { type: 'string' },
  },
});
const jobs = Number(args.jobs);
const concurrency = Number(args.concurrency);
const adminUrl = process.env.SVC_BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

async function admin(text) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const name = `svc_bench_jobs_${randomBytes(6).toString('hex')}`;
await admin(`CREATE DATABASE "${name}"`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const db = await openDatabase('postgresql', url.toString());
try {
  const engine = createGraphileEngine({
    db,
    connectionString: url.toString(),
    // Absent flags keep the engine's defaults.
    tuning: {
      localQueueSize: args['local-queue'] === undefined ? undefined : Number(args['local-queue']),
      completeJobBatchDelayMs: args['complete-delay'] === undefined ? undefined : Number(args['complete-delay']),
      failJobBatchDelayMs: args['fail-delay'] === undefined ? undefined : Number(args['fail-delay']),
    },
  });
  await engine.prepare();
  const payload = { function: 'noop', payload: {}, callerId: null };
  const addStart = performance.now();
  for (let done = 0; done < jobs; done += 1000) {
    await db.transaction(async (tx) => {
      for (let i = done; i < Math.min(jobs, done + 1000); i++) await engine.add({ task: 'svc_function', payload }, tx);
    });
  }
  const addSeconds = (performance.now() - addStart) / 1000;
  console.log(`added ${jobs} jobs in ${addSeconds.toFixed(2)} s: ${Math.round(jobs / addSeconds)} adds/s (one add_job per job)`);

  let ran = 0;
  let allRan;
  const finished = new Promise((resolve) => (allRan = resolve));
  const runStart = performance.now();
  engine.start(
    async () => {
      if (++ran === jobs) allRan();
    },
    { concurrency, pollIntervalMs: 1000 },
  );
  await finished;
  // The last completions are written when the runner stops (batched) — count them in.
  await engine.stop(10_000);
  const runSeconds = (performance.now() - runStart) / 1000;
  const left = await engine.stats();
  console.log(
    `ran ${ran} jobs in ${runSeconds.toFixed(2)} s: ${Math.round(jobs / runSeconds)} jobs/s ` +
      `(concurrency ${concurrency}, local queue ${args['local-queue'] ?? 'default'}, complete delay ${args['complete-delay'] ?? 'default'} ms; left: ${left.pending + left.running})`,
  );
} finally {
  await db.close();
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
