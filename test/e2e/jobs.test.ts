/**
 * Background jobs end to end (DESIGN §12, issue 33), on test/fixtures/apps/jobs, once per backend
 * (SQLite engine; PostgreSQL on Graphile Worker).
 * - `ctx.jobs.enqueue` from a function (`start`) is durable when it returns: the job `work` runs with
 *   the app's rights (it writes a Note that anonymous `start` could not) and leaves the queue.
 * - A job's function fans out: jobs enqueued from a job run too.
 * - Refusals are thrown in the function: an unknown function, a type-1 function, a payload that does
 *   not match `requestBody`, and both `runAt` and `delaySeconds`.
 * - `delaySeconds` keeps a job pending until then; a key replaces the pending job with that key.
 * - A job that throws on every attempt is kept as failed after `maxAttempts`; the admin endpoints
 *   list it, retry it and discard it; they answer 403 to a non-admin and 4xx to malformed ids.
 * - `svc jobs [dir] list --failed | retry <id|--failed> | discard <id>` does the same from the CLI,
 *   printing JSON, while the server runs; a bad id or usage exits 1 with a message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

interface Job {
  id: string;
  state: string;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  runAt: string;
  payload: { function: string; payload: { title: string } };
}

function suite(backend: Backend): void {
  describe(`jobs on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let admin: Identity;
    let user: Identity;
    const as = (who: Identity | null, method: string, url: string, body?: unknown) => call(server.url, method, url, body, who ? who.headers : {});
    const titles = async () => ((await as(null, 'GET', '/Note?limit=1000')).json.data as { title: string }[]).map((n) => n.title).sort();
    const jobs = async (query = '') => {
      const r = await as(admin, 'GET', `/_admin/jobs${query}`);
      expect(r.status, r.text).toBe(200);
      return r.json.data as Job[];
    };
    const start = (body: Record<string, unknown>) => as(null, 'POST', '/_invoke/start', body);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/jobs'), backend);
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env } });
      admin = await adminIdentity(app, server.url);
      user = await userIdentity(app, server.url, 'jo');
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it("runs an enqueued job with the app's rights, then removes it", async () => {
      expect((await as(null, 'POST', '/Note', { title: 'anonymous' })).status).toBe(401);
      const r = await start({ title: 'first' });
      expect(r.status, r.text).toBe(200);
      expect(typeof r.json.id).toBe('string');
      await waitFor(async () => (await titles()).includes('first'), 15_000);
      await waitFor(async () => !(await jobs()).some((j) => j.id === r.json.id), 5_000);
    });

    it('runs the jobs a job enqueues (fan-out)', async () => {
      expect((await start({ title: 'fanout A' })).status).toBe(200);
      const want = ['child 0 of fanout A', 'child 1 of fanout A', 'child 2 of fanout A', 'fanout A'];
      await waitFor(async () => {
        const all = await titles();
        return want.every((t) => all.includes(t));
      }, 20_000);
      const all = await titles();
      for (const t of want) expect(all.filter((x) => x === t)).toHaveLength(1);
    });

    it('throws a clear error in the function for a bad enqueue', async () => {
      const refused = async (body: Record<string, unknown>, pattern: RegExp) => {
        const r = await start(body);
        expect(r.status, r.text).toBe(400);
        expect(r.json.error).toMatch(pattern);
      };
      await refused({ function: 'nope', title: 'x' }, /no function is named "nope"/);
      await refused({ function: 'legacy', title: 'x' }, /type 1/);
      await refused({ function: 'work' }, /title/);
      await refused({ title: 'x', delaySeconds: 5, runAt: new Date().toISOString() }, /not both/);
    });

    it('keeps a delayed job pending and replaces a pending job with the same key', async () => {
      const a = await start({ title: 'later one', delaySeconds: 3600, key: 'k1' });
      const b = await start({ title: 'later two', delaySeconds: 3600, key: 'k1' });
      expect(a.status, a.text).toBe(200);
      expect(b.status, b.text).toBe(200);
      const pending = (await jobs('?state=pending')).filter((j) => j.payload.payload.title.startsWith('later'));
      expect(pending.map((j) => j.payload.payload.title)).toEqual(['later two']);
      const del = await as(admin, 'DELETE', `/_admin/jobs/${pending[0].id}`);
      expect(del.status, del.text).toBe(204);
      expect((await as(admin, 'GET', `/_admin/jobs/${pending[0].id}`)).status).toBe(404);
    });

    it('keeps a job failed after maxAttempts; admins retry and discard it', async () => {
      const r = await start({ title: 'broken one', maxAttempts: 1 });
      expect(r.status, r.text).toBe(200);
      const id = String(r.json.id);
      const failed = async () => (await jobs('?state=failed')).find((j) => j.id === id);
      await waitFor(async () => (await failed()) !== undefined, 15_000);
      const job = (await failed())!;
      expect(job).toMatchObject({ attempts: 1, maxAttempts: 1 });
      expect(job.lastError).toMatch(/broken on attempt 1/);
      expect((await as(user, 'GET', '/_admin/jobs')).status).toBe(403);
      expect((await as(null, 'GET', '/_admin/jobs')).status).toBe(401);
      for (const bad of ['abc', '-1', '1e3', '99999999999999999999999', '%00']) {
        const g = await as(admin, 'GET', `/_admin/jobs/${bad}`);
        expect(g.status, `${bad}: ${g.text}`).toBeGreaterThanOrEqual(400);
        expect(g.status, `${bad}: ${g.text}`).toBeLessThan(500);
      }
      expect((await as(admin, 'GET', '/_admin/jobs?state=nope')).status).toBe(400);
      const retried = await as(admin, 'POST', `/_admin/jobs/${id}/retry`);
      expect(retried.status, retried.text).toBe(200);
      // The retried job is due at once and may already be running or failed again when this answers.
      expect(retried.json).toMatchObject({ id });
      // It ran again: failed once more, with a later run time (the back-off counts from the new attempt).
      await waitFor(async () => {
        const again = await failed();
        return again !== undefined && again.attempts === 1 && Date.parse(String(again.runAt)) > Date.parse(String(job.runAt));
      }, 15_000);
      expect((await as(admin, 'DELETE', `/_admin/jobs/${id}`)).status).toBe(204);
      expect((await as(admin, 'GET', `/_admin/jobs/${id}`)).status).toBe(404);
      expect(await titles()).not.toContain('broken one');
    });

    it('lists, retries and discards jobs with `svc jobs`', async () => {
      const svc = async (...args: string[]) => {
        const r = await runCli(['jobs', ...args], app.env);
        expect(r.code, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as Record<string, unknown>;
      };
      const r = await start({ title: 'broken cli', maxAttempts: 1 });
      expect(r.status, r.text).toBe(200);
      const id = String(r.json.id);
      const failedIds = async () => ((await svc(app.dir, 'list', '--failed')).data as Job[]).map((j) => j.id);
      await waitFor(async () => (await jobs('?state=failed')).some((j) => j.id === id), 15_000);
      expect(await failedIds()).toContain(id);
      const listed = await svc(app.dir, 'list', '--failed');
      expect((listed.stats as { failed: number }).failed).toBeGreaterThanOrEqual(1);
      expect(await svc(app.dir, 'retry', id)).toEqual({ retried: 1 });
      await waitFor(async () => (await jobs('?state=failed')).some((j) => j.id === id && j.attempts === 1), 15_000);
      expect(await svc(app.dir, 'discard', id)).toEqual({ id, discarded: true });
      expect(await failedIds()).not.toContain(id);
      const missing = await runCli(['jobs', app.dir, 'discard', id], app.env);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/no job has the id/);
      const usage = await runCli(['jobs', app.dir, 'retry', id, '--failed'], app.env);
      expect(usage.code).toBe(1);
      expect(usage.stderr).toMatch(/usage: svc jobs/);
      expect(await svc(app.dir, 'retry', '--failed')).toMatchObject({ retried: expect.any(Number) });
    }, 60_000);
  });
}

for (const backend of backends()) suite(backend);
