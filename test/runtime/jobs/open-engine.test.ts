/**
 * `openJobEngine` (runtime/jobs/index.ts) on PostgreSQL, the way the CLI uses it (`svc jobs`, DESIGN
 * §3a): it picks Graphile Worker, opening it starts nothing, and reading jobs from a database where no
 * instance ever installed the `graphile_worker` schema answers "no jobs" rather than an SQL error;
 * after `prepare()` a job added through one engine is listed, retried and discarded through another
 * that never started a runner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDatabase } from '../../support/backends.js';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { openJobEngine } from '../../../dist/runtime/jobs/index.js';
import { sql } from '../../../dist/runtime/query/sql.js';

describe('openJobEngine on PostgreSQL', () => {
  let db: Database;
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ url, drop } = await createPgDatabase('svc_jobs_open'));
    db = await openDatabase('postgresql', url);
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  it('answers no jobs before the schema exists, then manages jobs without a runner', async () => {
    const cli = openJobEngine(db, { databaseUrl: url });
    expect(cli.kind).toBe('graphile');
    expect(await cli.list()).toEqual([]);
    expect(await cli.get('1')).toBeNull();
    expect(await cli.stats()).toEqual({ pending: 0, running: 0, failed: 0, oldestPendingSeconds: 0 });
    expect(await cli.retry({ failed: true })).toBe(0);
    expect(await cli.discard('1')).toBe(false);
    const [{ n }] = await db.query<{ n: string }>(sql`SELECT count(*) AS n FROM pg_namespace WHERE nspname = 'graphile_worker'`);
    expect(Number(n)).toBe(0);

    const server = openJobEngine(db, { databaseUrl: url });
    await server.prepare();
    expect(await cli.get('9999999999999999999')).toBeNull(); // beyond bigint: no job, not an SQL error
    expect(await cli.discard('x1')).toBe(false);
    const { id } = await server.add({ task: 'svc_schedule', payload: { function: 'nightly', tick: '2026-01-01T03:00:00.000Z' }, maxAttempts: 3 });
    expect(await cli.list({ task: 'svc_schedule' })).toEqual([
      expect.objectContaining({ id, state: 'pending', attempts: 0, maxAttempts: 3, payload: { function: 'nightly', tick: '2026-01-01T03:00:00.000Z' } }),
    ]);
    expect(await cli.list({ task: 'svc_trigger' })).toEqual([]);
    expect(await cli.retry({ id })).toBe(0); // only a failed job is retried
    expect(await cli.discard(id)).toBe(true);
    expect(await cli.list()).toEqual([]);
  });
});
