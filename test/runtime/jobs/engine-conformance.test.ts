/**
 * The `JobEngine` contract (runtime/jobs/engine.ts, DESIGN §12), written once against the interface
 * and run on every engine in `ENGINES`, each on a fresh database of its own (PostgreSQL: a new
 * database on the local server; SQLite: a new file). What it proves: a job added in a transaction runs
 * exactly when the transaction commits; `runAt` holds a job back; a key replaces a pending job;
 * a failing job is retried with the back-off and kept as failed after `maxAttempts` (listed with its
 * last error, retryable one by one or all at once, discardable); `stats` counts; `concurrency` bounds
 * the jobs in flight; two runners on one database (two svc instances) run each of 500 jobs once; and
 * `stop` lets a running job finish.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPgDatabase, type Backend } from '../../support/backends.js';
import { waitFor } from '../../support/wait.js';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { createGraphileEngine } from '../../../dist/runtime/jobs/graphile-engine.js';
import { createSqliteEngine } from '../../../dist/runtime/jobs/sqlite-engine.js';
import type { FunctionJobPayload, JobEngine, JobRun, JobSpec } from '../../../dist/runtime/jobs/engine.js';

/** Each engine under test: its name, the database it needs and how to make one on a database. */
const ENGINES: Array<[name: string, backend: Backend, make: (db: Database, url: string) => JobEngine]> = [
  ['graphile', 'postgresql', (db, url) => createGraphileEngine({ db, connectionString: url })],
  ['sqlite', 'sqlite', (db) => createSqliteEngine(db)],
];

/** A fresh database for `backend`: its URL, a way to open more handles on it, and a way to drop it. */
async function freshDatabase(backend: Backend): Promise<{ url: string; drop: () => Promise<void> }> {
  if (backend === 'postgresql') return createPgDatabase('svc_jobs');
  const dir = mkdtempSync(join(tmpdir(), 'svc-jobs-'));
  return { url: `file:${join(dir, 'jobs.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

const RUN = { concurrency: 4, pollIntervalMs: 200 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(ENGINES)('the %s job engine', (_name, backend, make) => {
  let url: string;
  let drop: () => Promise<void>;
  const handles: Database[] = [];
  /** Engines started by the current test; stopped after it. */
  let started: JobEngine[] = [];
  /** What the handler does per function name (the payload's `function`); absent: resolve. */
  const behaviour = new Map<string, (job: JobRun, signal: AbortSignal) => Promise<void>>();
  /** Every run the handler saw: the function, the inner payload, the attempt and when it started. */
  let runs: Array<{ fn: string; payload: unknown; id: string; attempt: number; at: number; engine: number }> = [];
  let db: Database;

  const open = async () => {
    const handle = await openDatabase(backend, url);
    handles.push(handle);
    return handle;
  };
  const spec = (fn: string, payload: unknown = {}, more: Partial<JobSpec> = {}): JobSpec => ({
    task: 'svc_function',
    payload: { function: fn, payload, callerId: null } satisfies FunctionJobPayload,
    ...more,
  });
  const runsOf = (fn: string) => runs.filter((r) => r.fn === fn);
  /** Starts `engine` with the shared handler (numbered `n` in `runs`). */
  const start = (engine: JobEngine, n = 0, options = RUN) => {
    started.push(engine);
    engine.start(async (job, signal) => {
      const { function: fn, payload } = job.payload as FunctionJobPayload;
      runs.push({ fn, payload, id: job.id, attempt: job.attempt, at: Date.now(), engine: n });
      await behaviour.get(fn)?.(job, signal);
    }, options);
    return engine;
  };

  beforeAll(async () => {
    ({ url, drop } = await freshDatabase(backend));
    db = await open();
    await make(db, url).prepare();
    await make(db, url).prepare(); // idempotent
  });
  afterEach(async () => {
    await Promise.all(started.map((e) => e.stop(2000)));
    started = [];
    runs = [];
    behaviour.clear();
    // Each test starts from an empty queue.
    const engine = make(db, url);
    for (const job of await engine.list({ limit: 1000 })) await engine.discard(job.id);
  });
  afterAll(async () => {
    await Promise.all(handles.map((h) => h.close()));
    await drop?.();
  });

  it('runs a job added in a transaction that commits, once; one whose transaction rolls back never exists', async () => {
    const engine = start(make(db, url));
    const { id } = await db.transaction((tx) => engine.add(spec('committed', { n: 1 }), tx));
    expect(id).toMatch(/\S/);
    let lost: string | undefined;
    await expect(
      db.transaction(async (tx) => {
        lost = (await engine.add(spec('rolledBack'), tx)).id;
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await waitFor(async () => runsOf('committed').length === 1 && (await engine.get(id)) === null);
    await engine.add(spec('marker'));
    await waitFor(() => runsOf('marker').length === 1);
    await sleep(300);
    expect(runsOf('committed')).toEqual([expect.objectContaining({ payload: { n: 1 }, id, attempt: 1 })]);
    expect(runsOf('rolledBack')).toEqual([]);
    expect(await engine.get(lost!)).toBeNull();
  });

  it('holds a job back until runAt, and lists it as pending meanwhile', async () => {
    const engine = start(make(db, url));
    const runAt = new Date(Date.now() + 1500);
    const { id } = await engine.add(spec('later'), undefined);
    const { id: laterId } = await engine.add(spec('future', {}, { runAt }));
    await waitFor(() => runsOf('later').length === 1);
    const record = await engine.get(laterId);
    expect(record).toMatchObject({ id: laterId, task: 'svc_function', state: 'pending', attempts: 0, maxAttempts: 10, key: null, lastError: null });
    expect(Math.abs(record!.runAt.getTime() - runAt.getTime())).toBeLessThan(5);
    expect(id).not.toBe(laterId);
    await waitFor(() => runsOf('future').length === 1, 5000);
    expect(runsOf('future')[0].at).toBeGreaterThanOrEqual(runAt.getTime() - 20);
  });

  it('replaces a pending job that has the same key: the last payload runs, once', async () => {
    const engine = make(db, url);
    await engine.add(spec('keyed', { v: 1 }, { key: 'debounce-1' }));
    await engine.add(spec('keyed', { v: 2 }, { key: 'debounce-1' }));
    await engine.add(spec('keyed', { v: 3 }, { key: 'debounce-1' }));
    const listed = await engine.list({ state: 'pending' });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'debounce-1', payload: { function: 'keyed', payload: { v: 3 } } });
    start(engine);
    await waitFor(() => runsOf('keyed').length === 1);
    await sleep(300);
    expect(runsOf('keyed').map((r) => r.payload)).toEqual([{ v: 3 }]);
  });

  it('retries with the back-off, keeps a job that ran out of attempts as failed, and retries or discards failed jobs', async () => {
    const fixed = new Set<string>();
    const failUntilFixed = async (job: JobRun) => {
      const { function: fn } = job.payload as FunctionJobPayload;
      if (!fixed.has(fn)) throw new Error(`${fn} failed on attempt ${job.attempt}`);
    };
    behaviour.set('flaky', async (job) => {
      if (job.attempt < 3) throw new Error(`flaky attempt ${job.attempt}`);
    });
    for (const fn of ['broken', 'brokenC', 'brokenD', 'brokenE']) behaviour.set(fn, failUntilFixed);
    const engine = start(make(db, url));
    const flaky = await engine.add(spec('flaky', {}, { maxAttempts: 5 }));
    const broken = await engine.add(spec('broken', {}, { maxAttempts: 2 }));
    const c = await engine.add(spec('brokenC', {}, { maxAttempts: 1 }));
    const d = await engine.add(spec('brokenD', {}, { maxAttempts: 1 }));
    const e = await engine.add(spec('brokenE', {}, { maxAttempts: 1 }));

    // `broken` fails twice (the second attempt after exp(1) s) and is then kept as failed.
    const failed = await waitFor(async () => (await engine.get(broken.id))?.state === 'failed' && engine.get(broken.id), 10_000);
    expect(failed).toMatchObject({ attempts: 2, maxAttempts: 2, lastError: expect.stringContaining('broken failed on attempt 2') });
    const [first, second] = runsOf('broken');
    expect(second.at - first.at).toBeGreaterThanOrEqual(2000);
    const failedIds = (await engine.list({ state: 'failed' })).map((j) => j.id).sort();
    expect(failedIds).toEqual([broken.id, c.id, d.id, e.id].sort());
    expect(await engine.stats()).toMatchObject({ failed: 4 });

    // Discard removes a failed job; a removed or unknown one is not discarded twice.
    expect(await engine.discard(e.id)).toBe(true);
    expect(await engine.discard(e.id)).toBe(false);
    expect(await engine.get(e.id)).toBeNull();
    expect(await engine.retry({ id: 'not-a-job' })).toBe(0);

    // retry({ id }) runs that one again now, with attempts reset.
    fixed.add('broken');
    expect(await engine.retry({ id: broken.id })).toBe(1);
    await waitFor(async () => runsOf('broken').length === 3 && (await engine.get(broken.id)) === null, 5000);
    expect(runsOf('broken')[2].attempt).toBe(1);

    // retry({ failed: true }) runs every failed job again and says how many.
    fixed.add('brokenC').add('brokenD');
    expect(await engine.retry({ failed: true })).toBe(2);
    await waitFor(async () => runsOf('brokenC').length === 2 && runsOf('brokenD').length === 2 && (await engine.stats()).failed === 0, 5000);

    // `flaky` throws twice then resolves: 3 attempts, the second at least 2 s after the first.
    await waitFor(async () => runsOf('flaky').length === 3 && (await engine.get(flaky.id)) === null, 15_000);
    const attempts = runsOf('flaky');
    expect(attempts.map((r) => r.attempt)).toEqual([1, 2, 3]);
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(2000);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(attempts[1].at - attempts[0].at);
  }, 60_000);

  it('discards a pending job, and counts pending and failed jobs and the oldest due one', async () => {
    const engine = make(db, url);
    expect(await engine.stats()).toEqual({ pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0 });
    await engine.add(spec('due', {}, { runAt: new Date(Date.now() - 30_000) }));
    await engine.add(spec('due'));
    const future = await engine.add(spec('future', {}, { runAt: new Date(Date.now() + 3_600_000) }));
    const stats = await engine.stats();
    expect(stats).toMatchObject({ pending: 3, running: 0, failed: 0 });
    expect(stats.oldestPendingSeconds).toBeGreaterThanOrEqual(29);
    expect(stats.oldestPendingSeconds).toBeLessThan(60);
    expect(await engine.discard(future.id)).toBe(true);
    expect((await engine.stats()).pending).toBe(2);
    expect((await engine.list()).map((j) => j.payload)).toHaveLength(2);
    expect(await engine.list({ state: 'failed' })).toEqual([]);
  });

  it('runs at most `concurrency` jobs at once', async () => {
    let inFlight = 0;
    let most = 0;
    behaviour.set('slow', async () => {
      most = Math.max(most, ++inFlight);
      await sleep(150);
      inFlight--;
    });
    const engine = make(db, url);
    await db.transaction(async (tx) => {
      for (let i = 0; i < 12; i++) await engine.add(spec('slow', { i }), tx);
    });
    start(engine, 0, { concurrency: 3, pollIntervalMs: 200 });
    await waitFor(() => runsOf('slow').length === 12, 10_000);
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2);
  });

  it('runs each of 500 jobs exactly once with two runners on one database (two instances)', async () => {
    const a = start(make(db, url), 1);
    const b = start(make(await open(), url), 2);
    const ids = await db.transaction(async (tx) => {
      const out: string[] = [];
      for (let i = 0; i < 500; i++) out.push((await (i % 2 ? a : b).add(spec('bulk', { i }), tx)).id);
      return out;
    });
    expect(new Set(ids).size).toBe(500);
    await waitFor(async () => runsOf('bulk').length >= 500 && (await a.stats()).pending + (await a.stats()).running === 0, 30_000);
    await sleep(300);
    const bulk = runsOf('bulk');
    expect(bulk).toHaveLength(500);
    expect(new Set(bulk.map((r) => r.id))).toEqual(new Set(ids));
    expect(bulk.filter((r) => r.engine === 1).length).toBeGreaterThan(0);
    expect(bulk.filter((r) => r.engine === 2).length).toBeGreaterThan(0);
  });

  it('stop() lets a running job finish within graceMs and takes no new job', async () => {
    let finished = false;
    let aborted = false;
    behaviour.set('long', async (_job, signal) => {
      await sleep(800);
      aborted = signal.aborted;
      finished = true;
    });
    const engine = start(make(db, url));
    const { id } = await engine.add(spec('long'));
    await waitFor(() => runsOf('long').length === 1);
    await engine.stop(5000);
    expect(finished).toBe(true);
    expect(aborted).toBe(false);
    expect(await engine.get(id)).toBeNull();
    const after = await engine.add(spec('afterStop'));
    await sleep(500);
    expect(runsOf('afterStop')).toEqual([]);
    expect((await engine.get(after.id))?.state).toBe('pending');
  });

  it('stop() aborts the signal of a job still running after graceMs; the attempt fails and the job stays', async () => {
    behaviour.set('stuck', (_job, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted by stop')))));
    const engine = start(make(db, url));
    const { id } = await engine.add(spec('stuck'));
    await waitFor(() => runsOf('stuck').length === 1);
    const began = Date.now();
    await engine.stop(300);
    expect(Date.now() - began).toBeGreaterThanOrEqual(300);
    expect(Date.now() - began).toBeLessThan(8000);
    const job = await engine.get(id);
    expect(job).toMatchObject({ state: 'pending', attempts: 1 });
    expect(job!.lastError).toEqual(expect.any(String));
  });
});
