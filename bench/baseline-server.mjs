#!/usr/bin/env node
/**
 * Baseline for `npm run bench`: the smallest honest hand-written server for the benchmarked endpoints
 * of bench/app on `node:http` and plain `pg`. The database work is bench/baseline-db.mjs, shared with
 * the Express baseline, so this file is only the HTTP layer: URL split, query string, JSON body.
 *
 *   GET  /api/Order?filter=...&pageSize=N[&count=only][&search=...][&lookups=id|full]
 *   GET  /api/Order/:id      (customer joined in)
 *   POST /api/Order          (one object)
 *   GET  /api/CustomerStats?sortBy=orders-&pageSize=N
 *   GET  /api/ping           ({ "pong": true } from a worker thread: the floor of svc's function call, bench/worker-floor.mjs)
 *   GET  /api/_webAppConfig  (a constant: a request that reads no data)
 *
 * Env: DATABASE_URL (required), PORT (default 0 = any free port), HOST (default 127.0.0.1).
 * Prints `baseline: listening at http://<host>:<port>/api` once ready; SIGTERM/SIGINT stop it.
 */
import { createServer } from 'node:http';
import { createOrderStore } from './baseline-db.mjs';
import { createWorkerFloor } from './worker-floor.mjs';

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) {
  process.stderr.write('baseline: DATABASE_URL is required\n');
  process.exit(1);
}
const store = createOrderStore(DATABASE_URL);
const floor = createWorkerFloor();

function send(res, { status, body }) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function route(req, res) {
  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  const query = Object.fromEntries(new URLSearchParams(q === -1 ? '' : req.url.slice(q + 1)));
  if (path === '/api/Order') {
    if (req.method === 'GET') return send(res, await store.list(query));
    if (req.method === 'POST') {
      let body;
      try {
        body = await readJson(req);
      } catch {
        return send(res, { status: 400, body: { error: 'invalid JSON' } });
      }
      return send(res, await store.create(body));
    }
  } else if (path === '/api/ping' && req.method === 'GET') {
    return send(res, { status: 200, body: await floor.call('ping', {}) });
  } else if (path === '/api/_webAppConfig' && req.method === 'GET') {
    return send(res, store.webAppConfig());
  } else if (path === '/api/CustomerStats' && req.method === 'GET') {
    return send(res, await store.stats(query));
  } else if (path.startsWith('/api/Order/') && req.method === 'GET') {
    return send(res, await store.one(decodeURIComponent(path.slice('/api/Order/'.length))));
  }
  send(res, { status: 404, body: { error: `no route ${req.method} ${path}` } });
}

const server = createServer((req, res) => {
  route(req, res).catch((err) => {
    process.stderr.write(`baseline: ${err?.stack ?? err}\n`);
    if (!res.headersSent) send(res, { status: 500, body: { error: 'internal error' } });
  });
});

const host = process.env.HOST ?? '127.0.0.1';
server.listen(Number(process.env.PORT ?? 0), host, () => {
  process.stdout.write(`baseline: listening at http://${host}:${server.address().port}/api\n`);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  // Finish in-flight requests (at most 2 s), then close the pool.
  const force = setTimeout(() => server.closeAllConnections(), 2000);
  server.close(() => {
    clearTimeout(force);
    store.end().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  server.closeIdleConnections();
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
