/**
 * Rights of queries and functions (issue 31 §1, §2; DESIGN §4 "Queries gate access…", "Function
 * details"), on test/fixtures/apps/rights, once per backend.
 * - A query open to everyone over `Project` (GET: `_CREATOR`, `manager`) reads its `from` rows as the
 *   collection's own list does: a manager every row, another user their own, anonymous none.
 * - `ctx.app` reads and writes with the app's rights: `seatsLeft` counts every RSVP of an event, the
 *   same code through `ctx.get` only the caller's; a row it creates has `createdBy` = the caller; each
 *   call is logged with the function's name; the script form has the global `app`.
 * - A refusal of the caller's own `get`/`patch` that the code does not catch answers its status and
 *   body (401, 403, 404, 400), while an uncaught refusal of `ctx.app` stays a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

function suite(backend: Backend): void {
  describe(`query rows and function rights on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let alice: Identity;
    let bob: Identity;
    let mia: Identity; // manager
    const ids: Record<string, string> = {};
    const lines: Record<string, unknown>[] = [];
    const as = (who: Identity | null, method: string, url: string, body?: unknown) => call(server.url, method, url, body, who ? who.headers : {});
    const me = async (who: Identity) => (await as(who, 'GET', '/_me')).json.id as string;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/rights'), backend);
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      });
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'info' }, sink) });
      alice = await userIdentity(app, server.url, 'alice');
      bob = await userIdentity(app, server.url, 'bob');
      mia = await userIdentity(app, server.url, 'mia', ['manager']);
      ids.alice = await me(alice);
      ids.bob = await me(bob);
      const post = async (who: Identity, url: string, body: unknown) => {
        const r = await as(who, 'POST', url, body);
        expect(r.status, r.text).toBe(201);
        return r.json.data[0] as string;
      };
      ids.ap = await post(alice, '/Project', { title: 'alice project' });
      ids.bp = await post(bob, '/Project', { title: 'bob project' });
      ids.event = await post(alice, '/Event', { title: 'launch', seats: 10 });
      await post(alice, '/Rsvp', { event: { id: ids.event } });
      await post(bob, '/Rsvp', { event: { id: ids.event } });
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    describe("a query reads its from rows as the collection's list does (_CREATOR in its GET rule)", () => {
      const titles = async (who: Identity | null, url: string) => {
        const r = await as(who, 'GET', url);
        expect(r.status, r.text).toBe(200);
        return (r.json.data as { title: string }[]).map((x) => x.title).sort();
      };

      it('shows a user only their own rows, with their own id as owner', async () => {
        expect(await titles(bob, '/Project')).toEqual(['bob project']);
        const r = await as(bob, 'GET', '/ProjectList');
        expect(r.json.data).toEqual([{ id: ids.bp, title: 'bob project', owner: ids.bob }]);
        expect((await as(bob, 'GET', '/ProjectList?count=only')).json.meta.count).toBe(1);
        expect((await as(bob, 'GET', `/ProjectList/${ids.ap}`)).status).toBe(404);
        expect((await as(bob, 'GET', `/ProjectList/${ids.bp}`)).json).toMatchObject({ title: 'bob project' });
      });

      it('shows an anonymous caller no row (the collection answers it 401)', async () => {
        expect((await as(null, 'GET', '/Project')).status).toBe(401);
        expect(await titles(null, '/ProjectList')).toEqual([]);
        expect((await as(null, 'GET', '/ProjectList?count=only')).json.meta.count).toBe(0);
        expect((await as(null, 'GET', `/ProjectList/${ids.ap}`)).status).toBe(404);
        expect((await as(null, 'GET', '/ProjectCount')).json.data).toEqual([]);
      });

      it("shows a holder of the rule's other role every row", async () => {
        expect(await titles(mia, '/Project')).toEqual(['alice project', 'bob project']);
        expect(await titles(mia, '/ProjectList')).toEqual(['alice project', 'bob project']);
        const groups = (await as(mia, 'GET', '/ProjectCount')).json.data as { owner: string; projects: number }[];
        expect(groups.map((g) => [g.owner, g.projects]).sort()).toEqual(
          [
            [ids.alice, 1],
            [ids.bob, 1],
          ].sort(),
        );
      });

      it('groups only the caller’s rows', async () => {
        expect((await as(alice, 'GET', '/ProjectCount')).json.data).toEqual([{ id: ids.alice, owner: ids.alice, projects: 1 }]);
      });
    });

    describe('ctx.app', () => {
      it("counts every RSVP with the app's rights, where ctx.get counts the caller's own", async () => {
        const left = await as(alice, 'GET', `/seatsLeft?event=${ids.event}`);
        expect(left.status, left.text).toBe(200);
        expect(left.json).toEqual({ seatsLeft: 8, taken: 2 });
        const seen = await as(alice, 'GET', `/seatsSeen?event=${ids.event}`);
        expect(seen.json).toEqual({ taken: 1 });
        // Anonymous callers too: Event is public, and ctx.app needs no identity.
        expect((await as(null, 'GET', `/seatsLeft?event=${ids.event}`)).json).toEqual({ seatsLeft: 8, taken: 2 });
      });

      it('is the global `app` of the script form', async () => {
        const r = await as(bob, 'GET', `/scriptSeats?event=${ids.event}`);
        expect(r.status, r.text).toBe(200);
        expect(r.json).toEqual({ taken: 2 });
      });

      it('logs each call with the function name, method and path', async () => {
        lines.length = 0;
        expect((await as(bob, 'GET', `/seatsLeft?event=${ids.event}`)).status).toBe(200);
        const line = lines.find((l) => l.function === 'seatsLeft' && l.path === '/api/Rsvp');
        expect(line, JSON.stringify(lines.slice(-5))).toMatchObject({ level: 30, function: 'seatsLeft', method: 'GET', path: '/api/Rsvp' });
        expect(String(line!.msg)).toContain("app's rights");
        // ctx.get of the same call is not an app-rights call.
        expect(lines.filter((l) => l.function === 'seatsLeft' && l.path === '/api/Event')).toEqual([]);
        // The log store keeps it too, as a line of the function.
        const called = await call(server.url, 'GET', `/seatsLeft?event=${ids.event}`, undefined, bob.headers);
        expect(called.status).toBe(200);
        const reqId = called.headers.get('x-request-id')!;
        const admin = await adminIdentity(app, server.url);
        const stored = await waitFor(async () => {
          const r = await call(server.url, 'GET', `/_admin/logs?reqId=${reqId}&kind=function`, undefined, admin.headers);
          return r.json.data?.length ? r.json.data : null;
        }, 5000);
        expect(stored).toEqual([expect.objectContaining({ source: 'seatsLeft', message: 'app rights: GET /api/Rsvp', identityId: ids.bob })]);
      });

      it("creates rows whose createdBy is the function's caller, or null for an anonymous call", async () => {
        const byBob = await as(bob, 'POST', `/rsvpAsApp?event=${ids.event}`);
        expect(byBob.status, byBob.text).toBe(200);
        expect(byBob.json.data).toEqual([{ id: expect.any(String), createdBy: ids.bob }]);
        // Bob reads it as his own through the collection.
        expect((await as(bob, 'GET', `/Rsvp?filter=${encodeURIComponent(`id eq "${byBob.json.data[0].id}"`)}`)).json.data).toHaveLength(1);
        const byNobody = await as(null, 'POST', `/rsvpAsApp?event=${ids.event}`);
        expect(byNobody.status, byNobody.text).toBe(200);
        expect(byNobody.json.data).toEqual([{ id: expect.any(String), createdBy: null }]);
      });

      it('cannot be asked for by a client: no header or body turns a caller call into an app call', async () => {
        const headers = { ...alice.headers, 'x-svc-as-app': 'true', 'x-as-app': '1' };
        const r = await call(server.url, 'GET', `/seatsSeen?event=${ids.event}&asApp=true`, undefined, headers);
        expect(r.json.taken).toBeLessThan(3);
        expect(r.json.taken).toBe((await as(alice, 'GET', `/seatsSeen?event=${ids.event}`)).json.taken);
        const body = await as(alice, 'POST', `/seatsSeen?event=${ids.event}`, { asApp: true, type: 'api' });
        expect(body.json).toEqual(r.json);
      });

      it('answers 500 INTERNAL for an uncaught refusal of ctx.app (the code is at fault)', async () => {
        const r = await as(alice, 'POST', '/readAsApp', {});
        expect(r.status, r.text).toBe(500);
        expect(r.json).toMatchObject({ code: 'INTERNAL' });
      });
    });

    describe("an uncaught refusal of the caller's own call answers its status and body", () => {
      it('401 for an anonymous caller', async () => {
        const r = await as(null, 'GET', '/readAs?name=Rsvp');
        expect(r.status, r.text).toBe(401);
        expect(r.json).toEqual({ code: 'UNAUTHORIZED', error: 'GET on Rsvp requires authentication' });
        expect((await as(null, 'GET', `/seatsSeen?event=${ids.event}`)).status).toBe(401);
      });

      it('403 for an authenticated caller without the role', async () => {
        const r = await as(bob, 'GET', '/readAs?name=Ledger');
        expect(r.status, r.text).toBe(403);
        expect(r.json).toEqual({ code: 'FORBIDDEN', error: 'GET on Ledger is not allowed for this caller' });
      });

      it('404 for a row that is not there', async () => {
        const missing = '0190aaaa-0000-7000-8000-000000000000';
        const r = await as(bob, 'GET', `/readAs?name=Event&id=${missing}`);
        expect(r.status, r.text).toBe(404);
        expect(r.json).toMatchObject({ code: 'NOT_FOUND', error: expect.stringContaining(missing) });
      });

      it('400 with the details for a bad request', async () => {
        const r = await as(bob, 'GET', `/readAs?name=Event&filter=${encodeURIComponent('nope eq 1')}`);
        expect(r.status, r.text).toBe(400);
        expect(r.json).toMatchObject({ code: 'INVALID_FILTER' });
      });
    });
  });
}

for (const backend of backends()) suite(backend);
