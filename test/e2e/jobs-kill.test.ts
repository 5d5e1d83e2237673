/**
 * kill -9 of `svc serve` while jobs run (DESIGN §12: a job runs at least once), on SQLite: 200 jobs of
 * the fixture's `slow` (200 ms, then a Note with a unique title) are enqueued, the process is
 * SIGKILLed while they run and started again on the same database: every job's Note exists, and
 * there are no more duplicates than jobs that were locked (running) at the kill. The stale-lock time
 * is shortened with `SVC_JOBS_STALE_LOCK_MS` so the dead process's jobs run again within seconds.
 * PostgreSQL: test/e2e/triggers-kill.test.ts (trigger jobs; a dead runner's locks are handed back by the liveness sweep).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { selectRows } from '../support/system-tables.js';

const JOBS = 200;

describe('jobs survive kill -9 on sqlite', () => {
  let app: PreparedApp;
  let server: TestServer | undefined;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/jobs'), 'sqlite');
    env = { ...app.env, SVC_JOBS_STALE_LOCK_MS: '1500' };
    server = await serve(app.dir, env);
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('runs every job at least once, and again only those running at the kill', async () => {
    const first = server!;
    for (let i = 0; i < JOBS; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, async (_, j) => {
          const r = await call(first.url, 'POST', '/_invoke/start', { function: 'slow', title: `slow ${i + j}` });
          expect(r.status, r.text).toBe(200);
        }),
      );
    }
    const count = async () => Number((await selectRows(app.env, 'SELECT COUNT(*) AS n FROM "Note"'))[0].n);
    await waitFor(async () => (await count()) >= 20, 20_000);
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('close', done));
    const locked = Number((await selectRows(app.env, 'SELECT COUNT(*) AS n FROM "_svc_jobs" WHERE "lockedAt" IS NOT NULL'))[0].n);
    expect(locked).toBeGreaterThan(0); // jobs were running at the kill: their locks must be released
    const doneAtKill = await count();
    expect(doneAtKill).toBeLessThan(JOBS); // killed while jobs were still to run

    server = await serve(app.dir, env);
    await waitFor(async () => Number((await selectRows(app.env, 'SELECT COUNT(*) AS n FROM "_svc_jobs"'))[0].n) === 0, 60_000);
    const rows = await selectRows(app.env, 'SELECT "title" FROM "Note"');
    const titles = rows.map((r) => String(r.title));
    expect(new Set(titles).size).toBe(JOBS);
    for (let i = 0; i < JOBS; i++) expect(titles).toContain(`slow ${i}`);
    expect(titles.length - JOBS).toBeLessThanOrEqual(locked);
  }, 90_000);
});
