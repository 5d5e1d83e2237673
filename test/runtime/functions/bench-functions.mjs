#!/usr/bin/env node
/**
 * Throughput of a trivial warm function call vs GET one by id, on one `svc serve` of
 * test/fixtures/apps/functions (SQLite), with autocannon (10 connections; 2 s warm-up, then 5 s
 * measured per endpoint, one endpoint under load at a time). Run after `npm run build`:
 *   node test/runtime/functions/bench-functions.mjs
 * Env: BENCH_DURATION_S (5), BENCH_CONNECTIONS (10), BENCH_CLI (another build of the CLI, e.g. the main
 * checkout's, to compare; then svc.json is reduced to settings every version knows).
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';

const ROOT = resolve(import.meta.dirname, '../../..');
const CLI = process.env.BENCH_CLI ?? join(ROOT, 'dist/cli/index.js');
const DURATION = Number(process.env.BENCH_DURATION_S ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

const dir = mkdtempSync(join(tmpdir(), 'svc-fnbench-'));
const env = { ...process.env, DATABASE_URL: `file:${join(dir, 'data', 'app.db')}`, SVC_LOG_LEVEL: 'warn' };
let server;
try {
  cpSync(join(ROOT, 'test/fixtures/apps/functions'), dir, { recursive: true });
  if (process.env.BENCH_CLI) writeFileSync(join(dir, 'svc.json'), '{ "name": "fnapp", "functions": { "timeoutMs": 1500 } }');
  const gen = spawnSync(process.execPath, [CLI, 'generate', dir], { env, encoding: 'utf8' });
  if (gen.status !== 0) throw new Error(gen.stderr);
  server = spawn(process.execPath, [CLI, 'serve', dir, '--port', '0'], { env });
  const base = await new Promise((ok, fail) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /serving \S+ at (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]);
    });
    server.on('exit', (code) => fail(new Error(`svc serve exited (${code})`)));
  });
  const created = await (await fetch(`${base}/Note`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"title":"bench"}' })).json();
  const id = created.data[0];
  const run = (url, duration) => autocannon({ url, connections: CONNECTIONS, duration });
  const rows = [];
  for (const [name, path] of [
    ['GET one', `/Note/${id}`],
    ['function (default export)', '/warm'],
    ['function (script form)', '/modern?q=1'],
  ]) {
    await run(base + path, 2);
    const r = await run(base + path, DURATION);
    if (r.non2xx > 0) throw new Error(`${name}: ${r.non2xx} non-2xx answers`);
    rows.push({ name, reqPerSec: Math.round(r.requests.average), p50ms: r.latency.p50, p99ms: r.latency.p99 });
  }
  console.table(rows);
  for (const r of rows.slice(1)) console.log(`${r.name}: ${(r.reqPerSec / rows[0].reqPerSec).toFixed(2)} × GET one`);
} finally {
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
