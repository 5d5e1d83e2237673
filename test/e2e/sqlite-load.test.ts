/**
 * Issue 10, end to end: examples/shop served on SQLite under a mixed load — bulk POSTs of 1000 rows,
 * heavy filtered lists with `count=true`, and cheap GETs by id from 30 concurrent loops for ~10 s (longer, up
 * to 60 s, until there are 100 cheap GETs for the p99 when other test files load the machine).
 * A cheap GET must not wait behind the heavy work: its p99 stays under half the heavy list's median
 * measured in the same run. A GET stalled behind a heavy statement waits about that statement's whole
 * duration, so the ratio holds only once no SQLite statement runs on the server's main thread
 * (runtime/data/sqlite-driver.ts). A ratio, not a figure in ms: the suite shares two cores with other
 * test files, and every latency here grows with that load (a fixed 250 ms bound failed CI at 266 ms
 * while the heavy median was 976 ms).
 * Bounded: every request has a 15 s timeout, the loops stop at a deadline, the test fails (never hangs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';

const SHOP = join(ROOT, 'examples/shop');
const LOOPS = 30; // concurrent clients: 10 bulk writers, 10 heavy readers, 10 cheap readers
const LOAD_MS = 10_000;
const MIN_CHEAP = 100; // GETs by id a p99 needs: on a busy machine the load goes on past LOAD_MS until they are in,
const MAX_LOAD_MS = 60_000; // but never longer than this
const REQUEST_TIMEOUT_MS = 15_000;
const SEED_BATCHES = 10; // 10 × 1000 products before the load starts
const P99_SHARE_OF_HEAVY_P50 = 0.5;
const CATEGORIES = ['books', 'games', 'garden', 'kitchen', 'tools'];

let app: PreparedApp;
let server: TestServer;
let base: string;
let admin: Identity;
let batch = 0;

function products(n: number): object[] {
  const b = batch++;
  return Array.from({ length: n }, (_, i) => ({
    sku: `b${b}-${i}`,
    name: `${i % 2 ? 'Red' : 'blue'} Kettle ${b}-${i}`,
    description: `Batch ${b}, item ${i}: a kettle that boils water`,
    price: ((b * 1000 + i) % 500) + 0.5,
    stock: i % 100,
    category: CATEGORIES[i % 5],
    active: i % 3 !== 0,
  }));
}

/** One request with a deadline; resolves to its status, body and duration in ms. */
async function timed(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; ms: number }> {
  const started = performance.now();
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { ...admin.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null, ms: performance.now() - started };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

describe('SQLite under a mixed load (issue 10)', () => {
  const ids: string[] = [];

  beforeAll(async () => {
    app = await prepareApp(SHOP, 'sqlite');
    server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
    base = server.url;
    admin = await adminIdentity(app, base);
    for (let k = 0; k < SEED_BATCHES; k++) {
      const r = await timed('POST', '/Product', products(1000));
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      ids.push(...r.json.data.slice(0, 50));
    }
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it(
    `a cheap GET by id keeps p99 under ${P99_SHARE_OF_HEAVY_P50} × the heavy list's p50 while bulk writes and heavy counted lists run`,
    async () => {
      const started = performance.now();
      const deadline = started + LOAD_MS;
      const hardDeadline = started + MAX_LOAD_MS;
      const cheap: number[] = [];
      const heavy: number[] = [];
      const bulk: number[] = [];
      const failures: string[] = [];
      const record = (into: number[], what: string, r: { status: number; json: any; ms: number }, ok: number) => {
        if (r.status === ok) into.push(r.ms);
        else failures.push(`${what}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
      };
      const loop = async (k: number) => {
        let n = 0;
        const going = () => {
          const now = performance.now();
          return now < deadline || (cheap.length < MIN_CHEAP && now < hardDeadline);
        };
        while (going() && failures.length < 20) {
          n++;
          try {
            if (k % 3 === 0) {
              record(bulk, 'bulk POST', await timed('POST', '/Product', products(1000)), 201);
            } else if (k % 3 === 1) {
              const filter = encodeURIComponent(`name con~ "kettle ${n % 9}" and price gt ${n % 200} and active eq true`);
              record(heavy, 'heavy list', await timed('GET', `/Product?filter=${filter}&sortBy=price-&pageSize=200&count=true`), 200);
            } else {
              const id = ids[(k * 7 + n) % ids.length];
              const r = await timed('GET', `/Product/${id}`);
              record(cheap, 'GET by id', r, 200);
              if (r.status === 200 && r.json.id !== id) failures.push(`GET by id: got ${r.json.id} for ${id}`);
            }
          } catch (err) {
            failures.push(`${k % 3 === 0 ? 'bulk POST' : k % 3 === 1 ? 'heavy list' : 'GET by id'}: ${(err as Error).message}`);
          }
        }
      };
      await Promise.all(Array.from({ length: LOOPS }, (_, k) => loop(k)));

      const summary = {
        cheap: { n: cheap.length, p50: percentile(cheap, 50), p99: percentile(cheap, 99), max: Math.max(...cheap) },
        heavy: { n: heavy.length, p50: percentile(heavy, 50), p99: percentile(heavy, 99) },
        bulk: { n: bulk.length, p50: percentile(bulk, 50), p99: percentile(bulk, 99) },
      };
      console.log(`sqlite mixed load (ms): ${JSON.stringify(summary)}`);
      expect(failures, `${JSON.stringify(summary)}\n${failures.join('\n')}`).toEqual([]);
      expect(bulk.length).toBeGreaterThan(0); // the heavy work really ran alongside
      expect(heavy.length).toBeGreaterThan(0);
      expect(cheap.length).toBeGreaterThanOrEqual(MIN_CHEAP);
      expect(summary.cheap.p99, JSON.stringify(summary)).toBeLessThan(P99_SHARE_OF_HEAVY_P50 * summary.heavy.p50);
    },
    MAX_LOAD_MS + REQUEST_TIMEOUT_MS + 30_000,
  );
});
