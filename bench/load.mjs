/**
 * Load and measurement for bench/run.mjs: the benchmarked endpoints, one autocannon run with the
 * server's and PostgreSQL's CPU time read around it, and the machine's idle check.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import autocannon from 'autocannon';
import { BENCH } from './baseline-db.mjs';
import { ADJECTIVES, NOUNS, STATUSES, pick } from './database.mjs';
import { onStop } from './processes.mjs';

export const PAGE_SIZE = 50;
export const STATS_PAGE = 20;
const q = encodeURIComponent;

/** The GET paths of the read endpoints, by endpoint key (under `/api`). */
const PATHS = {
  list: `/Order?filter=${q(BENCH.listFilter)}&pageSize=${PAGE_SIZE}`,
  listIds: `/Order?filter=${q(BENCH.listFilter)}&pageSize=${PAGE_SIZE}&lookups=id`,
  count: `/Order?filter=${q(BENCH.countFilter)}&count=only`,
  search: `/Order?filter=${q(BENCH.listFilter)}&search=${q(BENCH.search)}&pageSize=${PAGE_SIZE}`,
  aggregate: `/CustomerStats?sortBy=${q(BENCH.statsSort)}&pageSize=${STATS_PAGE}`,
  function: '/ping',
  ping: '/_webAppConfig',
};

/** GET paths whose bodies must be the same on every server (checked before the runs). */
export function comparablePaths(orderId) {
  return [`/Order/${orderId}`, ...Object.values(PATHS)];
}

/** The benchmarked endpoints, in run order (reads first, POST last, so every read sees the same table). */
export function endpoints(orderIds, customerIds) {
  const get = (path) => () => [{ method: 'GET', path }];
  return [
    {
      key: 'one',
      label: 'GET one by id',
      requests: () => [{ method: 'GET', path: '/api/Order/x', setupRequest: (req) => ({ ...req, path: `/api/Order/${pick(orderIds)}` }) }],
    },
    { key: 'list', label: `GET ${PAGE_SIZE} unpaid + customer`, requests: get(`/api${PATHS.list}`) },
    { key: 'listIds', label: `GET ${PAGE_SIZE} unpaid, lookups=id`, requests: get(`/api${PATHS.listIds}`) },
    { key: 'count', label: 'GET count=only (filter)', requests: get(`/api${PATHS.count}`) },
    { key: 'search', label: `GET filter + search "${BENCH.search}"`, requests: get(`/api${PATHS.search}`) },
    { key: 'aggregate', label: `GET aggregate query (top ${STATS_PAGE})`, requests: get(`/api${PATHS.aggregate}`) },
    { key: 'ping', label: 'GET _webAppConfig (no data)', requests: get(`/api${PATHS.ping}`) },
    { key: 'function', label: 'GET ping function (node: worker floor)', requests: get(`/api${PATHS.function}`) },
    {
      key: 'post',
      label: 'POST one row',
      requests: () => [
        {
          method: 'POST',
          path: '/api/Order',
          headers: { 'content-type': 'application/json' },
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({
              title: `${pick(ADJECTIVES)} ${pick(NOUNS)} bench`,
              total: Math.floor(Math.random() * 100_000) / 100,
              quantity: 1 + Math.floor(Math.random() * 10),
              paid: Math.random() < 0.6,
              status: pick(STATUSES),
              customer: { id: pick(customerIds) },
            }),
          }),
        },
      ],
    },
  ];
}

const CLOCK_TICKS_PER_S = 100; // USER_HZ: 100 on every Linux architecture Node supports

/**
 * `/proc/<pid>/stat` of a process as `{ name, fields }`, `fields[0]` being field 3 of the line (the
 * command name, field 2, is in parentheses and may hold spaces); null when it is gone or /proc is missing.
 */
function procStat(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const close = stat.lastIndexOf(')');
  return { name: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
}

/** utime + stime (fields 14 and 15 of the line) in clock ticks of 10 ms. */
const ownTicks = (fields) => Number(fields[11]) + Number(fields[12]);
const micros = (ticks) => (ticks * 1_000_000) / CLOCK_TICKS_PER_S;

/**
 * CPU time (user + system, all threads) the process `pid` has used so far, in µs, from
 * /proc/<pid>/stat; null where /proc is missing.
 */
export function processCpuMicros(pid) {
  const stat = procStat(pid);
  return stat && micros(ownTicks(stat.fields));
}

/**
 * CPU time (user + system) all PostgreSQL processes on this machine have used so far, in µs: every
 * live `postgres` process (postmaster, backends, WAL writer, checkpointer, autovacuum, …) plus, for
 * each postmaster, what its exited children used (fields 16–17, cutime + cstime), so a backend or an
 * autovacuum worker that ends inside a window still counts. Null without /proc.
 */
export function postgresCpuMicros() {
  if (!existsSync('/proc/self/stat')) return null;
  const procs = new Map(); // pid → fields
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = procStat(name); // null: exited since readdir
    if (stat?.name === 'postgres') procs.set(Number(name), stat.fields);
  }
  let ticks = 0;
  for (const fields of procs.values()) {
    ticks += ownTicks(fields);
    if (!procs.has(Number(fields[1]))) ticks += Number(fields[13]) + Number(fields[14]); // a postmaster: its reaped children
  }
  return micros(ticks);
}

let running; // the autocannon instance under way, stopped first on cleanup
onStop(() => running?.stop());

/** One autocannon run of `durationS` seconds against `server`; resolves to autocannon's result. */
export async function load(server, endpoint, durationS, connections) {
  const origin = new URL(server.url).origin;
  // timeout 30 s (autocannon's default is 10 s): svc's function time limit, so a queued call counts
  // as slow rather than failed.
  running = autocannon({ url: origin, connections, duration: durationS, timeout: 30, requests: endpoint.requests() });
  try {
    return await running;
  } finally {
    running = undefined;
  }
}

/**
 * A measured run: the server's CPU time and PostgreSQL's are read just before and after, so
 * `cpuUsPerReq` is the µs of server CPU (user + system) spent per completed request and
 * `pgCpuUsPerReq` the µs of PostgreSQL's (all its processes; null without /proc).
 */
export async function measure(server, endpoint, durationS, connections) {
  const cpuBefore = processCpuMicros(server.pid);
  const pgBefore = postgresCpuMicros();
  const result = await load(server, endpoint, durationS, connections);
  const cpuAfter = processCpuMicros(server.pid);
  const pgAfter = postgresCpuMicros();
  const summary = summarise(result);
  summary.cpuUsPerReq = cpuBefore === null || cpuAfter === null || summary.requests === 0 ? null : Math.round((cpuAfter - cpuBefore) / summary.requests);
  summary.pgCpuUsPerReq =
    pgBefore === null || pgAfter === null || summary.requests === 0 ? null : Math.round(((pgAfter - pgBefore) / summary.requests) * 10) / 10;
  summary.cpuBusyShare = cpuBefore === null || cpuAfter === null ? null : Math.round(((cpuAfter - cpuBefore) / (result.duration * 1e6)) * 100) / 100;
  return summary;
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

function cpuTimes() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: fields[3] + (fields[4] ?? 0), total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Waits until the work a warm-up left running is done: autocannon drops its connections when the
 * warm-up ends, but the server and PostgreSQL still finish the requests in flight (a slow aggregate
 * with 50 in flight keeps them busy for seconds), which would eat into the measured run that follows.
 * Returns once the servers (`pids`) and PostgreSQL together used under 20 ms of CPU (10% of one core)
 * in each of two 200 ms windows in a row, or after `maxMs`; other work on the machine does not delay
 * it. Resolves to the ms waited (0 without /proc).
 */
export async function settle(pids, maxMs = 60_000) {
  if (!existsSync('/proc/stat')) return 0;
  const ours = () => pids.reduce((sum, pid) => sum + (processCpuMicros(pid) ?? 0), postgresCpuMicros() ?? 0);
  const started = Date.now();
  let quiet = 0;
  while (quiet < 2 && Date.now() - started < maxMs) {
    const before = ours();
    await new Promise((done) => setTimeout(done, 200));
    quiet = ours() - before < 20_000 ? quiet + 1 : 0;
  }
  return Date.now() - started;
}

/**
 * Share of all CPUs busy over `ms` while nothing of ours is under load (Linux only; null elsewhere).
 * Other work on the machine (test runs, builds) makes every figure noisy, so it is reported.
 */
export async function otherCpuBusy(ms = 1000) {
  if (!existsSync('/proc/stat')) return null;
  const a = cpuTimes();
  await new Promise((done) => setTimeout(done, ms));
  const b = cpuTimes();
  const total = b.total - a.total;
  return total > 0 ? Math.round((1 - (b.idle - a.idle) / total) * 100) / 100 : null;
}
