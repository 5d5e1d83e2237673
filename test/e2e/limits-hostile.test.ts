/**
 * Hostile requests against examples/shop on each backend: filters past the complexity bounds of
 * docs/query-language.md §6 (100 comparisons, 3 lookups per dot path, no NUL) answer 400 quickly
 * instead of tying up the database, and paths that are not valid percent-encoding answer 400 instead
 * of 500; so do dates outside the years 0001–9999 in a filter (PostgreSQL has no year 0), and a
 * `_token` body over its size limit answers 413. Every error carries the DESIGN §4 body (checked by `runScenario`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { call, runScenario, type Scenario } from '../support/scenario.js';

const ors = (n: number, predicate: string) => Array.from({ length: n }, () => predicate).join(' or ');
const filter = (text: string) => `/Order?filter=${encodeURIComponent(text)}`;

/** A scenario, sent as the admin unless `anonymous`. */
type Row = Scenario & { anonymous?: boolean };

const scenarios: Row[] = [
  {
    name: '150 ORed dot-path comparisons → 400 naming the limit',
    url: filter(ors(150, 'customer.vip eq true')),
    status: 400,
    json: { code: 'INVALID_FILTER', error: `filter: more than 100 comparisons (the limit per filter) at position ${100 * 24 + 1}` },
  },
  {
    name: '101 comparisons → 400',
    url: filter(ors(101, 'title eq "x"')),
    status: 400,
    json: { code: 'INVALID_FILTER', error: expect.stringContaining('more than 100 comparisons') },
  },
  {
    name: '100 comparisons → 200 with the matching order',
    url: `${filter(ors(99, 'title eq "nope"') + ' or customer.vip eq true')}&select=title`,
    status: 200,
    json: { data: [{ title: 'For a VIP' }] },
  },
  {
    name: 'NUL in a string literal → 400',
    url: '/Order?filter=title%20eq%20%22a%00b%22',
    status: 400,
    json: { code: 'INVALID_FILTER', error: 'filter: NUL character (U+0000) at position 12 is not allowed in a filter' },
  },
  {
    name: 'NUL in a public collection filter, anonymous → 400',
    url: '/Product?filter=name%20con%20%22%00%22',
    status: 400,
    anonymous: true,
    json: { code: 'INVALID_FILTER' },
  },
  ...['/%', '/%E0%A4%A', '/Order/%zz', '/%C0%AF', '/Product/%'].map((path): Row => ({
    name: `malformed percent-encoding in ${path}, anonymous`,
    url: path,
    anonymous: true,
    status: 400,
    json: { code: 'INVALID_PARAMETER', error: 'the path is not valid percent-encoding' },
  })),
  ...['dueOn gt "0000-01-01"', 'placedAt lt "0000-12-31T10:00:00Z"', 'placedAt gt "0001-01-01T00:30:00+01:00"', 'placedAt ge "9999-12-31T23:30:00-01:00"'].map(
    (text): Row => ({
      name: `a date out of the years 0001–9999 in a filter (${text}) → 400 INVALID_FILTER`,
      url: filter(text),
      status: 400,
      json: { code: 'INVALID_FILTER', error: expect.stringContaining('expects a value in the years 0001–9999') },
    }),
  ),
  {
    name: 'the first and last dates of the years 0001–9999 in a filter → 200',
    url: filter('dueOn ge "0001-01-01" and placedAt le "9999-12-31T23:59:59Z"'),
    status: 200,
  },
  {
    name: 'a lone % in the query string is a filter error, not a crash',
    url: '/Product?filter=%',
    anonymous: true,
    status: 400,
    json: { code: 'INVALID_FILTER' },
  },
];

function hostileSuite(backend: Backend): void {
  describe(`hostile requests on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Record<string, string>;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'examples/shop'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = (await adminIdentity(app, base)).headers;
      const [vip] = (await call(base, 'POST', '/Customer', { name: 'Vera', vip: true }, admin)).json.data;
      const [plain] = (await call(base, 'POST', '/Customer', { name: 'Paul', vip: false }, admin)).json.data;
      const orders = [
        { title: 'For a VIP', customer: { id: vip } },
        { title: 'Plain', customer: { id: plain } },
      ];
      expect((await call(base, 'POST', '/Order', orders, admin)).status).toBe(201);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    for (const s of scenarios)
      it(s.name, async () => {
        await runScenario(base, { ...s, headers: s.anonymous ? {} : admin });
      });

    it('refuses 150 ORed lookups fast, and the server still serves', async () => {
      const started = performance.now();
      for (let i = 0; i < 20; i++) expect((await call(base, 'GET', filter(ors(150, 'customer.vip eq true')), undefined, admin)).status).toBe(400);
      expect((performance.now() - started) / 20).toBeLessThan(250); // ms per request, on a loaded 2-core machine
      expect((await call(base, 'GET', '/Order?pageSize=1', undefined, admin)).status).toBe(200);
    });

    it('answers 413, not 500, for a _token body over its size limit (JSON and form)', async () => {
      const json = await call(base, 'POST', '/_token', { grant_type: 'client_credentials', pad: 'x'.repeat(70 * 1024) });
      expect(json.status, json.text).toBe(413);
      expect(json.json).toEqual({ error: 'invalid_request', error_description: 'the request body is larger than 64 KiB' });
      const form = await call(base, 'POST', '/_token', `grant_type=client_credentials&pad=${'x'.repeat(20 * 1024)}`, {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(form.status, form.text).toBe(413);
      expect(form.json).toEqual({ error: 'invalid_request', error_description: 'the request body is larger than 16 KiB' });
    });

    it('answers 400, not 500, for malformed percent-encoding on every method', async () => {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        const r = await call(base, method, '/Order/%E0%A4%A', method === 'GET' ? undefined : {}, admin);
        expect(r.status, `${method}: ${r.text}`).toBe(400);
        expect(r.json).toEqual({ error: 'the path is not valid percent-encoding', code: 'INVALID_PARAMETER' });
      }
    });
  });
}

for (const backend of backends()) hostileSuite(backend);
