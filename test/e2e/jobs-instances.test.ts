/**
 * Jobs across three `svc serve` instances on one PostgreSQL database and one Redis (DESIGN §12, issue 33
 * "three instances"), the fast version `npm test` runs (bench/jobs-instances.mjs runs the full size):
 * 1. 1,000 Tasks created through the three instances: the trigger `tasks` runs once per event (one
 *    Seen row per Task, attempt 1), and the runs were spread over more than one instance (the log
 *    store's `job` lines name the instance that ran them).
 * 2. The same stream with one instance SIGKILLed mid-delivery (runs of 20 ms, `SVC_JOBS_STALE_LOCK_MS`
 *    1500): every Task is delivered at least once, duplicates are no more than the jobs locked at the
 *    kill, and a surviving instance's liveness sweep is what handed the dead one's jobs back.
 * 3. A six-field schedule (`*\/2 * * * * *`) on three instances (the killed one started again): for
 *    five ticks, each tick runs once (no tick twice) and ticks are every even second with none missing
 *    (within one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { PrivateRedis } from '../support/redis-server.js';
import { call } from '../support/scenario.js';
import { selectRows } from '../support/system-tables.js';
import { waitFor } from '../support/wait.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/jobs-instances');
/** Tasks per bulk POST: the capture writes one event per row, in the bulk's transaction. */
const BULK = 10;

let app: PreparedApp;
let redis: PrivateRedis;
let env: NodeJS.ProcessEnv;
let servers: TestServer[] = [];

const rows = (text: string) => selectRows(app.env, text);
const jobsOf = (task: string, where = 'TRUE') =>
  `SELECT COUNT(*) AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = '${task}' AND ${where}`;
const count = async (text: string) => Number((await rows(text))[0].n);
const seen = async () => (await rows(`SELECT "rowId", "attempt" FROM "Seen"`)) as { rowId: string; attempt: number }[];

/** Creates `n` Tasks in bulks of {@link BULK}, the bulks round-robin over `on`, a few at once; returns their ids. */
async function createTasks(on: TestServer[], n: number, prefix: string, delayMs = 0): Promise<string[]> {
  const ids: string[] = [];
  const bulks = Array.from({ length: n / BULK }, (_, b) => Array.from({ length: BULK }, (_, i) => ({ title: `${prefix} ${b * BULK + i}`, delayMs })));
  for (let b = 0; b < bulks.length; b += 6) {
    const answers = await Promise.all(bulks.slice(b, b + 6).map((bulk, i) => call(on[(b + i) % on.length].url, 'POST', '/Task', bulk)));
    for (const r of answers) {
      expect(r.status, r.text).toBe(201);
      ids.push(...r.json.data);
    }
  }
  return ids;
}

/** How many times each of `ids` was delivered (0 for none). */
function deliveries(all: { rowId: string }[], ids: string[]): Map<string, number> {
  const times = new Map(ids.map((id) => [id, 0]));
  for (const { rowId } of all) if (times.has(rowId)) times.set(rowId, times.get(rowId)! + 1);
  return times;
}

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(FIXTURE, 'postgresql');
  env = { ...app.env, REDIS_URL: redis.url, SVC_JOBS_STALE_LOCK_MS: '1500' };
  // The first applies the migrations and installs Graphile's schema; the other two start together.
  servers.push(await serve(app.dir, env));
  servers.push(...(await Promise.all([serve(app.dir, env), serve(app.dir, env)])));
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await redis?.stop();
  await app?.cleanup();
});

describe('jobs on three instances (PostgreSQL, Redis)', () => {
  it('runs each of 1,000 events exactly once, spread over the instances', async () => {
    const ids = await createTasks(servers, 1000, 'once');
    expect(new Set(ids).size).toBe(1000);
    await waitFor(async () => (await seen()).length >= 1000 && (await count(jobsOf('svc_trigger'))) === 0, 60_000);
    const all = await seen();
    expect(all.length).toBe(1000);
    expect([...deliveries(all, ids).values()].every((n) => n === 1)).toBe(true);
    expect(all.every((s) => s.attempt === 1)).toBe(true);
    // Each run's log-store line (kind `job`) is written by the instance that ran it (flushed every 500 ms).
    const byInstance = await waitFor(async () => {
      const got = await rows(`SELECT "instance", COUNT(*) AS n FROM "_svc_logs" WHERE "kind" = 'job' AND "source" = 'tasks' GROUP BY "instance"`);
      return got.reduce((sum, r) => sum + Number(r.n), 0) === 1000 ? got : null;
    }, 10_000);
    expect(byInstance.length).toBeGreaterThan(1);
  }, 90_000);

  it('loses nothing when one instance is SIGKILLed mid-stream; its jobs are run by the others', async () => {
    const before = new Set((await seen()).map((s) => s.rowId));
    const killed = servers[2];
    const ids = await createTasks(servers, 900, 'kill', 20);
    await waitFor(async () => (await seen()).length - before.size >= 100, 30_000);
    killed.child.kill('SIGKILL');
    await new Promise((done) => killed.child.once('close', done));
    const lockedAtKill = await count(jobsOf('svc_trigger', 'j.locked_at IS NOT NULL'));
    expect(lockedAtKill).toBeGreaterThan(0);
    expect((await seen()).length - before.size).toBeLessThan(ids.length); // killed with events still to deliver
    servers = servers.slice(0, 2);
    // The stream goes on through the two left.
    ids.push(...(await createTasks(servers, 300, 'after', 20)));
    await waitFor(async () => (await count(jobsOf('svc_trigger'))) === 0, 60_000);
    const times = deliveries(await seen(), ids);
    expect([...times.entries()].filter(([, n]) => n === 0)).toEqual([]);
    const duplicates = [...times.values()].reduce((sum, n) => sum + n - 1, 0);
    expect(duplicates).toBeLessThanOrEqual(lockedAtKill);
    // The killed instance held jobs; a survivor's liveness sweep released them (graphile-liveness.ts).
    expect(servers.some((s) => /released the jobs of \d+ job runner/.test(s.output()))).toBe(true);
  }, 120_000);

  it('runs a schedule every 2 s once per tick on three instances', async () => {
    servers.push(await serve(app.dir, env));
    const t0 = Date.now();
    const ticksSince = async () => (await rows(`SELECT "tick" FROM "Tick"`)).map((r) => Date.parse(String(r.tick))).filter((t) => t > t0);
    await waitFor(async () => new Set(await ticksSince()).size >= 5, 30_000);
    const t1 = Date.now();
    // Every tick claimed up to t1 has run (a tick claimed twice would be a second job).
    await waitFor(async () => (await count(jobsOf('svc_schedule', `(j.payload->>'tick')::timestamptz <= to_timestamp(${t1 / 1000})`))) === 0, 10_000);
    const ticks = (await ticksSince()).filter((t) => t <= t1).sort((a, b) => a - b);
    expect(ticks.length).toBe(new Set(ticks).size); // no tick ran twice
    expect(ticks.every((t) => t % 2000 === 0)).toBe(true);
    const expected = Math.floor(t1 / 2000) - Math.floor(t0 / 2000); // even seconds in (t0, t1]
    expect(Math.abs(ticks.length - expected)).toBeLessThanOrEqual(1);
  }, 60_000);
});
