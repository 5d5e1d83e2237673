/**
 * The bench database: a fresh PostgreSQL database per run, seeded with Customers and Orders through
 * plain `pg`, and the query plans of the statements under load (EXPLAIN ANALYZE).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { SQL } from './baseline-db.mjs';
import { log, onCleanup } from './processes.mjs';

export const STATUSES = ['new', 'packed', 'shipped', 'delivered'];
export const ADJECTIVES = ['Compact', 'Deluxe', 'Classic', 'Rugged', 'Smart', 'Eco', 'Mini', 'Pro', 'Vintage', 'Wireless'];
export const NOUNS = ['Lamp', 'Kettle', 'Shovel', 'Novel', 'Puzzle', 'Hammer', 'Chair', 'Planter', 'Board game', 'Drill'];
/** A random element of `list`. */
export const pick = (list) => list[Math.floor(Math.random() * list.length)];

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates `svc_bench_<random>` from the admin URL (dropped on cleanup); resolves to `{ name, url }`. */
export async function createDatabase(adminUrl) {
  const name = `svc_bench_${randomBytes(6).toString('hex')}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE "${name}"`));
  onCleanup(async () => {
    await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    log(`dropped database ${name}`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Multi-row INSERTs of `count` rows, `batch` rows per statement; `row(i)` gives the bound values. */
async function insertRows(client, table, columns, literals, count, batch, row) {
  const width = columns.length;
  for (let start = 0; start < count; start += batch) {
    const n = Math.min(batch, count - start);
    const values = [];
    const tuples = [];
    for (let i = 0; i < n; i++) {
      values.push(...row(start + i));
      const params = columns.map((_, j) => `$${i * width + j + 1}`);
      tuples.push(`(${[...params, ...Object.values(literals)].join(', ')})`);
    }
    const names = [...columns, ...Object.keys(literals)].map((c) => `"${c}"`).join(', ');
    await client.query(`INSERT INTO "${table}" (${names}) VALUES ${tuples.join(', ')}`, values);
  }
}

/**
 * Seeds `customers` Customers and `orders` Orders (UUIDv7 ids, so id order is creation order), then
 * ANALYZE. About 40% of orders are unpaid and totals are uniform in 0-1000, so the count filter
 * (`total gt 500 and paid eq false`) matches about 20%. Resolves to `{ customerIds, orderIds }`.
 */
export async function seed(url, { customers, orders }) {
  return withClient(url, async (client) => {
    const system = { createdAt: 'now()', updatedAt: 'now()', createdBy: 'NULL' };
    const customerIds = Array.from({ length: customers }, () => uuidv7());
    await insertRows(client, 'Customer', ['id', 'name', 'country', 'email', 'tier'], system, customers, 1000, (i) => [
      customerIds[i],
      `Customer ${i + 1}`,
      pick(['NO', 'SE', 'DK', 'DE', 'NL', 'PL']),
      `orders@customer${i + 1}.example`,
      1 + (i % 5),
    ]);
    const orderIds = [];
    const twoYears = 2 * 365 * 24 * 3600 * 1000;
    const now = Date.now();
    // 8 parameters per row: 5000 rows = 40,000 bound values (PostgreSQL allows 65,535).
    await insertRows(client, 'Order', ['id', 'title', 'total', 'quantity', 'paid', 'placedAt', 'status', 'customer'], system, orders, 5000, (i) => {
      const id = uuidv7();
      orderIds.push(id);
      return [
        id,
        `${pick(ADJECTIVES)} ${pick(NOUNS)} ${i + 1}`,
        (Math.floor(Math.random() * 100_000) / 100).toFixed(2), // 0.00 - 999.99
        1 + Math.floor(Math.random() * 10),
        Math.random() < 0.6,
        new Date(now - Math.floor(Math.random() * twoYears)),
        pick(STATUSES),
        Math.random() < 0.95 ? pick(customerIds) : null,
      ];
    });
    await client.query('ANALYZE');
    return { customerIds, orderIds };
  });
}

/** EXPLAIN (ANALYZE, BUFFERS) of the baselines' list (customer joined in), count and search statements. */
export async function explain(url, searchQuery) {
  return withClient(url, async (client) => {
    const plan = async (text, values) => (await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, values)).rows.map((r) => r['QUERY PLAN']);
    return {
      list: { sql: SQL.list, plan: await plan(SQL.list, [false, 50, 0]) },
      count: { sql: SQL.count, plan: await plan(SQL.count, [500, false]) },
      search: { sql: SQL.search, plan: await plan(SQL.search, [false, searchQuery, 50, 0]) },
    };
  });
}
