/**
 * The log store and `/api/_admin/logs` (DESIGN §9), once per backend against a spawned `svc serve` of
 * the functions fixture: a request's line is found by its request id within about 1 s (polled), with
 * its method, path, status, duration and caller; a request carrying `?token=abc`, `?api_key=…` and an
 * Authorization header leaves none of those values in the table (read straight from the database);
 * client `_log` entries and a function's output lines carry the request id; filters, newest-first
 * paging and the per-step stats; hostile query parameters answer 4xx, never 5xx. Then the store
 * itself over the app's real database: retention by age and by row count, and a database that does
 * not answer (entries kept, the oldest dropped past the bound and counted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer, trustLoopback } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { selectRows } from '../support/system-tables.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { LogStore } from '../../dist/runtime/logs/log-store.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { createLogger } from '../../dist/runtime/log.js';

/** A line is in the store this soon (flushed every 500 ms; the poll allows for a busy machine). */
const LATE_MS = 1500;

function adminLogsSuite(backend: Backend): void {
  describe(`admin logs on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let user: Identity;
    const get = (url: string) => call(base, 'GET', url, undefined, admin.headers);
    /** The entries of one request id once `count` of them are stored. */
    const entriesOf = (reqId: string, count = 1) =>
      waitFor(async () => {
        const r = await get(`/_admin/logs?reqId=${encodeURIComponent(reqId)}`);
        return r.json.data.length >= count ? r.json.data : null;
      }, LATE_MS);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/functions'), backend, trustLoopback); // x-request-id of the test is kept
      server = await serve(app.dir, { ...app.env, SVC_SECRET_API_KEY: 'key-123', SVC_SECRET_OTHER: 'other' });
      base = server.url;
      admin = await adminIdentity(app, base);
      user = await userIdentity(app, base, 'logger');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('finds a request by its id within about 1 s, with its caller, and stores no secret', async () => {
      const started = Date.now();
      const r = await call(base, 'GET', '/Note?token=abc&api_key=zq-key-value&pageSize=2', undefined, { ...user.headers, 'x-request-id': `secret-${backend}` });
      expect(r.status).toBe(200);
      const [entry] = await entriesOf(`secret-${backend}`);
      expect(Date.now() - started).toBeLessThan(LATE_MS + 500);
      expect(entry).toMatchObject({
        kind: 'request',
        method: 'GET',
        path: '/api/Note?token=[redacted]&api_key=[redacted]&pageSize=2',
        status: 200,
        identityId: user.id,
        identityKind: 'user',
        instance: expect.any(String),
        durationMs: expect.any(Number),
      });
      // Nothing secret anywhere in the table: not the query values, not the bearer token.
      const rows = await selectRows(app.env, 'SELECT * FROM "_svc_logs"');
      const stored = JSON.stringify(rows);
      expect(entry.path).not.toContain('abc');
      expect(stored).not.toContain('token=abc');
      expect(stored).not.toContain('zq-key-value');
      expect(stored).not.toContain(user.token);
      expect(stored).not.toContain(user.token.split('.')[2]);
    });

    it('keeps client _log entries and function output lines with their request id', async () => {
      const logged = await call(base, 'POST', '/_log', [{ message: 'the button broke', severity: 1 }], {
        ...user.headers,
        'x-request-id': `client-${backend}`,
      });
      expect(logged.status).toBe(200);
      const entries = await entriesOf(`client-${backend}`, 2);
      expect(entries.find((e: { kind: string }) => e.kind === 'client')).toMatchObject({ message: 'the button broke', severity: 1, identityId: user.id });
      expect(entries.find((e: { kind: string }) => e.kind === 'request')).toMatchObject({ method: 'POST', path: '/api/_log', status: 200 });

      // The function's exact path is served outside Express (function-handler.ts): its request line is kept too.
      expect((await call(base, 'GET', '/chatty?lines=2', undefined, { ...user.headers, 'x-request-id': `fn-${backend}` })).status).toBe(200);
      const fnEntries = await entriesOf(`fn-${backend}`, 4);
      expect(fnEntries.find((e: { kind: string }) => e.kind === 'request')).toMatchObject({ method: 'GET', status: 200, identityId: user.id });
      const lines = fnEntries.filter((e: { kind: string }) => e.kind === 'function');
      expect(lines.map((e: { message: string }) => e.message.slice(0, 6)).sort()).toEqual(['a line', 'line 0', 'line 1']);
      expect(lines.every((e: { source: string }) => e.source === 'chatty')).toBe(true);
      expect(lines.find((e: { message: string }) => e.message === 'a line on stderr').severity).toBe(2);
      const onlyFunction = await get(`/_admin/logs?reqId=fn-${backend}&kind=function`);
      expect(onlyFunction.json.data).toHaveLength(3);
    });

    it('filters, pages newest first, and counts requests and errors per step', async () => {
      const tag = `page-${backend}`;
      for (let i = 0; i < 5; i++) await call(base, 'GET', `/Nothing${i}?n=${i}`, undefined, { 'x-request-id': tag });
      await call(base, 'GET', '/boom', undefined, { 'x-request-id': tag });
      const all = await entriesOf(tag, 6);
      expect(all.map((e: { path: string }) => e.path).slice(0, 2)).toEqual(['/api/boom', '/api/Nothing4?n=4']);
      const seen: string[] = [];
      let token: string | undefined;
      do {
        const r = await get(`/_admin/logs?reqId=${tag}&pageSize=2${token ? `&pageToken=${token}` : ''}`);
        expect(r.json.data.length).toBeLessThanOrEqual(2);
        seen.push(...r.json.data.map((e: { id: string }) => e.id));
        token = r.json.nextPageToken;
      } while (token);
      expect(seen).toEqual(all.map((e: { id: string }) => e.id));
      expect((await get(`/_admin/logs?reqId=${tag}&status=404`)).json.data).toHaveLength(5);
      expect((await get(`/_admin/logs?reqId=${tag}&status=5xx`)).json.data.map((e: { status: number }) => e.status)).toEqual([500]);
      expect((await get(`/_admin/logs?reqId=${tag}&path=/api/Nothing3`)).json.data).toHaveLength(1);
      expect((await get(`/_admin/logs?reqId=${tag}&method=POST`)).json.data).toHaveLength(0);
      expect((await get(`/_admin/logs?identity=${user.id}&kind=client`)).json.data.length).toBeGreaterThan(0);
      const from = new Date(Date.now() - 120_000).toISOString();
      const stats = await get(`/_admin/logs/stats?from=${from}&step=60`);
      expect(stats.status).toBe(200);
      expect(stats.json.step).toBe(60);
      expect(stats.json.data.length).toBeGreaterThanOrEqual(2);
      const total = stats.json.data.reduce((n: number, s: { requests: number }) => n + s.requests, 0);
      const errors = stats.json.data.reduce((n: number, s: { errors: number }) => n + s.errors, 0);
      expect(total).toBeGreaterThanOrEqual(6);
      expect(errors).toBeGreaterThanOrEqual(1);
      expect(stats.json.data[0]).toEqual({
        time: expect.any(String),
        requests: expect.any(Number),
        errors: expect.any(Number),
        clientErrors: expect.any(Number),
      });
    });

    it('answers hostile query parameters with 4xx, never a 5xx', async () => {
      const seed = fuzzSeed();
      const r = new Prng(seed);
      const names = ['from', 'to', 'status', 'method', 'path', 'identity', 'reqId', 'kind', 'pageSize', 'pageToken', 'step', 'q', 'identity'];
      const paths = ['/_admin/logs', '/_admin/logs/stats', '/_admin/identities', '/_admin/agent/threads', '/_admin/agent/usage', '/_admin/agent/sessions'];
      const values = [
        '%00',
        'a%00b',
        '',
        '-1',
        '0',
        '1e400',
        '2026-13-45',
        '99999999999999999',
        '%',
        '%00',
        '%E0%A4%A',
        'a'.repeat(3000),
        '5xx',
        '9xx',
        '..',
        'null',
        '[]',
      ];
      for (let i = 0; i < 150; i++) {
        const params = Array.from({ length: 1 + r.int(3) }, () => {
          const value = r.chance(0.5) ? r.pick(values) : encodeURIComponent(r.string(1 + r.int(12)));
          return `${r.pick(names)}=${value}`;
        });
        const url = `${r.pick(paths)}?${params.join('&')}`;
        const answer = await get(url);
        expect(answer.status, `seed ${seed}: ${url}`).toBeLessThan(500);
        if (answer.status >= 400) expect(answer.json?.code, `seed ${seed}: ${url}`).toEqual(expect.any(String));
      }
    });

    it('prunes by age and by row count, and keeps entries while the database does not answer', async () => {
      const url = app.env.DATABASE_URL!;
      const db = await openDatabase(backend, url);
      const quiet = createLogger({});
      quiet.level = 'silent';
      try {
        const day = 86_400_000;
        let clock = Date.now() - 10 * day;
        const store = new LogStore(db, 'test-instance', { retentionDays: 7, maxRows: 1_000_000 }, quiet, { now: () => clock });
        for (let i = 0; i < 3; i++) store.record({ kind: 'client', reqId: `old-${backend}`, message: 'ten days old' });
        await store.flush();
        clock = Date.now();
        expect(await selectRows(app.env, `SELECT "id" FROM "_svc_logs" WHERE "reqId" = 'old-${backend}'`)).toHaveLength(3);
        expect(await store.prune()).toBeGreaterThanOrEqual(3);
        expect(await selectRows(app.env, `SELECT "id" FROM "_svc_logs" WHERE "reqId" = 'old-${backend}'`)).toHaveLength(0);

        const small = new LogStore(db, 'test-instance', { retentionDays: 7, maxRows: 100 }, quiet);
        for (let i = 0; i < 150; i++) small.record({ kind: 'client', reqId: `many-${backend}`, message: `entry ${i}` });
        await small.flush();
        await small.prune();
        // Only this test's entries: the server's own request lines of the test before may still be
        // flushed after the prune (older ids, so a later prune removes them first).
        const kept = await selectRows(app.env, `SELECT "message" FROM "_svc_logs" WHERE "reqId" = 'many-${backend}'`);
        expect(kept).toHaveLength(100);
        expect(kept.map((k) => k.message)).toContain('entry 149');
        expect(kept.map((k) => k.message)).not.toContain('entry 49');
      } finally {
        await db.close();
      }
      // A database that no longer answers: nothing thrown, entries kept up to the bound, the rest counted.
      const closed = await openDatabase(backend, url);
      await closed.close();
      const down = new LogStore(closed, 'test-instance', undefined, quiet, { maxBuffer: 10 });
      for (let i = 0; i < 25; i++) down.record({ kind: 'client', message: `kept ${i}` });
      await down.flush();
      expect(down.dropped).toBe(15);
      down.record({ kind: 'client', message: 'one more' });
      expect(down.dropped).toBe(16);
    });
  });
}

for (const backend of backends()) adminLogsSuite(backend);
