/**
 * kill -9 of `svc serve` while trigger events are delivered (DESIGN §12, issue 33 "tests with real
 * faults"), on both databases: 500 Tasks are created (with rolled-back writes among them: a bulk with
 * one bad row, a row that fails validation), each captured for the slow trigger `tasks` (50 ms a run);
 * the process is SIGKILLed mid-delivery and started again on the same database. Every committed Task's
 * event is delivered at least once, none of a rolled-back write, and duplicates are at most the jobs
 * locked at the kill. `SVC_JOBS_STALE_LOCK_MS` shortens how long a dead runner's locks are kept: on
 * SQLite the lock's heartbeat lapses; on PostgreSQL the dead runner's advisory lock is gone, so the
 * restarted runner's sweep hands its jobs back (runtime/jobs/graphile-liveness.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { selectRows } from '../support/system-tables.js';

const TASKS = 500;

function suite(backend: Backend): void {
  describe(`trigger events survive kill -9 on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer | undefined;
    let env: NodeJS.ProcessEnv;
    const locked =
      backend === 'sqlite'
        ? 'SELECT COUNT(*) AS n FROM "_svc_jobs" WHERE "lockedAt" IS NOT NULL'
        : 'SELECT COUNT(*) AS n FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL';
    const queued = backend === 'sqlite' ? 'SELECT COUNT(*) AS n FROM "_svc_jobs"' : 'SELECT COUNT(*) AS n FROM graphile_worker._private_jobs';
    const count = async (text: string) => Number((await selectRows(app.env, text))[0].n);
    const seen = async () => (await selectRows(app.env, `SELECT "rowId", "after" FROM "Seen" WHERE "trigger" = 'tasks'`)).map((r) => String(r.rowId));

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/triggers'), backend);
      env = { ...app.env, SVC_JOBS_STALE_LOCK_MS: '1500', HOOK_URL: 'http://127.0.0.1:9/unused', SVC_SECRET_HOOK: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
      server = await serve(app.dir, env);
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('delivers every committed change at least once after a restart, none of a rolled-back one', async () => {
      const first = server!;
      const ids: string[] = [];
      for (let i = 0; i < TASKS; i += 25) {
        const batch = await Promise.all(Array.from({ length: 25 }, (_, j) => call(first.url, 'POST', '/Task', { title: `task ${i + j}` })));
        for (const r of batch) {
          expect(r.status, r.text).toBe(201);
          ids.push(r.json.data[0]);
        }
        // Rolled back: a bulk with one bad row, a row that fails validation.
        expect((await call(first.url, 'POST', '/Task', [{ title: `rolled back ${i}` }, { title: 'bad', size: -1 }])).status).toBe(400);
        expect((await call(first.url, 'POST', '/Task', { title: `rejected ${i}`, size: 'x' })).status).toBe(400);
      }
      await waitFor(async () => (await seen()).length >= 20, 30_000);
      first.child.kill('SIGKILL');
      await new Promise((done) => first.child.once('close', done));
      const lockedAtKill = await count(locked);
      expect(lockedAtKill).toBeGreaterThan(0); // runs were in flight: their locks must be handed back
      expect((await seen()).length).toBeLessThan(TASKS); // killed with events still to deliver

      server = await serve(app.dir, env);
      await waitFor(async () => (await count(queued)) === 0, 90_000);
      const delivered = await seen();
      expect(new Set(delivered)).toEqual(new Set(ids));
      expect(delivered.length - TASKS).toBeLessThanOrEqual(lockedAtKill);
      const titles = (await selectRows(app.env, `SELECT "after" FROM "Seen" WHERE "trigger" = 'tasks'`)).map(
        (r) => JSON.parse(String(r.after)).title as string,
      );
      expect(titles.some((t) => !t.startsWith('task '))).toBe(false);
    }, 180_000);
  });
}

for (const backend of backends()) suite(backend);
