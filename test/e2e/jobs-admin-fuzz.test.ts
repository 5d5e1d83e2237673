/**
 * Hostile input to `/api/_admin/jobs` (DESIGN §12), once per backend against a spawned `svc serve` of
 * the jobs fixture, as an admin service account: malformed job ids (NUL, 10 kB, a lone `%`, unicode,
 * numbers beyond bigint, seeded random strings), bad query parameters (`state=x`, `limit=-1`,
 * repeated parameters) and methods the routes do not serve all answer a 4xx with DESIGN §4's error
 * body (`{ error, code }`), never a 5xx; the server still answers `/api/_ready` afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { fuzzSeed, Prng } from '../support/hostile.js';

/** Malformed ids, already in their URL form. */
const BAD_IDS = [
  '%00',
  'a%00b',
  'x'.repeat(10_000),
  '%25',
  encodeURIComponent('ジョブ✓'),
  encodeURIComponent('😀'),
  '99999999999999999999999999999',
  '-1',
  '0',
  '1e400',
  encodeURIComponent("1' OR '1'='1"),
  encodeURIComponent('../..'),
  '%20',
];

/** Query strings of `GET /_admin/jobs` that must be refused. */
const BAD_QUERIES = [
  'state=x',
  'state=',
  'limit=-1',
  'limit=0',
  'limit=1001',
  'limit=abc',
  'limit=1.5',
  'state=failed&state=pending',
  'limit=1&limit=2',
  'task=nope',
];

function fuzzSuite(backend: Backend): void {
  describe(`admin jobs fuzz on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    /** Asserts a 4xx with the DESIGN §4 error body; returns the status. */
    const refused = async (method: string, url: string, body?: unknown) => {
      const r = await call(base, method, url, body, admin.headers);
      const what = `${method} ${url.slice(0, 120)} → ${r.status} ${r.text.slice(0, 200)}`;
      expect(r.status >= 400 && r.status < 500, what).toBe(true);
      if (method !== 'HEAD') expect(r.json, what).toMatchObject({ error: expect.any(String), code: expect.any(String) });
      return r.status;
    };

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/jobs'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers malformed ids with a 4xx and the error body', async () => {
      for (const id of BAD_IDS) {
        await refused('GET', `/_admin/jobs/${id}`);
        await refused('POST', `/_admin/jobs/${id}/retry`);
        await refused('DELETE', `/_admin/jobs/${id}`);
      }
      const r = new Prng(fuzzSeed());
      for (let i = 0; i < 40; i++) {
        const id = encodeURIComponent(r.string(1 + r.int(60)));
        await refused(r.chance(0.5) ? 'GET' : 'DELETE', `/_admin/jobs/${id}`);
      }
    });

    it('answers bad query parameters and unserved methods with a 4xx and the error body', async () => {
      for (const q of BAD_QUERIES) expect(await refused('GET', `/_admin/jobs?${q}`), q).toBe(400);
      await refused('PUT', '/_admin/jobs');
      await refused('PATCH', '/_admin/jobs/abc');
      await refused('DELETE', '/_admin/jobs');
      await refused('GET', '/_admin/jobs/retry-failed/x');
      await refused('POST', '/_admin/jobs', { state: 'failed' });
      await refused('POST', '/_admin/jobs/retry-failed', '{not json');
      const ready = await call(base, 'GET', '/_ready');
      expect(ready.status).toBe(200);
      const list = await call(base, 'GET', '/_admin/jobs?state=failed&limit=5', undefined, admin.headers);
      expect(list.status, list.text).toBe(200);
    });
  });
}

for (const backend of backends()) fuzzSuite(backend);
