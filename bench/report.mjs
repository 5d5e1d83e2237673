/**
 * The result rows and the printed table of bench/run.mjs.
 *
 * A row is one endpoint at one connection count: `{ endpoint, label, connections, svc, node,
 * express, ratios }`, each server's figures as bench/load.mjs `measure()` gives them (req/s, p99 ms,
 * CPU µs per request, ...). Ratios, rounded to 2 decimals (null when a side is missing):
 *   svcPerNode     = svc req/s ÷ node:http baseline req/s   (1.00 = as fast as hand-written node:http + pg)
 *   svcPerExpress  = svc req/s ÷ Express baseline req/s
 *   cpuSvcPerExpress = svc CPU µs/request ÷ Express CPU µs/request (lower is better; 1.00 = same cost)
 *   pgSvcPerNode     = PostgreSQL's CPU µs per svc request ÷ per node:http baseline request
 */

const ratio = (a, b) => (a == null || b == null || b === 0 ? null : Math.round((a / b) * 100) / 100);

/** Builds the rows from `results[endpointKey][connections][serverName]`. */
export function buildRows(endpoints, connectionLevels, results) {
  const rows = [];
  for (const e of endpoints) {
    for (const c of connectionLevels) {
      const r = results[e.key]?.[c];
      if (!r) continue;
      const ratios = {
        svcPerNode: ratio(r.svc.reqPerSec, r.node.reqPerSec),
        svcPerExpress: ratio(r.svc.reqPerSec, r.express.reqPerSec),
        cpuSvcPerExpress: ratio(r.svc.cpuUsPerReq, r.express.cpuUsPerReq),
        pgSvcPerNode: ratio(r.svc.pgCpuUsPerReq, r.node.pgCpuUsPerReq),
      };
      rows.push({ endpoint: e.key, label: e.label, connections: c, svc: r.svc, node: r.node, express: r.express, ratios });
    }
  }
  return rows;
}

const fmt = (v, digits = 0) => (v == null ? '-' : Number(v).toFixed(digits));
const rate = (m) => (m == null ? '-' : `${fmt(m.reqPerSec)}${m.failed ? '!' : ''}`);

/** A Markdown table of the rows (throughput, p99, CPU per request, ratios). */
export function table(rows) {
  const header = [
    'endpoint',
    'conns',
    'svc req/s',
    'node req/s',
    'express req/s',
    'svc÷node',
    'svc÷express',
    'svc p99 ms',
    'node p99',
    'express p99',
    'svc CPU µs/req',
    'node CPU',
    'express CPU',
    'CPU svc÷express',
    'svc PG µs/req',
    'node PG',
    'express PG',
    'PG svc÷node',
  ];
  const body = rows.map((r) => [
    r.label,
    String(r.connections),
    rate(r.svc),
    rate(r.node),
    rate(r.express),
    fmt(r.ratios.svcPerNode, 2),
    fmt(r.ratios.svcPerExpress, 2),
    fmt(r.svc.p99Ms),
    fmt(r.node.p99Ms),
    fmt(r.express.p99Ms),
    fmt(r.svc.cpuUsPerReq),
    fmt(r.node.cpuUsPerReq),
    fmt(r.express.cpuUsPerReq),
    fmt(r.ratios.cpuSvcPerExpress, 2),
    fmt(r.svc.pgCpuUsPerReq),
    fmt(r.node.pgCpuUsPerReq),
    fmt(r.express.pgCpuUsPerReq),
    fmt(r.ratios.pgSvcPerNode, 2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

/** The legend printed under the table. */
export const LEGEND = [
  "svc÷node, svc÷express = svc req/s ÷ that baseline's req/s (1.00 = as fast; 0.50 = half the requests per second)",
  'CPU µs/req = server process CPU time (user + system, all threads, /proc/<pid>/stat) over the measured run ÷ requests',
  "CPU svc÷express = svc CPU per request ÷ the Express baseline's (lower is better)",
  'PG µs/req = CPU time of all PostgreSQL processes over the measured run ÷ requests (lower is better)',
  'function row: the node column is the worker floor (node:http → worker thread → back, bench/worker-floor.mjs)',
  "! more than 1% of that run's requests failed (non-2xx or errors): its figures mean nothing",
].join('\n');

/**
 * The goals of issue 35, checked against the rows of one connection count: `[{ goal, value, met }]`
 * (value null and met null when the row was not run). Ratios as in the table.
 */
export function goals(rows, connections) {
  const at = (key) => rows.find((r) => r.endpoint === key && r.connections === connections);
  const out = [];
  const check = (goal, key, pick, test) => {
    const row = at(key);
    const value = row ? pick(row) : null;
    out.push({ goal, value, met: value == null ? null : test(value) });
  };
  for (const key of ['one', 'list', 'post'])
    check(
      `${key}: PostgreSQL CPU svc÷node ≤ 1.15`,
      key,
      (r) => r.ratios.pgSvcPerNode,
      (v) => v <= 1.15,
    );
  check(
    'ping: PostgreSQL CPU per svc request ≤ 3 µs',
    'ping',
    (r) => r.svc.pgCpuUsPerReq,
    (v) => v <= 3,
  );
  for (const key of ['one', 'list', 'post', 'ping'])
    check(
      `${key}: svc CPU ÷ express ≤ 1.00`,
      key,
      (r) => r.ratios.cpuSvcPerExpress,
      (v) => v <= 1,
    );
  for (const key of ['one', 'list', 'post'])
    check(
      `${key}: req/s svc÷node ≥ 0.85`,
      key,
      (r) => r.ratios.svcPerNode,
      (v) => v >= 0.85,
    );
  check(
    'ping: req/s svc÷node ≥ 0.50',
    'ping',
    (r) => r.ratios.svcPerNode,
    (v) => v >= 0.5,
  );
  check(
    'function: req/s svc÷worker floor ≥ 0.60',
    'function',
    (r) => r.ratios.svcPerNode,
    (v) => v >= 0.6,
  );
  return out;
}

/** The goals as a Markdown table. */
export function goalsTable(list, connections) {
  const lines = [`| goal (${connections} connections) | figure | met |`, '|:--|--:|:-:|'];
  for (const g of list) lines.push(`| ${g.goal} | ${g.value == null ? '-' : g.value} | ${g.met == null ? '-' : g.met ? 'yes' : 'no'} |`);
  return lines.join('\n');
}
