/**
 * The result rows and the printed table of bench/run.mjs.
 *
 * A row is one endpoint at one connection count: `{ endpoint, label, connections, svc, node,
 * express, ratios }`, each server's figures as bench/load.mjs `measure()` gives them (req/s, p99 ms,
 * CPU µs per request, ...). Ratios, rounded to 2 decimals (null when a side is missing):
 *   svcPerNode     = svc req/s ÷ node:http baseline req/s   (1.00 = as fast as hand-written node:http + pg)
 *   svcPerExpress  = svc req/s ÷ Express baseline req/s
 *   cpuSvcPerExpress = svc CPU µs/request ÷ Express CPU µs/request (lower is better; 1.00 = same cost)
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
  "! more than 1% of that run's requests failed (non-2xx or errors): its figures mean nothing",
].join('\n');
