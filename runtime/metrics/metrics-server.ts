/**
 * @module The metrics on a port of their own (svc.json `metrics: { "port": N }`, docs/operations.md):
 * `GET /metrics` (and `/api/_metrics`, the path of the main port) in the Prometheus text format,
 * without authentication — the port is meant for a scraper on a private network — bound to the
 * server's host. Anything else is 404 (405 for another method), with the DESIGN §4 error body.
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Listens on `port` (0: any free one) at `host` and serves `metrics`.
 * @returns the listening server (its `address()` has the port)
 * @throws the listen error (port in use, no permission)
 */
export async function serveMetrics(metrics: Metrics, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path !== '/metrics' && path !== '/api/_metrics') {
      res
        .writeHead(404, { 'content-type': JSON_TYPE })
        .end(JSON.stringify({ error: `no route ${path.slice(0, 200)}: the metrics are at /metrics`, code: 'NOT_FOUND' }));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { 'content-type': JSON_TYPE, allow: 'GET, HEAD' })
        .end(JSON.stringify({ error: 'the metrics answer GET only', code: 'METHOD_NOT_ALLOWED' }));
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': JSON_TYPE }).end(JSON.stringify({ error: 'the metrics could not be collected', code: 'INTERNAL' })),
    );
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  return server;
}
