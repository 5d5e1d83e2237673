#!/usr/bin/env node
/**
 * `npm run bench`: svc vs a hand-written baseline on PostgreSQL (see bench/README.md).
 *
 * 1. Creates a fresh database `svc_bench_<random>`, copies bench/app to a temp dir, runs
 *    `svc generate` and `svc migrate` on it, seeds Suppliers and Items with `pg`, ANALYZE.
 * 2. Starts `svc serve` and bench/baseline-server.mjs (each its own process, same database).
 * 3. For each endpoint, runs autocannon (warm-up, then the measured run) against svc, then the
 *    baseline; never both under load at once.
 * 4. Prints a table, writes bench/results/latest.json; kills the servers and drops the database,
 *    also on failure or Ctrl-C.
 *
 * Env: BENCH_ROWS (100000), BENCH_DURATION_S (10), BENCH_CONNECTIONS (10), BENCH_WARMUP_S (3),
 * SVC_BENCH_PG_URL (postgres://root@127.0.0.1:5432/postgres).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const BENCH_DIR = import.meta.dirname;
const ROOT = resolve(BENCH_DIR, '..');
const CLI = join(ROOT, 'dist/cli/index.js');
const APP_SOURCE = join(BENCH_DIR, 'app');
const RESULTS = join(BENCH_DIR, 'results', 'latest.json');

function intEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer (got ${JSON.stringify(raw)})`);
  return n;
}

const ROWS = intEnv('BENCH_ROWS', 100_000);
const DURATION_S = intEnv('BENCH_DURATION_S', 10);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 10);
const WARMUP_S = intEnv('BENCH_WARMUP_S', 3);
const PG_ADMIN_URL = process.env.SVC_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/postgres';
const SUPPLIERS = 100;
const FILTER = 'price gt 500 and active eq true';
const PAGE_SIZE = 50;
const SEARCH = 'lamp 1234';
const STATS_PAGE = 20;
const MAX_NON_2XX = 0.01;

const started = Date.now();
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

/* ---------- cleanup: child processes, database, temp dir ---------- */

const children = new Set();
const cleanups = [];
let cleaning;
let running; // the autocannon instance under way, stopped first on cleanup

function cleanup() {
  cleaning ??= (async () => {
    running?.stop();
    for (const child of children) await stopChild(child);
    for (const fn of cleanups.reverse()) {
      try { await fn(); } catch (err) { log(`cleanup failed: ${err.message}`); }
    }
  })();
  return cleaning;
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) { children.delete(child); return Promise.resolve(); }
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => { clearTimeout(timer); children.delete(child); done(); });
    child.kill('SIGTERM');
  });
}

// Last resort (synchronous): never leave a server running after this process is gone.
process.on('exit', () => { for (const child of children) child.kill('SIGKILL'); });
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

/* ---------- processes ---------- */

function runCli(args, env) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc ${args[0]} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Spawns a server and resolves to its base URL (`http://127.0.0.1:<port>/api`) once it prints it. */
function startServer(name, args, env, pattern) {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    let ready = false;
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 60 s: ${err || out}`)), 60_000);
    child.stderr.on('data', (d) => {
      err += d;
      if (ready) process.stderr.write(String(d).replace(/^(?=.)/gm, `[${name}] `));
    });
    child.stdout.on('data', (d) => {
      if (ready) return;
      out += d;
      const m = pattern.exec(out);
      if (m) { ready = true; clearTimeout(timer); ok({ name, url: m[1], child }); }
    });
    child.on('error', (e) => { clearTimeout(timer); fail(e); });
    child.on('exit', (code, signal) => {
      children.delete(child);
      clearTimeout(timer);
      if (!ready) fail(new Error(`${name} exited (${code ?? signal}) before serving: ${err || out}`));
      else if (!cleaning) log(`${name} exited unexpectedly (${code ?? signal})`);
    });
  });
}

/* ---------- database ---------- */

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try { return await fn(client); } finally { await client.end(); }
}

async function createDatabase() {
  const name = `svc_bench_${randomBytes(6).toString('hex')}`;
  await withClient(PG_ADMIN_URL, (c) => c.query(`CREATE DATABASE "${name}"`));
  cleanups.push(async () => {
    await withClient(PG_ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    log(`dropped database ${name}`);
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

const CATEGORIES = ['books', 'games', 'garden', 'kitchen', 'tools'];
const ADJECTIVES = ['Compact', 'Deluxe', 'Classic', 'Rugged', 'Smart', 'Eco', 'Mini', 'Pro', 'Vintage', 'Wireless'];
const NOUNS = ['Lamp', 'Kettle', 'Shovel', 'Novel', 'Puzzle', 'Hammer', 'Chair', 'Planter', 'Board game', 'Drill'];
const pick = (list) => list[Math.floor(Math.random() * list.length)];

/** Multi-row INSERTs of `count` rows, `batch` rows per statement; `row(i)` gives the bound values. */
async function insertRows(client, table, columns, literals, count, batch, row) {
  const width = columns.length;
  for (let start = 0; start < count; start += batch) {
    const n = Math.min(batch, count - start);
    const values = [];
    const tuples = [];
    for (let i = 0; i < n; i++) {
      values.push(...row(start + i));
      const params = columns.map((_, j) => `$${i * width + j + 1}`);
      tuples.push(`(${[...params, ...Object.values(literals)].join(', ')})`);
    }
    const names = [...columns, ...Object.keys(literals)].map((c) => `"${c}"`).join(', ');
    await client.query(`INSERT INTO "${table}" (${names}) VALUES ${tuples.join(', ')}`, values);
  }
}

/** Seeds Suppliers and Items; returns their ids (UUIDv7, so id order is creation order). */
async function seed(url) {
  return withClient(url, async (client) => {
    const system = { createdAt: 'now()', updatedAt: 'now()', createdBy: 'NULL' };
    const supplierIds = Array.from({ length: SUPPLIERS }, () => uuidv7());
    await insertRows(client, 'Supplier', ['id', 'name', 'country', 'email', 'rating'], system, SUPPLIERS, SUPPLIERS, (i) => [
      supplierIds[i], `Supplier ${i + 1} AS`, pick(['NO', 'SE', 'DK', 'DE', 'NL', 'PL']), `orders@supplier${i + 1}.example`, 1 + (i % 5),
    ]);
    const itemIds = [];
    const twoYears = 2 * 365 * 24 * 3600 * 1000;
    const now = Date.now();
    // 8 parameters per row: 5000 rows = 40,000 bound values (PostgreSQL allows 65,535).
    await insertRows(client, 'Item', ['id', 'name', 'category', 'price', 'stock', 'active', 'createdOn', 'supplier'], system, ROWS, 5000, (i) => {
      const id = uuidv7();
      itemIds.push(id);
      return [
        id, `${pick(ADJECTIVES)} ${pick(NOUNS)} ${i + 1}`, pick(CATEGORIES),
        (Math.floor(Math.random() * 100_000) / 100).toFixed(2), // 0.00 - 999.99
        Math.floor(Math.random() * 500),
        Math.random() < 0.8,
        new Date(now - Math.floor(Math.random() * twoYears)),
        Math.random() < 0.95 ? pick(supplierIds) : null,
      ];
    });
    await client.query('ANALYZE');
    return { supplierIds, itemIds };
  });
}

/** EXPLAIN (ANALYZE, BUFFERS) of the list and count statements svc sends (same text, same values). */
async function explain(url) {
  const columns = ['id', 'name', 'category', 'price', 'stock', 'active', 'createdOn', 'supplier', 'createdAt', 'updatedAt', 'createdBy'];
  const where = '(("t0"."price" > $1 AND "t0"."active" = $2))';
  const list = `SELECT ${columns.map((c) => `"t0"."${c}"`).join(', ')} FROM "Item" AS "t0" WHERE ${where} ORDER BY "t0"."id" LIMIT $3 OFFSET $4`;
  const count = `SELECT COUNT(*) AS "n" FROM "Item" AS "t0" WHERE ${where}`;
  // As svc sends it: the request filter, then the search condition over the GIN-indexed column.
  const search = `SELECT ${columns.map((c) => `"t0"."${c}"`).join(', ')} FROM "Item" AS "t0" WHERE ${where} AND ("t0"."__search" @@ to_tsquery('simple', $3)) ORDER BY "t0"."id" LIMIT $4 OFFSET $5`;
  return withClient(url, async (client) => {
    const plan = async (text, values) => (await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, values)).rows.map((r) => r['QUERY PLAN']);
    const searchWords = SEARCH.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean).map((w) => `${w}:*`).join(' & ');
    return {
      list: { sql: list, plan: await plan(list, ['500', true, PAGE_SIZE, 0]) },
      count: { sql: count, plan: await plan(count, ['500', true]) },
      search: { sql: search, plan: await plan(search, ['500', true, searchWords, PAGE_SIZE, 0]) },
    };
  });
}

/* ---------- load ---------- */

function endpoints(ids, supplierIds) {
  const listPath = `/api/Item?filter=${encodeURIComponent(FILTER)}&pageSize=${PAGE_SIZE}`;
  const countPath = `/api/Item?filter=${encodeURIComponent(FILTER)}&count=only`;
  const searchPath = `/api/Item?filter=${encodeURIComponent(FILTER)}&search=${encodeURIComponent(SEARCH)}&pageSize=${PAGE_SIZE}`;
  const statsPath = `/api/SupplierStats?sortBy=items-&pageSize=${STATS_PAGE}`;
  return [
    { key: 'list', label: `GET list (filter, pageSize=${PAGE_SIZE})`, requests: () => [{ method: 'GET', path: listPath }] },
    {
      key: 'one', label: 'GET one by id',
      requests: () => [{ method: 'GET', path: '/api/Item/x', setupRequest: (req) => ({ ...req, path: `/api/Item/${pick(ids)}` }) }],
    },
    {
      key: 'post', label: 'POST one row',
      requests: () => [{
        method: 'POST', path: '/api/Item', headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({
            name: `${pick(ADJECTIVES)} ${pick(NOUNS)} bench`, category: pick(CATEGORIES),
            price: Math.floor(Math.random() * 100_000) / 100, stock: Math.floor(Math.random() * 500),
            active: Math.random() < 0.8, supplier: { id: pick(supplierIds) },
          }),
        }),
      }],
    },
    { key: 'count', label: 'GET count=only (filter)', requests: () => [{ method: 'GET', path: countPath }] },
    { key: 'search', label: `GET list (filter + search "${SEARCH}")`, requests: () => [{ method: 'GET', path: searchPath }] },
    { key: 'aggregate', label: `GET aggregate query (group by supplier, top ${STATS_PAGE})`, requests: () => [{ method: 'GET', path: statsPath }] },
  ];
}

async function load(server, endpoint, duration) {
  const origin = new URL(server.url).origin;
  running = autocannon({ url: origin, connections: CONNECTIONS, duration, requests: endpoint.requests() });
  try { return await running; } finally { running = undefined; }
}

function summarise(result) {
  const total = Object.values(result.statusCodeStats ?? {}).reduce((n, s) => n + Number(s.count), 0);
  const bad = result.non2xx + result.errors;
  return {
    reqPerSec: Math.round((total / result.duration) * 10) / 10,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests: total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, Number(s.count)])),
    badShare: total + result.errors === 0 ? 1 : bad / (total + result.errors),
  };
}

/* ---------- sanity: both servers answer the same bodies ---------- */

async function compareBodies(svc, base, ids) {
  const id = ids[Math.floor(ids.length / 2)];
  const paths = [
    `/Item?filter=${encodeURIComponent(FILTER)}&pageSize=${PAGE_SIZE}`,
    `/Item/${id}`,
    `/Item?filter=${encodeURIComponent(FILTER)}&count=only`,
    `/Item?filter=${encodeURIComponent(FILTER)}&search=${encodeURIComponent(SEARCH)}&pageSize=${PAGE_SIZE}`,
    `/SupplierStats?sortBy=items-&pageSize=${STATS_PAGE}`,
  ];
  for (const path of paths) {
    const [a, b] = await Promise.all([svc.url, base.url].map(async (u) => {
      const res = await fetch(u + path);
      if (!res.ok) throw new Error(`GET ${u}${path} answered ${res.status}: ${await res.text()}`);
      return res.json();
    }));
    if (!isDeepStrictEqual(a, b)) log(`WARNING: svc and baseline bodies differ for GET ${path}:\n  svc:      ${JSON.stringify(a).slice(0, 300)}\n  baseline: ${JSON.stringify(b).slice(0, 300)}`);
  }
}

/* ---------- is the machine otherwise idle? ---------- */

function cpuTimes() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: fields[3] + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Share of all CPUs busy over `ms` while nothing of ours is under load (Linux only; null elsewhere).
 * Other work on the machine (test runs, builds) makes every figure noisy, so it is reported.
 */
async function otherCpuBusy(ms = 1000) {
  if (!existsSync('/proc/stat')) return null;
  const a = cpuTimes();
  await new Promise((done) => setTimeout(done, ms));
  const b = cpuTimes();
  const total = b.total - a.total;
  return total > 0 ? Math.round((1 - (b.idle - a.idle) / total) * 100) / 100 : null;
}

function noteBusy(when, busy) {
  if (busy !== null && busy > 0.25) log(`note: ${Math.round(busy * 100)}% of the CPUs were busy with other work ${when}; figures are noisy`);
}

/* ---------- output ---------- */

function table(rows) {
  const header = ['endpoint', 'svc req/s', 'svc p99 ms', 'baseline req/s', 'baseline p99 ms', 'ratio'];
  const body = rows.map((r) => [r.label, r.svc.reqPerSec.toFixed(0), String(r.svc.p99Ms), r.baseline.reqPerSec.toFixed(0), String(r.baseline.p99Ms), r.ratio.toFixed(2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...body.map(line)].join('\n');
}

/* ---------- main ---------- */

async function main() {
  const machine = {
    node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30), platform: `${process.platform} ${process.arch}`,
  };
  log(`rows=${ROWS} duration=${DURATION_S}s warmup=${WARMUP_S}s connections=${CONNECTIONS} node=${machine.node} cpus=${machine.cpus}`);

  const db = await createDatabase();
  const appDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  cleanups.push(() => rmSync(appDir, { recursive: true, force: true }));
  cpSync(APP_SOURCE, appDir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules|migrations)$/.test(p) });
  const env = { DATABASE_URL: db.url, SVC_LOG_LEVEL: 'warn' };
  log(`database ${db.name}, app ${appDir}: generate + migrate`);
  runCli(['generate', appDir], env);
  runCli(['migrate', appDir], env);

  let t = Date.now();
  const { supplierIds, itemIds } = await seed(db.url);
  const seedSeconds = (Date.now() - t) / 1000;
  log(`seeded ${SUPPLIERS} suppliers and ${ROWS} items in ${seedSeconds.toFixed(1)} s (ANALYZE done)`);

  const plans = await explain(db.url);

  const svc = await startServer('svc', [CLI, 'serve', appDir, '--port', '0'], env, /serving \S+ at (http:\/\/\S+)/);
  const base = await startServer('baseline', [join(BENCH_DIR, 'baseline-server.mjs')], { DATABASE_URL: db.url, PORT: '0', BENCH_FILTER: FILTER, BENCH_SEARCH: SEARCH }, /listening at (http:\/\/\S+)/);
  log(`svc at ${svc.url}, baseline at ${base.url}`);
  await compareBodies(svc, base, itemIds);

  const idleCheck = { busyBefore: await otherCpuBusy() };
  noteBusy('before the runs', idleCheck.busyBefore);
  const all = endpoints(itemIds, supplierIds);
  // Reads first, POST last, so every read run sees the same table.
  const order = ['list', 'one', 'count', 'search', 'aggregate', 'post'];
  const results = {};
  for (const key of order) {
    const endpoint = all.find((e) => e.key === key);
    results[key] = {};
    for (const server of [svc, base]) {
      log(`${endpoint.label} @ ${server.name}: warm-up ${WARMUP_S} s, measure ${DURATION_S} s`);
      await load(server, endpoint, WARMUP_S);
      const summary = summarise(await load(server, endpoint, DURATION_S));
      results[key][server.name] = summary;
      if (summary.non2xx > 0 || summary.errors > 0) {
        log(`  ${server.name}: ${summary.non2xx} non-2xx, ${summary.errors} errors (${summary.timeouts} timeouts); status codes ${JSON.stringify(summary.statusCodes)}`);
      }
      if (summary.badShare > MAX_NON_2XX) {
        throw new Error(`${endpoint.label} @ ${server.name}: ${(summary.badShare * 100).toFixed(1)}% of requests failed (non-2xx or errors), status codes ${JSON.stringify(summary.statusCodes)}; the figures would be meaningless`);
      }
    }
  }

  idleCheck.busyAfter = await otherCpuBusy();
  noteBusy('after the runs', idleCheck.busyAfter);

  const rows = all.map((e) => {
    const r = results[e.key];
    return { endpoint: e.key, label: e.label, svc: r.svc, baseline: r.baseline, ratio: Math.round((r.svc.reqPerSec / r.baseline.reqPerSec) * 100) / 100 };
  });
  const wallSeconds = Math.round((Date.now() - started) / 100) / 10;

  process.stdout.write(`\nsvc bench: PostgreSQL, ${ROWS} Items (+${SUPPLIERS} Suppliers), ${CONNECTIONS} connections, ${DURATION_S} s per run (+${WARMUP_S} s warm-up)\n`);
  process.stdout.write(`machine: node ${machine.node}, ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.platform}\n\n`);
  process.stdout.write(`${table(rows)}\n\nratio = svc req/s / baseline req/s (1.00 = as fast as hand-written node:http + pg)\n`);
  process.stdout.write(`\nlist query plan (EXPLAIN ANALYZE):\n${plans.list.plan.map((l) => `  ${l}`).join('\n')}\n`);
  process.stdout.write(`count query plan (EXPLAIN ANALYZE):\n${plans.count.plan.map((l) => `  ${l}`).join('\n')}\n`);
  process.stdout.write(`search query plan (EXPLAIN ANALYZE):\n${plans.search.plan.map((l) => `  ${l}`).join('\n')}\n`);
  const pct = (v) => (v === null ? 'n/a' : `${Math.round(v * 100)}%`);
  process.stdout.write(`\nCPU busy with other work: ${pct(idleCheck.busyBefore)} before the runs, ${pct(idleCheck.busyAfter)} after (above ~25%: noisy figures)\n`);
  process.stdout.write(`wall time ${wallSeconds} s (seed ${seedSeconds.toFixed(1)} s)\n`);

  const json = {
    date: new Date().toISOString(),
    machine,
    config: { rows: ROWS, suppliers: SUPPLIERS, durationS: DURATION_S, warmupS: WARMUP_S, connections: CONNECTIONS, filter: FILTER, pageSize: PAGE_SIZE, poolMax: 10 },
    results: rows,
    plans,
    otherCpuBusy: idleCheck,
    seedSeconds,
    wallSeconds,
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`results written to ${RESULTS}\n`);
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
