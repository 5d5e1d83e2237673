/**
 * The cost of the log store's record + flush path in the server process (DESIGN §9): CPU µs per entry
 * (user + system of this process, `process.cpuUsage`) for `record` alone and for `flush` (building
 * and sending the INSERTs; the database's own work is not counted; both tables of the store are made,
 * the one row per entry of builds before 2026-11-28 and the batches of later ones), on PostgreSQL and SQLite. A CPU
 * figure, not a throughput one, so it stays readable on a busy machine. Also the cost of one metrics
 * observe per request (`RouteSeries.observe`).
 *
 * Usage: node bench/log-store.mjs [dist dir, default ./dist] — run it on two builds back to back to
 * compare them. Env: LOGSTORE_ENTRIES (20000), LOGSTORE_ROUNDS (5), SVC_BENCH_PG_URL.
 */
import { resolve, join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';

const DIST = resolve(process.argv[2] ?? join(import.meta.dirname, '../dist'));
const ENTRIES = Number(process.env.LOGSTORE_ENTRIES ?? 20_000);
const ROUNDS = Number(process.env.LOGSTORE_ROUNDS ?? 5);
const PG_ADMIN_URL = process.env.SVC_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/postgres';
const load = (path) => import(pathToFileURL(join(DIST, path)).href);
const { LogStore } = await load('runtime/logs/log-store.js');
const { openDatabase } = await load('runtime/data/database.js');

const TABLE = (time) => `CREATE TABLE "_svc_logs" ("id" TEXT PRIMARY KEY, "time" ${time} NOT NULL, "instance" TEXT NOT NULL, "kind" TEXT NOT NULL,
  "reqId" TEXT, "method" TEXT, "path" TEXT, "status" INTEGER, "durationMs" ${time === 'DATETIME' ? 'REAL' : 'DOUBLE PRECISION'}, "identityId" TEXT,
  "identityKind" TEXT, "severity" INTEGER, "source" TEXT, "message" TEXT);
CREATE TABLE "_svc_log_batches" ("id" TEXT PRIMARY KEY, "firstId" TEXT NOT NULL, "first" ${time} NOT NULL, "last" ${time} NOT NULL,
  "instance" TEXT NOT NULL, "count" INTEGER NOT NULL, "entries" TEXT NOT NULL)`;
/** Entries stored: rows of the table of one row per entry (builds before the batches) plus the entries of the batches. */
const STORED = 'SELECT (SELECT COUNT(*) FROM "_svc_logs") + (SELECT COALESCE(SUM("count"), 0) FROM "_svc_log_batches") AS n';

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function measure(db) {
  const store = new LogStore(db, 'bench-instance', undefined, pino({ level: 'silent' }), { maxBuffer: ENTRIES * 2 });
  const record = [];
  const flush = [];
  for (let round = 0; round < ROUNDS; round++) {
    let t = cpu();
    for (let i = 0; i < ENTRIES; i++)
      store.record({
        kind: 'request',
        reqId: `0193a1b2-${i}`,
        method: 'GET',
        path: `/api/Order/0193a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, '0')}`,
        status: 200,
        durationMs: 1.3,
        identityId: '0193a1b2-c3d4-7e5f-8a9b-000000000001',
        identityKind: 'user',
      });
    record.push((cpu() - t) / ENTRIES);
    t = cpu();
    await store.flush();
    flush.push((cpu() - t) / ENTRIES);
  }
  const [{ n }] = await db.query({ text: STORED, values: [] }).catch(() => [{ n: '?' }]);
  await store.close();
  // The first round warms the JIT: the median of the rest.
  const median = (xs) => xs.slice(1).sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  return { record: median(record), flush: median(flush), rows: n };
}

const results = {};
{
  const name = `svc_bench_logs_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  await c.query(TABLE('TIMESTAMPTZ(3)'));
  await c.end();
  const db = await openDatabase('postgresql', url.toString());
  try {
    results.postgresql = await measure(db);
  } finally {
    await db.close();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}
{
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-logs-'));
  const { default: Database } = await import('better-sqlite3');
  const file = join(dir, 'logs.db');
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.exec(TABLE('DATETIME'));
  raw.close();
  const db = await openDatabase('sqlite', `file:${file}`);
  try {
    results.sqlite = await measure(db);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
let observe;
try {
  const { Metrics } = await load('runtime/metrics/metrics.js');
  const series = new Metrics().route('/api/Order/{id}');
  const n = 1_000_000;
  for (let i = 0; i < 10_000; i++) series.observe('GET', 200, 0.001);
  const t = cpu();
  for (let i = 0; i < n; i++) series.observe('GET', 200, 0.001 * (i % 50));
  observe = ((cpu() - t) / n) * 1000;
} catch {
  observe = undefined; // a build without metrics
}
console.log(`log store, ${DIST}: ${ENTRIES} entries × ${ROUNDS} rounds (median after the first), CPU of this process`);
for (const [backend, r] of Object.entries(results))
  console.log(`  ${backend.padEnd(10)} record ${r.record.toFixed(2)} µs/entry, flush ${r.flush.toFixed(2)} µs/entry (${r.rows} rows stored)`);
if (observe !== undefined) console.log(`  metrics: RouteSeries.observe ${observe.toFixed(0)} ns/request`);
