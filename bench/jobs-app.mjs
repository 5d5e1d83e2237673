/**
 * The app the jobs benchmarks serve (bench/jobs-instances.mjs, bench/trigger-latency.mjs): the test
 * fixture test/fixtures/apps/jobs-instances — `Task` whose every create fires the trigger `tasks`
 * (function `record`: notes when it started, waits the Task's `delayMs`, writes a `Seen` row),
 * `Plain` (Task's shape, no trigger), and `everyTwo`, scheduled every 2 s (writes a `Tick` row).
 * Helpers: a prepared copy on a fresh database, `svc serve` on it, SQL reads, quantiles, Task writes.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createDatabase } from './database.mjs';
import { CLI, ROOT, onCleanup, runCli, startServer } from './processes.mjs';

export const FIXTURE = join(ROOT, 'test/fixtures/apps/jobs-instances');
export const PG_ADMIN_URL = process.env.SVC_BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres';

/**
 * A copy of the fixture on a fresh database of `backend`, generated; `svcJson` is merged into its
 * svc.json (e.g. `{ jobs: false }`). Removed (and the database dropped) on cleanup.
 * @returns `{ dir, env }` where `env.DATABASE_URL` names the database
 */
export async function prepareJobsApp(backend, svcJson = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-jobs-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(FIXTURE, dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|migrations|node_modules)$/.test(p) });
  const settings = JSON.parse(readFileSync(join(dir, 'svc.json'), 'utf8'));
  writeFileSync(join(dir, 'svc.json'), JSON.stringify({ ...settings, ...svcJson }));
  const url = backend === 'postgresql' ? (await createDatabase(PG_ADMIN_URL)).url : `file:${join(dir, 'data', 'app.db')}`;
  const env = { DATABASE_URL: url };
  runCli(['generate', dir], env);
  return { dir, env };
}

/** `svc serve dir` on a free port, logging at warn; resolves to `{ name, url, pid, child }` once it serves. */
export function serveApp(name, dir, env) {
  return startServer(name, [CLI, 'serve', dir, '--port', '0'], { SVC_LOG_LEVEL: 'warn', ...env }, /serving \S+ at (http:\/\/\S+)\n/);
}

/** Stops a served instance with `signal` and waits for its exit (not reported as unexpected). */
export async function stopServer(server, signal = 'SIGTERM') {
  server.child.removeAllListeners('exit'); // processes.mjs's: "exited unexpectedly"; cleanup skips an exited child
  const exited = new Promise((done) => server.child.once('exit', done));
  server.child.kill(signal);
  await exited;
}

/** Runs one SELECT on the app database `databaseUrl` (SQLite file, read-only, or PostgreSQL). */
export async function select(databaseUrl, text) {
  if (databaseUrl.startsWith('file:')) {
    const db = new Database(databaseUrl.slice('file:'.length), { readonly: true });
    try {
      return db.prepare(text).all();
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

export const countOf = async (databaseUrl, text) => Number((await select(databaseUrl, text))[0].n);

/** Jobs of `task` left in a Graphile database (pending, running or failed), optionally only those matching `where`. */
export const graphileJobs = (task, where = 'TRUE') =>
  `SELECT COUNT(*) AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = '${task}' AND ${where}`;

/** The `q` quantile of `values` (nearest rank). */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** POSTs `rows` (an array: one bulk) to `collection` on `server`; returns the new ids. */
export async function postRows(server, collection, rows) {
  const r = await fetch(`${server.url}/${collection}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rows) });
  const text = await r.text();
  if (r.status !== 201) throw new Error(`POST /${collection} answered ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text).data;
}

export const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** Polls `probe` every 100 ms until truthy; throws after `timeoutMs`. */
export async function until(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}
