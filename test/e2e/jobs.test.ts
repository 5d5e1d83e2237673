/**
 * Jobs end to end (DESIGN §12, issue 33), once per backend against a spawned `svc serve` of the jobs
 * fixture: `ctx.jobs.enqueue` from the function `start` runs the job `work`, which writes a Note with
 * the app's rights and `createdBy` the enqueuer (null when anonymous); a delay holds a job back; a
 * key replaces a pending job; jobs enqueue jobs; refusals answer 400 with a clear message; a flaky
 * job is retried after Graphile's back-off (`exp(n)` s) and a broken one is kept as failed, where the
 * admin endpoints list, retry, discard and retry-all it (admins only); metrics and the log store
 * show the runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';

interface Note {
  id: string;
  title: string;
  attempt: number;
  createdBy: string | null;
  createdAt: string;
}

function jobsSuite(backend: Backend): void {
  describe(`jobs on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let user: Identity;
    const enqueue = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      const r = await call(base, 'POST', '/_invoke/start', body, headers);
      expect(r.status, r.text).toBe(200);
      expect(r.json.id).toEqual(expect.any(String));
      return r.json.id as string;
    };
    const refusal = async (body: Record<string, unknown>) => {
      const r = await call(base, 'POST', '/_invoke/start', body);
      expect(r.status, r.text).toBe(400);
      return r.json.error as string;
    };
    const notes = async (title: string): Promise<Note[]> => {
      const r = await call(base, 'GET', `/Note?filter=${encodeURIComponent(`title eq "${title}"`)}&pageSize=100`);
      expect(r.status, r.text).toBe(200);
      return r.json.data;
    };
    const noteOf = (title: string, timeoutMs = 5000) => waitFor(async () => (await notes(title))[0], timeoutMs);
    const adminGet = (url: string) => call(base, 'GET', url, undefined, admin.headers);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/jobs'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
      user = await userIdentity(app, base, 'enqueuer');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('runs an enqueued job once, as its enqueuer', async () => {
      await enqueue({ title: `anon ${backend}` });
      await enqueue({ title: `signed ${backend}` }, user.headers);
      const anon = await noteOf(`anon ${backend}`);
      const signed = await noteOf(`signed ${backend}`);
      expect(anon).toMatchObject({ attempt: 1, createdBy: null });
      expect(signed).toMatchObject({ attempt: 1, createdBy: user.id });
      expect(await notes(`anon ${backend}`)).toHaveLength(1);
    });

    it('holds a delayed job back, replaces a keyed one and runs jobs enqueued by jobs', async () => {
      const started = Date.now();
      await enqueue({ title: `later ${backend}`, delaySeconds: 2 });
      await enqueue({ title: `key first ${backend}`, key: `k-${backend}`, delaySeconds: 1 });
      await enqueue({ title: `key last ${backend}`, key: `k-${backend}`, delaySeconds: 1 });
      await enqueue({ title: `fanout ${backend}` });
      const children = await waitFor(async () => {
        const all = await Promise.all([0, 1, 2].map((i) => notes(`child ${i} of fanout ${backend}`)));
        return all.every((n) => n.length === 1) ? all.flat() : null;
      });
      expect(children.map((n) => n.attempt)).toEqual([1, 1, 1]);
      expect(await notes(`fanout ${backend}`)).toHaveLength(1);
      await noteOf(`later ${backend}`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
      await noteOf(`key last ${backend}`);
      expect(await notes(`key first ${backend}`)).toEqual([]);
      expect(await notes(`key last ${backend}`)).toHaveLength(1);
    });

    it('refuses bad enqueues with a clear message', async () => {
      expect(await refusal({ function: 'legacy', title: 'x' })).toMatch(/legacy/);
      expect(await refusal({ function: 'nope', title: 'x' })).toMatch(/nope/);
      expect(await refusal({})).toMatch(/title/);
      expect(await refusal({ title: 'x', delaySeconds: 1, runAt: new Date().toISOString() })).toMatch(/runAt|delaySeconds/);
      expect(await refusal({ title: 'x', maxAttempts: 0 })).toMatch(/maxAttempts/);
      expect(await refusal({ title: 'x', key: 'k'.repeat(500) })).toMatch(/key/);
    });

    it('retries a flaky job after the back-off and keeps a broken one as failed for the admin', async () => {
      const flaky = await enqueue({ title: `flaky ${backend}` });
      const broken = await enqueue({ title: `broken ${backend}`, maxAttempts: 2 });
      // Attempt times of the flaky job, seen on its record (attempts counts a run from its start).
      const seen: number[] = [];
      const watch = waitFor(async () => {
        const r = await adminGet(`/_admin/jobs/${flaky}`);
        if (r.status === 404) return true;
        while (seen.length < r.json.attempts) seen.push(Date.now());
        return false;
      }, 20_000);
      const failed = await waitFor(async () => {
        const r = await adminGet('/_admin/jobs?state=failed');
        expect(r.status, r.text).toBe(200);
        return r.json.data.find((j: { id: string }) => j.id === broken);
      }, 10_000);
      expect(failed).toMatchObject({ state: 'failed', attempts: 2, maxAttempts: 2, lastError: expect.stringContaining('broken on attempt 2') });

      expect((await call(base, 'GET', '/_admin/jobs?state=failed')).status).toBe(401);
      expect((await call(base, 'GET', '/_admin/jobs?state=failed', undefined, user.headers)).status).toBe(403);
      expect((await call(base, 'POST', `/_admin/jobs/${broken}/retry`, undefined, user.headers)).status).toBe(403);
      expect((await call(base, 'DELETE', `/_admin/jobs/${broken}`, undefined, user.headers)).status).toBe(403);

      const retried = await call(base, 'POST', `/_admin/jobs/${broken}/retry`, undefined, admin.headers);
      expect(retried.status, retried.text).toBe(200);
      expect(retried.json.state).not.toBe('failed');
      const again = await waitFor(async () => {
        const r = await adminGet(`/_admin/jobs/${broken}`);
        return r.json.state === 'failed' && r.json.attempts === 2 ? r.json : null;
      }, 10_000);
      expect(again.lastError).toContain('broken on attempt 2');

      const all = await call(base, 'POST', '/_admin/jobs/retry-failed', undefined, admin.headers);
      expect(all.status, all.text).toBe(200);
      expect(all.json.retried).toBeGreaterThanOrEqual(1);
      await waitFor(async () => (await adminGet(`/_admin/jobs/${broken}`)).json.state === 'failed', 10_000);
      expect((await call(base, 'DELETE', `/_admin/jobs/${broken}`, undefined, admin.headers)).status).toBe(204);
      expect((await adminGet(`/_admin/jobs/${broken}`)).status).toBe(404);
      expect((await call(base, 'DELETE', `/_admin/jobs/${broken}`, undefined, admin.headers)).status).toBe(404);

      await watch;
      const note = await noteOf(`flaky ${backend}`);
      expect(note.attempt).toBe(3);
      expect(await notes(`flaky ${backend}`)).toHaveLength(1);
      // The third attempt may end before a poll sees it start: its Note's creation time stands for it.
      const third = Date.parse(note.createdAt);
      expect(seen.length).toBeGreaterThanOrEqual(2);
      expect(seen[1] - seen[0]).toBeGreaterThanOrEqual(2000); // exp(1) ≈ 2.7 s
      expect(third - seen[1]).toBeGreaterThanOrEqual(5000); // exp(2) ≈ 7.4 s
    }, 40_000);

    it('counts runs in the metrics and keeps a job line in the log store', async () => {
      const metrics = await adminGet('/_metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(/svc_job_runs_total\{[^}]*result="ok"[^}]*\} [1-9]/);
      expect(metrics.text).toMatch(/^svc_jobs_pending(\{[^}]*\})? \d+/m);
      const line = await waitFor(
        async () => (await adminGet('/_admin/logs?kind=job')).json.data.find((e: { message: string }) => e.message.includes('attempt 1/')),
        3000,
      );
      expect(line).toMatchObject({ kind: 'job', source: 'work' });
    });
  });
}

for (const backend of backends()) jobsSuite(backend);
