/**
 * Schedules (runtime/jobs/schedules.ts, DESIGN §12): the next tick is computed in the schedule's time
 * zone (UTC by default); two schedulers racing for the same tick on one database (SQLite and
 * PostgreSQL) add exactly one `svc_schedule` job; `catchUp` claims the last missed tick once at start
 * and not again on a restart; a six-field schedule ticks every 2 s with distinct consecutive ticks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backends, createPgDatabase, type Backend } from '../../support/backends.js';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { openJobEngine } from '../../../dist/runtime/jobs/index.js';
import { nextTick, previousTick, Scheduler } from '../../../dist/runtime/jobs/schedules.js';
import type { FunctionDefinition } from '../../../dist/runtime/contract/manifest.js';

const silent = {
  info() {},
  warn() {},
  error() {},
  debug() {},
  child() {
    return silent;
  },
} as never;
const fn = (schedule: FunctionDefinition['schedule']): FunctionDefinition =>
  ({ name: 'nightly', enabled: true, functionTypeId: 2, endpoint: '/nightly', schedule }) as FunctionDefinition;

describe('next tick', () => {
  it('is read in the time zone, UTC by default', () => {
    const after = new Date('2026-06-01T12:00:00Z');
    // 03:00 in Oslo in June (UTC+2) is 01:00 UTC.
    expect(nextTick({ cron: '0 3 * * *', timezone: 'Europe/Oslo' }, after)?.toISOString()).toBe('2026-06-02T01:00:00.000Z');
    expect(nextTick({ cron: '0 3 * * *' }, after)?.toISOString()).toBe('2026-06-02T03:00:00.000Z');
    // In January Oslo is UTC+1.
    expect(nextTick({ cron: '0 3 * * *', timezone: 'Europe/Oslo' }, new Date('2026-01-10T12:00:00Z'))?.toISOString()).toBe('2026-01-11T02:00:00.000Z');
    expect(previousTick({ cron: '0 3 * * *' }, after)?.toISOString()).toBe('2026-06-01T03:00:00.000Z');
  });
});

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function open(backend: Backend): Promise<{ db: Database; url: string; close: () => Promise<void> }> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'svc-sched-'));
    dirs.push(dir);
    const url = `file:${join(dir, 'app.db')}`;
    const db = await openDatabase('sqlite', url);
    return { db, url, close: () => db.close() };
  }
  const { url, drop } = await createPgDatabase('svc_sched');
  const db = await openDatabase('postgresql', url);
  return { db, url, close: async () => (await db.close(), await drop()) };
}

describe.each(backends())('schedules on %s', (backend) => {
  it('one job per tick across racing schedulers; catchUp once; ticks every 2 s', async () => {
    const { db, url, close } = await open(backend);
    try {
      const engine = openJobEngine(db, { databaseUrl: url });
      await engine.prepare();
      const a = new Scheduler(db, engine, silent);
      const b = new Scheduler(db, engine, silent);
      await a.start([]);
      await b.start([]);
      const tick = new Date('2026-06-01T03:00:00Z');
      const wins = await Promise.all([a.claim('nightly', tick), b.claim('nightly', tick), a.claim('nightly', tick)]);
      expect(wins.filter(Boolean)).toHaveLength(1);
      expect(await engine.list({ task: 'svc_schedule' })).toHaveLength(1);
      for (const j of await engine.list()) await engine.discard(j.id);

      // catchUp: the last tick before now is claimed once at start, not again on a restart.
      const daily = fn({ cron: '0 3 * * *', catchUp: true });
      const first = new Scheduler(db, engine, silent);
      await first.start([daily]);
      first.stop();
      const again = new Scheduler(db, engine, silent);
      await again.start([daily]);
      again.stop();
      const caught = await engine.list({ task: 'svc_schedule' });
      expect(caught.map((j) => j.payload)).toEqual([{ function: 'nightly', tick: previousTick({ cron: '0 3 * * *' }, new Date())!.toISOString() }]);
      for (const j of caught) await engine.discard(j.id);

      // Two live schedulers on a six-field schedule: each tick once, consecutive.
      const every2 = fn({ cron: '*/2 * * * * *' });
      const x = new Scheduler(db, engine, silent);
      const y = new Scheduler(db, engine, silent);
      await Promise.all([x.start([every2]), y.start([every2])]);
      await new Promise((ok) => setTimeout(ok, 7000));
      x.stop();
      y.stop();
      const ticks = (await engine.list({ task: 'svc_schedule' })).map((j) => Date.parse((j.payload as { tick: string }).tick)).sort();
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      expect(new Set(ticks).size).toBe(ticks.length);
      for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBe(2000);
    } finally {
      await close();
    }
  }, 30_000);
});
