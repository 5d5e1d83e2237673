#!/usr/bin/env node
/**
 * `npm run bench`: svc against two hand-written servers doing the same database work, on PostgreSQL
 * (see bench/README.md): node:http + pg (bench/baseline-server.mjs) and Express 5 + pg
 * (bench/express-server.mjs).
 *
 * 1. Creates a fresh database `svc_bench_<random>`, copies bench/app to a temp dir, runs
 *    `svc generate` and `svc migrate` on it, seeds Customers and Orders with `pg`, ANALYZE.
 * 2. Starts `svc serve`, the node:http baseline and the Express baseline (three processes, one database).
 * 3. For each endpoint, for each connection count, for svc, node, express in turn: an autocannon
 *    warm-up, a wait until the requests it left in flight are done (`settle`), then the measured run
 *    with the server's CPU time read before and after. One server
 *    under load at a time; interleaved so drift on the machine hits all three. With BENCH_ROUNDS > 1
 *    the three take turns that many times and each server's figures are those of its median run
 *    (by req/s), so one run hit by the machine's swings decides no goal.
 * 4. Prints a table, writes bench/results/latest.json; kills the servers and drops the database,
 *    also on failure or Ctrl-C.
 *
 * Env: BENCH_ROWS (100000), BENCH_DURATION_S (8), BENCH_WARMUP_S (2), BENCH_CONNECTIONS ("10,50"), BENCH_ROUNDS (1),
 * BENCH_ONLY (endpoint keys, e.g. "one,function"; default all; the real-time keys fanout, notify and idle
 * belong to bench/realtime.mjs, which `npm run bench` runs next),
 * SVC_BENCH_PG_URL (postgres://root@127.0.0.1:5432/postgres).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { SEARCH_QUERY } from './baseline-db.mjs';
import { createDatabase, explain, seed } from './database.mjs';
import { comparablePaths, endpoints, measure, load, otherCpuBusy, settle } from './load.mjs';
import { CLI, cleanup, log, onCleanup, runCli, startServer } from './processes.mjs';
import { LEGEND, buildRows, goals, goalsTable, table } from './report.mjs';

const BENCH_DIR = import.meta.dirname;
const RESULTS = join(BENCH_DIR, 'results', 'latest.json');

function intEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer (got ${JSON.stringify(raw)})`);
  return n;
}

function listEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const list = raw.split(',').map((s) => Number(s.trim()));
  if (list.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${name} must be positive integers separated by commas (got ${JSON.stringify(raw)})`);
  return list;
}

const ROWS = intEnv('BENCH_ROWS', 100_000);
const CUSTOMERS = 1000;
const DURATION_S = intEnv('BENCH_DURATION_S', 8);
const WARMUP_S = intEnv('BENCH_WARMUP_S', 2);
const CONNECTIONS = listEnv('BENCH_CONNECTIONS', [10, 50]);
const ROUNDS = intEnv('BENCH_ROUNDS', 1);
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean); // endpoint keys; empty = all
const PG_ADMIN_URL = process.env.SVC_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/postgres';
const MAX_NON_2XX = 0.01;
const started = Date.now();

/**
 * The run of one server with the median req/s (the lower middle of an even count), with every run's
 * req/s as `roundsReqPerSec`; marked failed when any of its runs failed.
 */
function medianRun(runs) {
  const median = [...runs].sort((a, b) => a.reqPerSec - b.reqPerSec)[Math.floor((runs.length - 1) / 2)];
  return { ...median, roundsReqPerSec: runs.map((r) => r.reqPerSec), failed: runs.some((r) => r.failed) || undefined };
}

/** Every GET the benchmark sends answers the same body on the three servers; warns otherwise. */
async function compareBodies(servers, orderIds) {
  for (const path of comparablePaths(orderIds[Math.floor(orderIds.length / 2)])) {
    const bodies = await Promise.all(
      servers.map(async (s) => {
        const res = await fetch(s.url + path);
        if (!res.ok) throw new Error(`GET ${s.url}${path} answered ${res.status}: ${await res.text()}`);
        return res.json();
      }),
    );
    for (let i = 1; i < servers.length; i++) {
      if (!isDeepStrictEqual(bodies[0], bodies[i])) {
        log(`WARNING: ${servers[0].name} and ${servers[i].name} bodies differ for GET ${path}:`);
        log(`  ${servers[0].name}: ${JSON.stringify(bodies[0]).slice(0, 300)}\n  ${servers[i].name}: ${JSON.stringify(bodies[i]).slice(0, 300)}`);
      }
    }
  }
}

function noteBusy(when, busy) {
  if (busy !== null && busy > 0.25) log(`note: ${Math.round(busy * 100)}% of the CPUs were busy with other work ${when}; figures are noisy`);
}

async function main() {
  // BENCH_ONLY naming only real-time keys: that section runs alone (bench/realtime.mjs).
  if (ONLY.length > 0 && ONLY.every((k) => ['fanout', 'notify', 'idle'].includes(k))) return;
  const machine = {
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform} ${process.arch}`,
  };
  log(`rows=${ROWS} duration=${DURATION_S}s warmup=${WARMUP_S}s connections=${CONNECTIONS.join(',')} node=${machine.node} cpus=${machine.cpus}`);

  const db = await createDatabase(PG_ADMIN_URL);
  const appDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  onCleanup(() => rmSync(appDir, { recursive: true, force: true }));
  cpSync(join(BENCH_DIR, 'app'), appDir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules|migrations)$/.test(p) });
  const env = { DATABASE_URL: db.url, SVC_LOG_LEVEL: 'warn' };
  log(`database ${db.name}, app ${appDir}: generate + migrate`);
  runCli(['generate', appDir], env);
  runCli(['migrate', appDir], env);

  const t = Date.now();
  const { customerIds, orderIds } = await seed(db.url, { customers: CUSTOMERS, orders: ROWS });
  const seedSeconds = (Date.now() - t) / 1000;
  log(`seeded ${CUSTOMERS} customers and ${ROWS} orders in ${seedSeconds.toFixed(1)} s (ANALYZE done)`);
  const plans = await explain(db.url, SEARCH_QUERY);

  const baseEnv = { DATABASE_URL: db.url, PORT: '0' };
  const svc = await startServer('svc', [CLI, 'serve', appDir, '--port', '0'], env, /serving \S+ at (http:\/\/\S+)/);
  const node = await startServer('node', [join(BENCH_DIR, 'baseline-server.mjs')], baseEnv, /listening at (http:\/\/\S+)/);
  const express = await startServer('express', [join(BENCH_DIR, 'express-server.mjs')], baseEnv, /listening at (http:\/\/\S+)/);
  const servers = [svc, node, express];
  log(`svc at ${svc.url}, node at ${node.url}, express at ${express.url}`);
  await compareBodies(servers, orderIds);

  const idleCheck = { busyBefore: await otherCpuBusy() };
  noteBusy('before the runs', idleCheck.busyBefore);
  // BENCH_ONLY picks endpoints.
  const every = endpoints(orderIds, customerIds);
  const all = ONLY.length === 0 ? every : every.filter((e) => ONLY.includes(e.key));
  const results = {};
  const failures = [];
  for (const endpoint of all) {
    results[endpoint.key] = {};
    for (const connections of CONNECTIONS) {
      results[endpoint.key][connections] = {};
      const runs = Object.fromEntries(servers.map((server) => [server.name, []]));
      for (let round = 1; round <= ROUNDS; round++) {
        for (const server of servers) {
          const turn = ROUNDS > 1 ? `, round ${round} of ${ROUNDS}` : '';
          log(`${endpoint.label} @ ${server.name}, ${connections} connections${turn}: warm-up ${WARMUP_S} s, measure ${DURATION_S} s`);
          await load(server, endpoint, WARMUP_S, connections);
          const waited = await settle([server.pid]);
          if (waited > 1000) log(`  waited ${(waited / 1000).toFixed(1)} s for the warm-up's requests in flight to finish`);
          const summary = await measure(server, endpoint, DURATION_S, connections);
          runs[server.name].push(summary);
          if (summary.non2xx > 0 || summary.errors > 0) {
            log(
              `  ${server.name}: ${summary.non2xx} non-2xx, ${summary.errors} errors (${summary.timeouts} timeouts); status codes ${JSON.stringify(summary.statusCodes)}`,
            );
          }
          if (summary.badShare > MAX_NON_2XX) {
            // Figures of a run with failures are meaningless; the others still are, so go on and fail at the end.
            const share = (summary.badShare * 100).toFixed(1);
            summary.failed = true;
            failures.push(
              `${endpoint.label} @ ${server.name}, ${connections} connections: ${share}% of requests failed, status codes ${JSON.stringify(summary.statusCodes)}`,
            );
            log(`  FAILED: ${failures.at(-1)}`);
          }
        }
      }
      for (const server of servers) results[endpoint.key][connections][server.name] = medianRun(runs[server.name]);
    }
  }
  await settle(servers.map((s) => s.pid)); // the last run's requests in flight are ours, not other work
  idleCheck.busyAfter = await otherCpuBusy();
  noteBusy('after the runs', idleCheck.busyAfter);

  const rows = buildRows(all, CONNECTIONS, results);
  const wallSeconds = Math.round((Date.now() - started) / 100) / 10;
  const out = (s) => process.stdout.write(`${s}\n`);
  out(
    `\nsvc bench: PostgreSQL, ${ROWS} Orders (+${CUSTOMERS} Customers), ${CONNECTIONS.join(' and ')} connections, ${DURATION_S} s per run (+${WARMUP_S} s warm-up)`,
  );
  out(`machine: node ${machine.node}, ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.platform}\n`);
  out(`${table(rows)}\n\n${LEGEND}`);
  const goalLevel = Math.max(...CONNECTIONS);
  const goalList = goals(rows, goalLevel);
  out(`\n${goalsTable(goalList, goalLevel)}`);
  for (const [name, p] of Object.entries(plans)) out(`\n${name} query plan (EXPLAIN ANALYZE):\n${p.plan.map((l) => `  ${l}`).join('\n')}`);
  const pct = (v) => (v === null ? 'n/a' : `${Math.round(v * 100)}%`);
  out(`\nCPU busy with other work: ${pct(idleCheck.busyBefore)} before the runs, ${pct(idleCheck.busyAfter)} after (above ~25%: noisy figures)`);
  out(`wall time ${wallSeconds} s (seed ${seedSeconds.toFixed(1)} s)`);

  const json = {
    date: new Date().toISOString(),
    machine,
    config: { rows: ROWS, customers: CUSTOMERS, durationS: DURATION_S, warmupS: WARMUP_S, connections: CONNECTIONS, poolMax: 10 },
    results: rows,
    table: table(rows),
    goals: goalList,
    plans,
    otherCpuBusy: idleCheck,
    failures,
    seedSeconds,
    wallSeconds,
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(json, null, 2)}\n`);
  out(`results written to ${RESULTS}`);
  if (failures.length > 0) throw new Error(`more than ${MAX_NON_2XX * 100}% of requests failed in:\n  ${failures.join('\n  ')}`);
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
