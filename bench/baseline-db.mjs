/**
 * The database work of the two hand-written baselines (bench/baseline-server.mjs on `node:http`,
 * bench/express-server.mjs on Express 5), shared so both do exactly the same work and differ only in
 * their HTTP layer. It sends what a hand-written server would send for the benchmark's requests and
 * builds the JSON bodies svc answers: the reads that expand the customer lookup are ONE statement
 * with the customer joined in (`LEFT JOIN` + `json_build_object`), the page and count conditions are
 * svc's text (taken from PostgreSQL's statement log with `log_statement = 'all'`).
 *
 * Each handler takes plain inputs (a query object of strings, a parsed body) and resolves to
 * `{ status, body }`; the server turns that into a response. The filter language is not parsed:
 * only the filters and search the benchmark sends are accepted (400 otherwise), with their SQL
 * hard-coded, as a hand-written endpoint would have it.
 */
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

/** The requests the benchmark sends; bench/run.mjs passes the same values to svc. */
export const BENCH = {
  listFilter: 'paid eq false',
  countFilter: 'total gt 500 and paid eq false',
  search: 'lamp 12',
  statsSort: 'orders-',
};

const ORDER_COLUMNS = ['id', 'title', 'total', 'quantity', 'paid', 'placedAt', 'status', 'customer', 'createdAt', 'updatedAt', 'createdBy'];
const CUSTOMER_COLUMNS = ['id', 'name', 'country', 'email', 'tier', 'createdAt', 'updatedAt', 'createdBy'];
const orderSelect = ORDER_COLUMNS.map((c) => `"t0"."${c}"`).join(', ');
export const SEARCH_QUERY = BENCH.search
  .toLowerCase()
  .split(/[^\p{L}\p{N}]+/u)
  .filter(Boolean)
  .map((w) => `${w}:*`)
  .join(' & ');

/**
 * The customer as svc answers it, built by PostgreSQL: date-times as ISO 8601 UTC with milliseconds
 * (`toISOString()`'s form), the tier a JSON number; NULL when the order has no customer.
 */
const iso = (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const customerJson = `CASE WHEN "c"."id" IS NULL THEN NULL ELSE json_build_object(${CUSTOMER_COLUMNS.map(
  (c) => `'${c}', ${c.endsWith('At') ? iso(`"c"."${c}"`) : `"c"."${c}"`}`,
).join(', ')}) END AS "customerRow"`;
/** The orders with their customer joined in: what a hand-written endpoint sends for `lookups=full`. */
const orderJoined = `SELECT ${orderSelect}, ${customerJson} FROM "Order" AS "t0" LEFT JOIN "Customer" AS "c" ON "c"."id" = "t0"."customer"`;

/** The statements of the baselines (svc's conditions and order, so the plans are comparable). */
export const SQL = {
  /** GET one with the customer (one statement). */
  one: `${orderJoined} WHERE "t0"."id" = $1`,
  /** The page with the customer joined in (default `lookups=full`). */
  list: `${orderJoined} WHERE ("t0"."paid" = $1) ORDER BY "t0"."id" LIMIT $2 OFFSET $3`,
  /** The page without the join (`lookups=id`): svc's statement text. */
  listIds: `SELECT ${orderSelect} FROM "Order" AS "t0" WHERE ("t0"."paid" = $1) ORDER BY "t0"."id" LIMIT $2 OFFSET $3`,
  count: 'SELECT COUNT(*) AS "n" FROM "Order" AS "t0" WHERE (("t0"."total" > $1 AND "t0"."paid" = $2))',
  search: `${orderJoined} WHERE ("t0"."paid" = $1) AND ("t0"."__search" @@ to_tsquery('simple', $2)) ORDER BY "t0"."id" LIMIT $3 OFFSET $4`,
  // What a hand-written endpoint would send: the GROUP BY with a join, without svc's outer query.
  stats: `SELECT o."customer" AS "id", c."name" AS "customerName", COUNT(o."id") AS "orders", SUM(o."quantity") AS "units",
    AVG(o."total") AS "averageTotal", MAX(o."placedAt") AS "lastOrder"
    FROM "Order" o LEFT JOIN "Customer" c ON c."id" = o."customer"
    GROUP BY o."customer", c."name" ORDER BY COUNT(o."id") DESC, o."customer" LIMIT $1`,
  insert: `INSERT INTO "public"."Order" (${ORDER_COLUMNS.map((c) => `"${c}"`).join(',')}) VALUES (${ORDER_COLUMNS.map((_, i) => `$${i + 1}`).join(',')})`,
};

/** svc's `GET /api/_webAppConfig` body for an app without identity providers (runtime/auth/sign-in.ts). */
export const WEB_APP_CONFIG = { loginUrl: '/login', loginMethods: ['password'], refreshUrl: '/api/_refresh', logoutUrl: '/api/_logout' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STATUSES = new Set(['new', 'packed', 'shipped', 'delivered']);

/**
 * A pg row → the JSON order svc answers (numeric is a string in pg; dates serialise as ISO). The
 * customer is the joined-in object when the statement has one (`customerRow`), else `{ id }`.
 */
function orderOf(row) {
  return {
    id: row.id,
    title: row.title,
    total: Number(row.total),
    quantity: row.quantity,
    paid: row.paid,
    placedAt: row.placedAt,
    status: row.status,
    customer: row.customer === null ? null : (row.customerRow ?? { id: row.customer }),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    createdBy: row.createdBy,
  };
}

function pageSizeOf(raw, fallback = 10) {
  const n = Number(raw ?? fallback);
  return Number.isInteger(n) && n >= 1 && n <= 1000 ? n : null;
}

const bad = (error) => ({ status: 400, body: { error } });

/**
 * The baselines' handlers over one `pg.Pool` of 10 connections, the size of svc's pool
 * (@prisma/adapter-pg calls `new pg.Pool(config)` without `max`; pg-pool's default is 10).
 * Returns `{ list, one, create, stats, ping, webAppConfig, end }`; each handler resolves to `{ status, body }`.
 */
export function createOrderStore(databaseUrl) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });

  /** GET /api/Order?filter=...&pageSize=N[&count=only][&search=...][&lookups=id|full] */
  async function list(query) {
    if (query.count === 'only') {
      if (query.filter !== BENCH.countFilter) return bad(`baseline only counts filter=${BENCH.countFilter}`);
      const { rows } = await pool.query(SQL.count, [500, false]);
      return { status: 200, body: { data: [], meta: { count: Number(rows[0].n) } } };
    }
    if (query.filter !== BENCH.listFilter) return bad(`baseline only serves filter=${BENCH.listFilter}`);
    const pageSize = pageSizeOf(query.pageSize);
    if (pageSize === null) return bad('bad pageSize');
    const lookups = query.lookups ?? 'full';
    if (lookups !== 'full' && lookups !== 'id') return bad('lookups must be id or full');
    let rows;
    if (query.search !== undefined) {
      if (query.search !== BENCH.search || lookups !== 'full') return bad(`baseline only serves search=${BENCH.search} with lookups=full`);
      ({ rows } = await pool.query(SQL.search, [false, SEARCH_QUERY, pageSize, 0]));
    } else {
      ({ rows } = await pool.query(lookups === 'full' ? SQL.list : SQL.listIds, [false, pageSize, 0]));
    }
    return { status: 200, body: { data: rows.map(orderOf) } };
  }

  /** GET /api/Order/:id */
  async function one(id) {
    if (!UUID.test(id)) return { status: 404, body: { error: 'not found' } };
    const { rows } = await pool.query(SQL.one, [id.toLowerCase()]);
    if (rows.length === 0) return { status: 404, body: { error: 'not found' } };
    return { status: 200, body: orderOf(rows[0]) };
  }

  /** POST /api/Order (one object): a few type checks, then one INSERT (the foreign key checks the customer, as in svc). */
  async function create(body) {
    const customer = typeof body?.customer === 'object' && body.customer !== null ? body.customer.id : body?.customer;
    const ok =
      body &&
      typeof body === 'object' &&
      !Array.isArray(body) &&
      typeof body.title === 'string' &&
      body.title.length <= 200 &&
      typeof body.total === 'number' &&
      body.total >= 0 &&
      (body.quantity === undefined || (Number.isInteger(body.quantity) && body.quantity >= 1)) &&
      (body.paid === undefined || typeof body.paid === 'boolean') &&
      (body.status === undefined || body.status === null || STATUSES.has(body.status)) &&
      (customer === undefined || customer === null || (typeof customer === 'string' && UUID.test(customer)));
    if (!ok) return bad('validation failed');
    const now = new Date();
    const id = uuidv7();
    const customerId = customer ? customer.toLowerCase() : null;
    const values = [
      id,
      body.title,
      body.total,
      body.quantity ?? 1,
      body.paid ?? false,
      body.placedAt ? new Date(body.placedAt) : now,
      body.status ?? null,
      customerId,
      now,
      now,
      null,
    ];
    // One statement, as a hand-written server would: the foreign key checks the customer.
    try {
      await pool.query(SQL.insert, values);
    } catch (err) {
      if (err.code === '23503') return bad('no such customer');
      throw err;
    }
    return { status: 201, body: { data: [id] } };
  }

  /** GET /api/ping: the trivial function's answer, no database (svc runs it as a function). */
  function ping() {
    return { status: 200, body: { pong: true } };
  }

  /** GET /api/_webAppConfig: a constant, no database (svc's answer for an app without identity providers). */
  function webAppConfig() {
    return { status: 200, body: WEB_APP_CONFIG };
  }

  /** GET /api/CustomerStats?sortBy=orders-&pageSize=N (the aggregate query of bench/app). */
  async function stats(query) {
    const pageSize = pageSizeOf(query.pageSize);
    if (query.sortBy !== BENCH.statsSort || pageSize === null) return bad(`baseline only serves sortBy=${BENCH.statsSort}`);
    const { rows } = await pool.query(SQL.stats, [pageSize]);
    const data = rows.map((r) => ({
      id: r.id,
      customerName: r.customerName,
      orders: Number(r.orders),
      units: r.units === null ? null : Number(r.units),
      averageTotal: r.averageTotal === null ? null : Number(r.averageTotal),
      lastOrder: r.lastOrder === null ? null : r.lastOrder.toISOString(),
    }));
    return { status: 200, body: { data } };
  }

  return { list, one, create, stats, ping, webAppConfig, end: () => pool.end() };
}
