/**
 * The log store (DESIGN §9) and the client log `_log` against hostile callers, once per backend over
 * a spawned `svc serve` of the functions fixture (plus a function that prints what it is given):
 * - poison: a client event holding a lone surrogate or a NUL, and a function printing a NUL, stop
 *   nothing: a later request line and a good client line still reach `/api/_admin/logs`, the poison
 *   is stored as U+FFFD (in the log store and in `_log`), `status.logStore` counts nothing dropped;
 * - flood: a signed-in user posting big batches to `_log` is answered 429 with `Retry-After`
 *   (svc.json `logs.clientLog`), another identity is not, and the flooder's earlier request line stays;
 * - secrets: the same list of URLs leaves the same redacted path in stdout request lines and in the
 *   log store (`redactPath`), `lastKey` kept;
 * - request ids: a client's `x-request-id` is not taken (no trusted proxy), ours is answered and logged,
 *   the client's kept beside it as `clientReqId` in stdout only.
 * Then the store itself over the app's real database: a batch with an entry the database refuses
 * alone is split and the rest stored (`rejected` counted); a job line alone is flushed; request lines have their own buffer budget;
 * `_log` is pruned by age and row count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { selectRows } from '../support/system-tables.js';
import { LogStore, type LogEntry } from '../../dist/runtime/logs/log-store.js';
import { prepareLogStore } from '../../dist/runtime/logs/log-batches.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { createLogger } from '../../dist/runtime/log.js';

/** A line is in the store this soon (flushed every 500 ms; the poll allows for a busy machine). */
const LATE_MS = 3000;

/** URLs whose query carries secrets: every value marked `S3CR3T…` must be gone from both outputs. */
const SECRET_URLS = [
  '/login/reset?token=S3CR3T-reset',
  '/login/verify?token=S3CR3T-verify',
  '/api/Note?access_token=S3CR3T-access&pageSize=1',
  '/login/github/callback?code=S3CR3T-code&state=abc',
  '/api/_blobs/x/y?exp=123&sig=S3CR3T-sig',
  '/api/Note?apiKey=S3CR3T-apikey&X-Amz-Signature=S3CR3T-amz&lastKey=0190aaaa-0000-7000-8000-000000000001',
];

function hostileSuite(backend: Backend): void {
  describe(`log store against hostile callers on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let user: Identity;
    let other: Identity;
    const get = (url: string) => call(base, 'GET', url, undefined, admin.headers);
    /** The store's entries of one request id once `count` of them are stored. */
    const entriesOf = (reqId: string, count = 1) =>
      waitFor(async () => {
        const r = await get(`/_admin/logs?reqId=${encodeURIComponent(reqId)}`);
        return r.json.data.length >= count ? r.json.data : null;
      }, LATE_MS);
    /** The stdout request lines (pino JSON). */
    const stdoutLines = () =>
      server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/functions'), backend, (dir) => {
        // The client log is not limited by default (SPEC §8); this app opts in to the suggested limits.
        const settingsFile = join(dir, 'svc.json');
        const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
        writeFileSync(
          settingsFile,
          JSON.stringify({
            ...settings,
            logs: { ...settings.logs, clientLog: { requestsPerMinute: 60, eventsPerMinute: 2000, charactersPerMinute: 1_000_000 } },
          }),
        );
        // Prints `text` (JSON-decoded, so any code unit) to stdout.
        writeFileSync(
          join(dir, 'functions/prints.ts'),
          'export default ({ req }: { req: { query: Record<string, string> } }) => { console.log(JSON.parse(req.query.text)); return { ok: true }; };\n',
        );
        writeFileSync(
          join(dir, 'functions/prints.json'),
          JSON.stringify({ name: 'prints', functionTypeId: 1, endpoint: '/prints', access: { GET: ['_ANONYMOUS_USER'] } }),
        );
      });
      server = await serve(app.dir, { ...app.env, SVC_SECRET_API_KEY: 'key-123', SVC_SECRET_OTHER: 'other' });
      base = server.url;
      admin = await adminIdentity(app, base);
      user = await userIdentity(app, base, 'poisoner');
      other = await userIdentity(app, base, 'bystander');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it("keeps its batches out of the write-ahead log, uncompressed: _svc_log_batches is UNLOGGED on PostgreSQL, the app's tables are not; _svc_logs is a view", async () => {
      if (backend !== 'postgresql') {
        // SQLite has no such table kind: the batches are a plain table in the app's file, read through the view.
        const got = await selectRows(app.env, `SELECT name, type FROM sqlite_master WHERE name IN ('_svc_logs', '_svc_log_batches') ORDER BY name`);
        expect(got).toEqual([
          { name: '_svc_log_batches', type: 'table' },
          { name: '_svc_logs', type: 'view' },
        ]);
        return;
      }
      const rows = await selectRows(
        app.env,
        `SELECT relname AS "name", relpersistence AS "p", relkind AS "k" FROM pg_class WHERE relname IN ('_svc_log_batches', '_svc_logs', 'Note')`,
      );
      expect(Object.fromEntries(rows.map((r) => [r.name, `${r.k}${r.p}`]))).toEqual({ _svc_log_batches: 'ru', _svc_logs: 'vp', Note: 'rp' });
      const [storage] = await selectRows(
        app.env,
        `SELECT attstorage AS "s" FROM pg_attribute WHERE attrelid = '"_svc_log_batches"'::regclass AND attname = 'entries'`,
      );
      expect(storage.s).toBe('e');
      // A second start finds it done and changes nothing.
      const db = await openDatabase('postgresql', app.env.DATABASE_URL!);
      try {
        expect(await prepareLogStore(db)).toBe(false);
      } finally {
        await db.close();
      }
    });

    it('keeps storing after a lone surrogate and a NUL, from a client and from a function', async () => {
      // Lone surrogates: PostgreSQL refused the log store's whole batch, for good (every later line stuck behind it).
      const poison = await call(base, 'POST', '/_log', '[{"message":"\\ud800 lone"},{"message":"\\udc00"}]', user.headers);
      expect(poison.status).toBe(200);
      const printed = await call(base, 'GET', `/prints?text=${encodeURIComponent(JSON.stringify('fn \u0000 nul \ud800'))}`, undefined, user.headers);
      expect(printed.status).toBe(200);
      // Later lines reach the store: a request line and a good client line.
      const later = await call(base, 'GET', '/Note?pageSize=1', undefined, user.headers);
      expect(later.status).toBe(200);
      const good = await call(base, 'POST', '/_log', [{ message: `good line ${backend}` }], user.headers);
      expect(good.status).toBe(200);
      const [laterLine] = await entriesOf(later.headers.get('x-request-id')!);
      expect(laterLine).toMatchObject({ kind: 'request', method: 'GET', path: '/api/Note?pageSize=1', status: 200, identityId: user.id });
      const goodLines = await entriesOf(good.headers.get('x-request-id')!, 2);
      expect(goodLines.find((e: { kind: string }) => e.kind === 'client')).toMatchObject({ message: `good line ${backend}`, identityId: user.id });
      // A NUL: PostgreSQL refused the `_log` row (500).
      const nul = await call(base, 'POST', '/_log', '[{"message":"nul \\u0000 here"}]', user.headers);
      expect(nul.status).toBe(200);
      // The poison itself is stored, made storable (U+FFFD), in the log store and in `_log`.
      const poisoned = [...(await entriesOf(poison.headers.get('x-request-id')!, 3)), ...(await entriesOf(nul.headers.get('x-request-id')!, 2))];
      expect(
        poisoned
          .filter((e: { kind: string }) => e.kind === 'client')
          .map((e: { message: string }) => e.message)
          .sort(),
      ).toEqual(['nul \uFFFD here', '\uFFFD', '\uFFFD lone'].sort());
      const fnLines = await entriesOf(printed.headers.get('x-request-id')!, 2);
      expect(fnLines.find((e: { kind: string }) => e.kind === 'function')).toMatchObject({ source: 'prints', message: 'fn \uFFFD nul \uFFFD' });
      const rows = await selectRows(
        app.env,
        `SELECT "message" FROM "_log" WHERE "reqId" IN ('${poison.headers.get('x-request-id')}', '${nul.headers.get('x-request-id')}')`,
      );
      expect(rows.map((r) => r.message).sort()).toEqual(['nul \uFFFD here', '\uFFFD', '\uFFFD lone'].sort());
      const status = await get('/_admin/status');
      expect(status.json.logStore).toMatchObject({ dropped: 0, rejected: 0, droppedByKind: { request: 0, client: 0, function: 0 } });
    });

    it('answers a flood of _log from one identity 429 with Retry-After; others and earlier request lines are kept', async () => {
      const before = await call(base, 'GET', '/Note?pageSize=2&flood=before', undefined, other.headers);
      const beforeId = before.headers.get('x-request-id')!;
      // logs.clientLog as set above: 2,000 events per identity per minute; the poison test spent 4 of them.
      const batch = Array.from({ length: 1000 }, (_, i) => ({ message: `flood ${i} ${'x'.repeat(100)}` }));
      const statuses: number[] = [];
      let limited: Awaited<ReturnType<typeof call>> | undefined;
      for (let i = 0; i < 5; i++) {
        const r = await call(base, 'POST', '/_log', batch, other.headers);
        statuses.push(r.status);
        if (r.status === 429) limited ??= r;
      }
      expect(statuses.slice(0, 1)).toEqual([200]);
      expect(statuses.slice(2)).toEqual([429, 429, 429]);
      expect(limited!.json).toMatchObject({ code: 'RATE_LIMITED', error: expect.stringContaining('logs.clientLog') });
      const retryAfter = Number(limited!.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another identity is not held back by the flooder.
      expect((await call(base, 'POST', '/_log', [{ message: 'unrelated' }], user.headers)).status).toBe(200);
      // Nothing of a refused post was stored: `_log` holds at most the two admitted batches of the flooder.
      const stored = await selectRows(app.env, `SELECT count(*) AS n FROM "_log" WHERE "createdBy" = '${other.id}'`);
      expect(Number(stored[0].n)).toBeLessThanOrEqual(2000);
      const [line] = await entriesOf(beforeId);
      expect(line).toMatchObject({ kind: 'request', path: '/api/Note?pageSize=2&flood=before', identityId: other.id });
    });

    it('redacts the same secrets in stdout request lines and in the log store', async () => {
      const ids: string[] = [];
      for (const url of SECRET_URLS) {
        const r = await fetch(base.replace(/\/api$/, '') + url, { headers: admin.headers, redirect: 'manual' });
        await r.arrayBuffer();
        ids.push(r.headers.get('x-request-id')!);
      }
      for (const [i, reqId] of ids.entries()) {
        const [stored] = await entriesOf(reqId);
        const printed = await waitFor(() => stdoutLines().find((l) => l.reqId === reqId && l.msg === 'request'), LATE_MS);
        expect(printed.url, SECRET_URLS[i]).toBe(stored.path);
        expect(stored.path).not.toMatch(/S3CR3T/);
      }
      expect(stdoutLines().filter((l) => JSON.stringify(l).includes('S3CR3T'))).toEqual([]);
      const rows = await selectRows(app.env, 'SELECT "path" FROM "_svc_logs"');
      expect(JSON.stringify(rows)).not.toContain('S3CR3T');
      // The keyset cursor is no secret: kept as sent.
      const [last] = await entriesOf(ids[5]);
      expect(last.path).toBe('/api/Note?apiKey=[redacted]&X-Amz-Signature=[redacted]&lastKey=0190aaaa-0000-7000-8000-000000000001');
    });

    it('never takes a client x-request-id without a trusted proxy; keeps it beside ours in stdout', async () => {
      const victim = await call(base, 'GET', '/Note?pageSize=1&victim=1', undefined, other.headers);
      const victimId = victim.headers.get('x-request-id')!;
      const forged = await call(base, 'POST', '/_log', [{ message: 'merged into the victim' }], { ...user.headers, 'x-request-id': victimId });
      expect(forged.status).toBe(200);
      const ours = forged.headers.get('x-request-id')!;
      expect(ours).not.toBe(victimId);
      expect(ours).toMatch(/^[0-9a-f-]{36}$/);
      await entriesOf(ours, 2);
      const victimEntries = (await get(`/_admin/logs?reqId=${victimId}`)).json.data;
      expect(victimEntries.map((e: { kind: string }) => e.kind)).toEqual(['request']);
      const line = await waitFor(() => stdoutLines().find((l) => l.reqId === ours && l.msg === 'request'), LATE_MS);
      expect(line.clientReqId).toBe(victimId);
    });

    it('stores numbers its columns cannot hold as null, so no entry can break reading the store', async () => {
      const db = await openDatabase(backend, app.env.DATABASE_URL!);
      const quiet = createLogger({});
      quiet.level = 'silent';
      try {
        const store = new LogStore(db, 'test-instance', undefined, quiet);
        const tag = `numbers-${backend}`;
        store.record({ kind: 'request', reqId: tag, status: 200.5, durationMs: Number.NaN, severity: 2 ** 40, message: 'odd numbers' });
        store.record({ kind: 'request', reqId: tag, status: 404, durationMs: Number.POSITIVE_INFINITY, severity: -3, message: 'fine numbers' });
        await store.flush();
        const kept = await selectRows(app.env, `SELECT "message", "status", "durationMs", "severity" FROM "_svc_logs" WHERE "reqId" = '${tag}' ORDER BY "id"`);
        expect(
          kept.map((k) => [k.message, k.status === null ? null : Number(k.status), k.durationMs, k.severity === null ? null : Number(k.severity)]),
        ).toEqual([
          ['odd numbers', null, null, null],
          ['fine numbers', 404, null, -3],
        ]);
        expect(store.rejected).toBe(0);
        // The whole store still reads: the console's search answers.
        expect((await get(`/_admin/logs?reqId=${tag}`)).json.data).toHaveLength(2);
      } finally {
        await db.close();
      }
    });

    it('splits a refused batch and drops only the entry refused alone; request lines keep their own budget; prunes _log', async () => {
      const url = app.env.DATABASE_URL!;
      const db = await openDatabase(backend, url);
      const quiet = createLogger({});
      quiet.level = 'silent';
      try {
        const store = new LogStore(db, 'test-instance', undefined, quiet);
        const tag = `split-${backend}`;
        for (let i = 0; i < 20; i++) store.record({ kind: 'client', reqId: tag, message: `ok ${i}` });
        // No kind: the NOT NULL column refuses this entry on either database, whatever its text.
        store.record({ reqId: tag, message: 'refused' } as unknown as LogEntry);
        for (let i = 20; i < 40; i++) store.record({ kind: 'request', reqId: tag, path: `/api/x\u0000?${i}\ud800`, status: 200 });
        await store.flush();
        const kept = await selectRows(app.env, `SELECT "message", "path" FROM "_svc_logs" WHERE "reqId" = '${tag}'`);
        expect(kept).toHaveLength(40);
        expect(kept.filter((k) => k.path !== null).every((k) => /^\/api\/x\uFFFD\?\d+\uFFFD$/.test(String(k.path)))).toBe(true);
        expect(store.rejected).toBe(1);
        expect(store.dropped).toBe(0);
        expect(store.buffered).toBe(0);
        // Job lines alone are flushed too (they once were not counted as buffered, so they waited for another kind's line).
        store.record({ kind: 'job', reqId: `${tag}-job`, source: 'tasks', message: 'svc_trigger tasks attempt 1/10: ok' });
        expect(store.buffered).toBe(1);
        await store.flush();
        expect(await selectRows(app.env, `SELECT "kind" FROM "_svc_logs" WHERE "reqId" = '${tag}-job'`)).toEqual([{ kind: 'job' }]);

        // Client _log rows: the oldest beyond clientLog.maxRows, and rows older than retentionDays, go.
        const day = 86_400_000;
        const pruner = new LogStore(db, 'test-instance', { retentionDays: 7, maxRows: 1_000_000, clientLog: { retentionDays: 2, maxRows: 100 } }, quiet);
        await pruner.prune();
        const left = await selectRows(app.env, 'SELECT count(*) AS n FROM "_log"');
        expect(Number(left[0].n)).toBe(100);
        const later = new LogStore(db, 'test-instance', { retentionDays: 7, maxRows: 1_000_000, clientLog: { retentionDays: 2 } }, quiet, {
          now: () => Date.now() + 3 * day,
        });
        await later.prune();
        expect(Number((await selectRows(app.env, 'SELECT count(*) AS n FROM "_log"'))[0].n)).toBe(0);
      } finally {
        await db.close();
      }
      // A database that no longer answers: client lines past their budget are dropped, request lines are not.
      const closed = await openDatabase(backend, url);
      await closed.close();
      const down = new LogStore(closed, 'test-instance', undefined, quiet, { maxBuffer: 10 });
      for (let i = 0; i < 5; i++) down.record({ kind: 'request', path: `/api/r${i}` });
      for (let i = 0; i < 50; i++) down.record({ kind: 'client', message: `flood ${i}` });
      await down.flush();
      for (let i = 0; i < 50; i++) down.record({ kind: 'function', message: `fn ${i}` });
      expect(down.droppedByKind).toEqual({ request: 0, client: 40, function: 40, job: 0 });
      expect(down.dropped).toBe(80);
      expect(down.buffered).toBe(25);
    });
  });
}

for (const backend of backends()) hostileSuite(backend);
