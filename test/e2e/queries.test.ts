/**
 * Queries (DESIGN §3): join queries (one row per `from` row, dot paths through lookups, the
 * definition's filter applied) and aggregate queries (`groupBy` with count, sum, avg, min, max), read
 * only at `/api/{query}` and `/api/{query}/{id}`, with filter, sortBy, select, paging and count on
 * their output fields — the same on every backend, checked against values computed here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call, runScenario } from '../support/scenario.js';

const AUTHORS = [
  { name: 'Ann', country: 'NO' },
  { name: 'Bob', country: 'SE' },
  { name: 'Cat', country: 'NO' },
  { name: 'Dan', country: null },
];
// [author index or null, price, year, published, inStock]
const BOOKS: [number | null, number | null, number, string | null, boolean][] = [
  [0, 12.5, 2001, '2001-05-01', true],
  [0, 7.25, 2010, null, true],
  [0, 20, 1995, '1995-03-03', false],
  [1, 30, 1999, '1999-01-02', false],
  [1, 10.1, 2003, '2003-07-07', true],
  [2, 5, 2020, '2020-12-31', true],
  [3, null, 2022, '2022-01-01', true],
  [null, 8, 1980, null, true],
];

function querySuite(backend: Backend): void {
  describe(`queries on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let authorIds: string[];
    let bookIds: string[];

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/catalog'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      authorIds = (await call(base, 'POST', '/Author', AUTHORS)).json.data;
      bookIds = (
        await call(
          base,
          'POST',
          '/Book',
          BOOKS.map(([a, price, year, published, inStock], i) => ({
            title: `B${i}`,
            author: a === null ? null : { id: authorIds[a] },
            price,
            year,
            published,
            inStock,
          })),
        )
      ).json.data;
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('join query: one row per matching from-row, fields through lookups, the definition filter applied', async () => {
      const res = await call(base, 'GET', '/BookCatalog?pageSize=100&count=true');
      expect(res.status, res.text).toBe(200);
      const expected = BOOKS.map((b, i) => ({ b, i }))
        .filter(({ b }) => b[4])
        .map(({ b: [a, price, year, published], i }) => ({
          id: bookIds[i],
          title: `B${i}`,
          price,
          year,
          published,
          author: a === null ? null : { id: authorIds[a] },
          authorName: a === null ? null : AUTHORS[a].name,
          authorCountry: a === null ? null : AUTHORS[a].country,
        }))
        .sort((x, y) => (x.id < y.id ? -1 : 1));
      expect(res.json.data).toEqual(expected);
      expect(res.json.meta.count).toBe(expected.length);
      const one = await call(base, 'GET', `/BookCatalog/${bookIds[0]}`);
      expect(one.json).toEqual(expected.find((r) => r.id === bookIds[0]));
      await runScenario(base, { name: 'filtered out by the definition', url: `/BookCatalog/${bookIds[2]}`, status: 404 });
      await runScenario(base, { name: 'not a uuid', url: '/BookCatalog/nope', status: 404 });
    });

    it('join query: filter, sortBy, select, paging, keyset and count on output fields', async () => {
      const f = encodeURIComponent('authorCountry eq "NO" and price ge 5');
      const res = await call(base, 'GET', `/BookCatalog?filter=${f}&sortBy=price-&select=title,price&count=true`);
      expect(res.json.data).toEqual([
        { id: bookIds[0], title: 'B0', price: 12.5 },
        { id: bookIds[1], title: 'B1', price: 7.25 },
        { id: bookIds[5], title: 'B5', price: 5 },
      ]);
      expect(res.json.meta.count).toBe(3);
      const through = await call(base, 'GET', `/BookCatalog?filter=${encodeURIComponent('author.name eq "Bob"')}&select=title`);
      expect(through.json.data.map((r: any) => r.title)).toEqual(['B4']);
      const nulls = await call(base, 'GET', `/BookCatalog?filter=${encodeURIComponent('authorName eq null')}&select=title`);
      expect(nulls.json.data.map((r: any) => r.title)).toEqual(['B7']);
      const page = await call(base, 'GET', '/BookCatalog?sortBy=year&pageSize=2&pageNo=2&select=year');
      expect(page.json.data.map((r: any) => r.year)).toEqual([2003, 2010]); // in stock: 1980 2001 2003 2010 2020 2022
      const first = (await call(base, 'GET', '/BookCatalog?pageSize=4')).json.data;
      const rest = (await call(base, 'GET', `/BookCatalog?pageSize=10&lastKey=${first[3].id}`)).json.data;
      expect([...first, ...rest]).toHaveLength(6);
      expect(new Set([...first, ...rest].map((r: any) => r.id)).size).toBe(6);
      expect((await call(base, 'GET', `/BookCatalog?count=only&filter=${encodeURIComponent('title sw~ "b"')}`)).json).toEqual({ data: [], meta: { count: 6 } });
    });

    it('aggregate query: count, sum, avg, min, max per group; id is the group key', async () => {
      const res = await call(base, 'GET', '/AuthorStats?pageSize=100');
      expect(res.status, res.text).toBe(200);
      const groups = new Map<string | null, typeof BOOKS>();
      for (const b of BOOKS) groups.set(b[0] === null ? null : authorIds[b[0]], [...(groups.get(b[0] === null ? null : authorIds[b[0]]) ?? []), b]);
      for (const row of res.json.data) {
        const books = groups.get(row.id)!;
        const prices = books.map((b) => b[1]).filter((p): p is number => p !== null);
        const published = books
          .map((b) => b[3])
          .filter((p): p is string => p !== null)
          .sort();
        expect(row).toEqual({
          id: row.id,
          authorName: row.id === null ? null : AUTHORS[authorIds.indexOf(row.id)].name,
          books: books.length,
          totalPrice: prices.length
            ? expect.closeTo(
                prices.reduce((s, p) => s + p, 0),
                9,
              )
            : null,
          avgPrice: prices.length ? expect.closeTo(prices.reduce((s, p) => s + p, 0) / prices.length, 9) : null,
          firstYear: Math.min(...books.map((b) => b[2])),
          lastPublished: published.at(-1) ?? null,
        });
      }
      expect(res.json.data).toHaveLength(groups.size);
      const one = await call(base, 'GET', `/AuthorStats/${authorIds[0]}`);
      expect(one.json).toMatchObject({ id: authorIds[0], authorName: 'Ann', books: 3, totalPrice: 39.75, firstYear: 1995, lastPublished: '2001-05-01' });
      const top = await call(base, 'GET', `/AuthorStats?sortBy=totalPrice-&pageSize=1&filter=${encodeURIComponent('books ge 2')}&count=true`);
      expect(top.json.data.map((r: any) => r.authorName)).toEqual(['Bob']); // Bob 40.1 > Ann 39.75
      expect(top.json.meta.count).toBe(2);
      const avg = await call(base, 'GET', `/AuthorStats?filter=${encodeURIComponent('avgPrice gt 12 and avgPrice lt 20.05')}&select=authorName,avgPrice`);
      expect(avg.json.data).toEqual(
        [
          { id: authorIds[0], authorName: 'Ann', avgPrice: 13.25 },
          { id: authorIds[1], authorName: 'Bob', avgPrice: 20.05 },
        ].filter((r) => r.avgPrice < 20.05),
      );
    });

    it('aggregate query over several keys: a composite text id that addresses the group', async () => {
      const res = await call(base, 'GET', '/CountryStock?pageSize=100');
      const expected = new Map<string, { books: number; maxPrice: number | null }>();
      for (const [a, price, , , inStock] of BOOKS) {
        const key = `${a === null ? '' : (AUTHORS[a].country ?? '')}|${inStock}`;
        const e = expected.get(key) ?? { books: 0, maxPrice: null };
        e.books += 1;
        if (price !== null) e.maxPrice = Math.max(e.maxPrice ?? -Infinity, price);
        expected.set(key, e);
      }
      expect(Object.fromEntries(res.json.data.map((r: any) => [r.id, { books: r.books, maxPrice: r.maxPrice }]))).toEqual(Object.fromEntries(expected));
      expect(res.json.data.map((r: any) => r.id)).toEqual([...expected.keys()].sort()); // ordered by id, byte-wise
      const one = await call(base, 'GET', `/CountryStock/${encodeURIComponent('NO|false')}`);
      expect(one.json).toEqual({ id: 'NO|false', country: 'NO', inStock: false, books: 1, maxPrice: 20 });
      expect((await call(base, 'GET', `/CountryStock?filter=${encodeURIComponent('id eq "SE|true"')}`)).json.data).toHaveLength(1);
      await runScenario(base, { name: 'unknown group', url: '/CountryStock/XX', status: 404 });
      await runScenario(base, {
        name: 'keyset on groups',
        url: '/CountryStock?lastKey=01a1fbe0-00ac-732c-9388-3010e0010ced',
        status: 400,
        contains: ['pageNo'],
      });
    });

    it('is read-only (405 with the error body) and refuses parameters that do not apply (400)', async () => {
      for (const [method, url] of [
        ['POST', '/AuthorStats'],
        ['PUT', `/BookCatalog/${bookIds[0]}`],
        ['PATCH', `/BookCatalog/${bookIds[0]}`],
        ['DELETE', `/BookCatalog/${bookIds[0]}`],
        ['DELETE', '/BookCatalog'],
      ]) {
        await runScenario(base, {
          name: `${method} ${url}`,
          method,
          url,
          body: {},
          status: 405,
          json: { code: 'METHOD_NOT_ALLOWED' },
          contains: ['read-only'],
        });
      }
      await runScenario(base, { name: 'system field', url: '/BookCatalog?sortBy=createdAt', status: 400, contains: ['createdAt'] });
      await runScenario(base, {
        name: 'system field in filter',
        url: `/BookCatalog?filter=${encodeURIComponent('createdAt gt "2020-01-01"')}`,
        status: 400,
        json: { code: 'INVALID_FILTER' },
      });
      await runScenario(base, { name: 'unknown field', url: `/AuthorStats?filter=${encodeURIComponent('nope eq 1')}`, status: 400, contains: ['nope'] });
      await runScenario(base, { name: 'dot select', url: '/BookCatalog?select=author.name', status: 400, contains: ['define the field'] });
      await runScenario(base, { name: 'search', url: '/BookCatalog?search=b', status: 400 });
      await runScenario(base, {
        name: 'wrong literal type',
        url: `/AuthorStats?filter=${encodeURIComponent('books eq "many"')}`,
        status: 400,
        json: { code: 'INVALID_FILTER' },
      });
      const ignored = await call(base, 'GET', '/BookCatalog?lookups=full&pageSize=1');
      expect(ignored.json.data[0].author).toEqual({ id: expect.any(String) });
    });
  });
}

for (const backend of backends()) querySuite(backend);
