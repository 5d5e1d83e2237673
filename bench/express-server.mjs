#!/usr/bin/env node
/**
 * Second baseline for `npm run bench`: the same endpoints and the same database work as
 * bench/baseline-server.mjs (both call bench/baseline-db.mjs), written the way an Express 5 app
 * would be: `express.json()` for bodies, `req.query`, route parameters, `res.status().json()`, an
 * error middleware. svc is built on Express 5 too, so svc ÷ this server is what svc adds on top
 * of Express (parameter parsing, the filter compiler, Prisma's client and adapter, validation, logging).
 *
 * Env: DATABASE_URL (required), PORT (default 0 = any free port), HOST (default 127.0.0.1).
 * Prints `express: listening at http://<host>:<port>/api` once ready; SIGTERM/SIGINT stop it.
 */
import express from 'express';
import { createOrderStore } from './baseline-db.mjs';

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) {
  process.stderr.write('express: DATABASE_URL is required\n');
  process.exit(1);
}
const store = createOrderStore(DATABASE_URL);

const app = express();
app.disable('x-powered-by');

/** Sends the `{ status, body }` a store handler resolved to. */
const reply = (res) => (answer) => res.status(answer.status).json(answer.body);

app.get('/api/Order', async (req, res) => reply(res)(await store.list(req.query)));
app.post('/api/Order', express.json({ limit: '1mb' }), async (req, res) => reply(res)(await store.create(req.body)));
app.get('/api/Order/:id', async (req, res) => reply(res)(await store.one(req.params.id)));
app.get('/api/ping', (_req, res) => reply(res)(store.ping()));
app.get('/api/_webAppConfig', (_req, res) => reply(res)(store.webAppConfig()));
app.get('/api/CustomerStats', async (req, res) => reply(res)(await store.stats(req.query)));
app.use((req, res) => res.status(404).json({ error: `no route ${req.method} ${req.path}` }));
// Express needs all four parameters to see an error handler.
app.use((err, _req, res, _next) => {
  if (err?.type === 'entity.parse.failed') return res.status(400).json({ error: 'invalid JSON' });
  process.stderr.write(`express: ${err?.stack ?? err}\n`);
  res.status(500).json({ error: 'internal error' });
});

const host = process.env.HOST ?? '127.0.0.1';
const server = app.listen(Number(process.env.PORT ?? 0), host, () => {
  process.stdout.write(`express: listening at http://${host}:${server.address().port}/api\n`);
});

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
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
