#!/usr/bin/env node
/**
 * Baseline for `npm run bench`: the smallest honest hand-written server for the four benchmarked
 * endpoints of the bench app (bench/app), on `node:http` and plain `pg`. It sends the same SQL
 * statements svc sends for those requests (captured from PostgreSQL's statement log) and answers
 * the same JSON bodies, so the difference to `svc serve` is the cost of the framework: Express,
 * parameter parsing, the filter compiler, Prisma's client/adapter layers, input validation.
 *
 *   GET  /api/Item?filter=<the bench filter>&pageSize=N[&count=only]
 *   GET  /api/Item/:id
 *   POST /api/Item        (one object)
 *   GET  /api/Item?filter=<the bench filter>&search=<the bench search>&pageSize=N
 *   GET  /api/SupplierStats?sortBy=items-&pageSize=N   (the aggregate query of bench/app)
 *
 * The filter is not parsed: only the one filter the benchmark sends is accepted (400 otherwise);
 * its SQL is hard-coded, as a hand-written endpoint would have it.
 *
 * Env: DATABASE_URL (required), PORT (default 0 = any free port), HOST (default 127.0.0.1),
 * BENCH_FILTER (the accepted filter; default the one bench/run.mjs sends).
 * Prints `baseline: listening at http://<host>:<port>/api` once ready; SIGTERM/SIGINT stop it.
 */
import { createServer } from 'node:http';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) {
  process.stderr.write('baseline: DATABASE_URL is required\n');
  process.exit(1);
}
const FILTER = process.env.BENCH_FILTER ?? 'price gt 500 and active eq true';
const FILTER_VALUES = [500, true];

// Same pool size as svc: @prisma/adapter-pg hands its config to `new pg.Pool(config)` without a
// `max`, and pg-pool defaults `max` to 10.
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 });

const ITEM_COLUMNS = ['id', 'name', 'category', 'price', 'stock', 'active', 'createdOn', 'supplier', 'createdAt', 'updatedAt', 'createdBy'];
const SUPPLIER_COLUMNS = ['id', 'name', 'country', 'email', 'rating', 'createdAt', 'updatedAt', 'createdBy'];
const itemSelect = ITEM_COLUMNS.map((c) => `"t0"."${c}"`).join(', ');
const supplierSelect = SUPPLIER_COLUMNS.map((c) => `"t0"."${c}"`).join(', ');
const WHERE = '(("t0"."price" > $1 AND "t0"."active" = $2))';

// Search and aggregate: what a hand-written endpoint would send (tsquery over the GIN-indexed
// column the svc migration created; GROUP BY with a join), not svc's subquery form.
const SEARCH = process.env.BENCH_SEARCH ?? 'lamp 1234';
const SEARCH_QUERY = SEARCH.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean).map((w) => `${w}:*`).join(' & ');

const SQL = {
  search: `SELECT ${itemSelect} FROM "Item" AS "t0" WHERE ${WHERE} AND "t0"."__search" @@ to_tsquery('simple', $3) ORDER BY "t0"."id" LIMIT $4`,
  stats: `SELECT i."supplier" AS "id", s."name" AS "supplierName", COUNT(*) AS "items", SUM(i."stock") AS "units",
    AVG(i."price") AS "averagePrice", MAX(i."createdOn") AS "newest"
    FROM "Item" i LEFT JOIN "Supplier" s ON s."id" = i."supplier"
    GROUP BY i."supplier", s."name" ORDER BY COUNT(*) DESC, i."supplier" LIMIT $1`,
  list: `SELECT ${itemSelect} FROM "Item" AS "t0" WHERE ${WHERE} ORDER BY "t0"."id" LIMIT $3 OFFSET $4`,
  count: `SELECT COUNT(*) AS "n" FROM "Item" AS "t0" WHERE ${WHERE}`,
  one: `SELECT ${itemSelect} FROM "Item" AS "t0" WHERE 1=1 AND "t0"."id" = $1`,
  suppliers: (n) => `SELECT ${supplierSelect} FROM "Supplier" AS "t0" WHERE "t0"."id" IN (${Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ')})`,
  checkSupplier: 'SELECT "id" FROM "Supplier" WHERE "id" IN ($1)',
  insert: `INSERT INTO "public"."Item" (${ITEM_COLUMNS.map((c) => `"${c}"`).join(',')}) VALUES (${ITEM_COLUMNS.map((_, i) => `$${i + 1}`).join(',')}) RETURNING ${ITEM_COLUMNS.map((c) => `"public"."Item"."${c}"`).join(', ')}`,
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CATEGORIES = new Set(['books', 'games', 'garden', 'kitchen', 'tools']);

/** A pg row → the JSON item svc answers (numeric is a string in pg; dates serialise as ISO). */
function itemOf(row) {
  return {
    id: row.id, name: row.name, category: row.category,
    price: row.price === null ? null : Number(row.price),
    stock: row.stock, active: row.active, createdOn: row.createdOn,
    supplier: row.supplier === null ? null : { id: row.supplier },
    createdAt: row.createdAt, updatedAt: row.updatedAt, createdBy: row.createdBy,
  };
}

/** Replaces each `supplier: { id }` with the Supplier row, one `IN (...)` query per page (as svc). */
async function expandSuppliers(items) {
  const ids = [...new Set(items.map((i) => i.supplier?.id).filter(Boolean))];
  if (ids.length === 0) return;
  const { rows } = await pool.query(SQL.suppliers(ids.length), ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const item of items) if (item.supplier) item.supplier = byId.get(item.supplier.id) ?? item.supplier;
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** GET /api/SupplierStats?sortBy=items-&pageSize=N */
async function supplierStats(res, query) {
  const pageSize = Number(query.get('pageSize') ?? 10);
  if (query.get('sortBy') !== 'items-' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return send(res, 400, { error: 'baseline only serves sortBy=items-' });
  const { rows } = await pool.query(SQL.stats, [pageSize]);
  send(res, 200, { data: rows.map((r) => ({
    id: r.id, supplierName: r.supplierName, items: Number(r.items), units: r.units === null ? null : Number(r.units),
    averagePrice: r.averagePrice === null ? null : Number(r.averagePrice), newest: r.newest === null ? null : r.newest.toISOString(),
  })) });
}

async function list(res, query) {
  if (query.has('search')) {
    if (query.get('search') !== SEARCH || query.get('filter') !== FILTER) return send(res, 400, { error: `baseline only serves search=${SEARCH}` });
    const pageSize = Number(query.get('pageSize') ?? 10);
    const { rows } = await pool.query(SQL.search, [...FILTER_VALUES, SEARCH_QUERY, pageSize]);
    const data = rows.map(itemOf);
    await expandSuppliers(data);
    return send(res, 200, { data });
  }
  if ((query.get('filter') ?? '') !== FILTER) return send(res, 400, { error: `baseline only serves filter=${FILTER}` });
  if (query.get('count') === 'only') {
    const { rows } = await pool.query(SQL.count, FILTER_VALUES);
    return send(res, 200, { data: [], meta: { count: Number(rows[0].n) } });
  }
  const pageSize = Number(query.get('pageSize') ?? 10);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return send(res, 400, { error: 'bad pageSize' });
  const { rows } = await pool.query(SQL.list, [...FILTER_VALUES, pageSize, 0]);
  const data = rows.map(itemOf);
  await expandSuppliers(data);
  send(res, 200, { data });
}

async function getOne(res, id) {
  if (!UUID.test(id)) return send(res, 404, { error: 'not found' });
  const { rows } = await pool.query(SQL.one, [id.toLowerCase()]);
  if (rows.length === 0) return send(res, 404, { error: 'not found' });
  const item = itemOf(rows[0]);
  await expandSuppliers([item]);
  send(res, 200, item);
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** POST one Item: a few type checks, then one transaction: check the lookup, insert (as svc). */
async function create(req, res) {
  let body;
  try { body = await readJson(req); } catch { return send(res, 400, { error: 'invalid JSON' }); }
  const supplier = typeof body?.supplier === 'object' && body.supplier !== null ? body.supplier.id : body?.supplier;
  const ok = body && typeof body === 'object' && !Array.isArray(body)
    && typeof body.name === 'string' && body.name.length <= 200
    && (body.category === undefined || body.category === null || CATEGORIES.has(body.category))
    && typeof body.price === 'number' && body.price >= 0
    && (body.stock === undefined || (Number.isInteger(body.stock) && body.stock >= 0))
    && (body.active === undefined || typeof body.active === 'boolean')
    && (supplier === undefined || supplier === null || (typeof supplier === 'string' && UUID.test(supplier)));
  if (!ok) return send(res, 400, { error: 'validation failed' });
  const now = new Date();
  const id = uuidv7();
  const values = [id, body.name, body.category ?? null, body.price, body.stock ?? 0, body.active ?? true,
    body.createdOn ? new Date(body.createdOn) : now, supplier ? supplier.toLowerCase() : null, now, now, null];
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    if (supplier) {
      const found = await client.query(SQL.checkSupplier, [values[7]]);
      if (found.rows.length === 0) {
        await client.query('ROLLBACK');
        return send(res, 400, { error: 'no such supplier' });
      }
    }
    await client.query(SQL.insert, values);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  send(res, 201, { data: [id] });
}

const server = createServer(async (req, res) => {
  try {
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    const query = new URLSearchParams(q === -1 ? '' : req.url.slice(q + 1));
    if (path === '/api/Item') {
      if (req.method === 'GET') return await list(res, query);
      if (req.method === 'POST') return await create(req, res);
    } else if (path === '/api/SupplierStats' && req.method === 'GET') {
      return await supplierStats(res, query);
    } else if (path.startsWith('/api/Item/') && req.method === 'GET') {
      return await getOne(res, decodeURIComponent(path.slice('/api/Item/'.length)));
    }
    send(res, 404, { error: `no route ${req.method} ${path}` });
  } catch (err) {
    process.stderr.write(`baseline: ${err?.stack ?? err}\n`);
    if (!res.headersSent) send(res, 500, { error: 'internal error' });
  }
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
    pool.end().then(() => process.exit(0), () => process.exit(1));
  });
  server.closeIdleConnections();
}
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
