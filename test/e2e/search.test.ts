/**
 * Full-text search (SPEC §4.2 `search`) on every backend: each word must be a prefix of a word in one
 * of the row's string or text properties, case-insensitively (non-ASCII letters too), all words must
 * match, and it ANDs with `filter` — checked against a reference evaluator in TypeScript. The index
 * is kept in sync by writes, survives migrations that rebuild the table, and is used by the plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import Database from 'better-sqlite3';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { searchCondition } from '../../dist/runtime/data/search.js';
import { renderSql, sql, ident } from '../../dist/runtime/query/sql.js';
import type { Collection } from '../../dist/runtime/manifest.js';

const CATALOG = join(ROOT, 'test/fixtures/apps/catalog');

const BOOKS = [
  { title: 'Fjord Tales', summary: 'Cold water, warm hearts. Contact: john@example.com', price: 12.5 },
  { title: 'FJORDS of the North', summary: 'Hiking-guide for under_score lovers', price: 30 },
  { title: 'Ærlig talt', summary: 'Norsk roman om ÆRLIGHET og Øl', price: 18 },
  { title: 'L’École des femmes', summary: 'Comédie en cinq actes', price: 9.99 },
  { title: 'Straße und Weg', summary: null, price: 22 },
  { title: 'Version 3.5 release notes', summary: 'Numbers 2024 and v2 tokens', price: 5 },
  { title: 'Cold Mountain', summary: 'A long walk home', price: 15 },
  { title: 'Coldplay lyrics', summary: '“Quoted” words; semi;colons', price: 40 },
  { title: 'Nothing to see', summary: 'plain', price: 1 },
];

/** The reference: words are runs of Unicode letters/digits; every search word prefixes some row word. */
function matches(row: { title: string; summary: string | null }, search: string): boolean {
  const split = (s: string) =>
    s
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean);
  const words = split([row.title, row.summary ?? ''].join(' '));
  return split(search).every((w) => words.some((x) => x.startsWith(w)));
}

const SEARCHES = [
  'fjord',
  'FJO',
  'cold',
  'cold water',
  'cold mountain',
  'col',
  'æRL',
  'ærlighet',
  'øl',
  'école',
  'ecole',
  'straße',
  'STRASSE',
  'john',
  'example',
  'example.com',
  'hiking guide',
  'under',
  'score',
  '3',
  '3.5',
  '2024',
  'v2',
  'quoted',
  'semi colons',
  'comédie cinq',
  'zzz',
  'the',
  'notes release',
  '"cold"',
  'c*',
  'cold OR fjord',
  'fjord -tales',
  'a:b',
  "o'brien",
  '(cold)',
];

function searchSuite(backend: Backend): void {
  describe(`search on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let ids: string[];

    beforeAll(async () => {
      app = await prepareApp(CATALOG, backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      ids = (await call(base, 'POST', '/Book', BOOKS)).json.data;
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('returns exactly the rows the reference evaluator matches, for every search', async () => {
      for (const search of SEARCHES) {
        const res = await call(base, 'GET', `/Book?pageSize=100&select=title&search=${encodeURIComponent(search)}`);
        expect(res.status, `${search}: ${res.text}`).toBe(200);
        const expected = BOOKS.map((b, i) => (matches(b, search) ? ids[i] : null))
          .filter(Boolean)
          .sort();
        expect(res.json.data.map((r: any) => r.id).sort(), search).toEqual(expected);
      }
      // The reference is not trivially everything or nothing.
      expect(BOOKS.filter((b) => matches(b, 'cold')).length).toBe(3);
    });

    it('ANDs with filter, counts, pages and works through a view', async () => {
      const q = `search=cold&filter=${encodeURIComponent('price lt 20')}`;
      const res = await call(base, 'GET', `/Book?${q}&count=true&sortBy=price`);
      expect(res.json.meta.count).toBe(2);
      expect(res.json.data.map((r: any) => r.title)).toEqual(['Fjord Tales', 'Cold Mountain']);
      const view = await call(base, 'GET', '/CheapBooks?search=cold&count=only');
      expect(view.json.meta.count).toBe(2); // CheapBooks: price lt 20
      const page = await call(base, 'GET', '/Book?search=cold&pageSize=1&pageNo=2&sortBy=title&select=title');
      expect(page.json.data.map((r: any) => r.title)).toEqual(['Coldplay lyrics']);
      const first = (await call(base, 'GET', '/Book?search=cold&pageSize=2')).json.data;
      const rest = (await call(base, 'GET', `/Book?search=cold&pageSize=10&lastKey=${first[1].id}`)).json.data;
      expect([...first, ...rest].map((r: any) => r.id)).toEqual(ids.filter((_, i) => matches(BOOKS[i], 'cold')).sort());
      const empty = await call(base, 'GET', '/Book?search=%20%2C%20&count=only');
      expect(empty.json.meta.count).toBe(BOOKS.length); // no words: no condition
    });

    it('keeps the index in step with POST, PATCH, PUT and DELETE', async () => {
      const [id] = (await call(base, 'POST', '/Book', { title: 'Zebra crossing' })).json.data;
      const find = async (s: string) => (await call(base, 'GET', `/Book?search=${encodeURIComponent(s)}&select=id`)).json.data.map((r: any) => r.id);
      expect(await find('zebr')).toEqual([id]);
      await call(base, 'PATCH', `/Book/${id}`, { title: 'Yak shaving' });
      expect(await find('zebra')).toEqual([]);
      expect(await find('yak')).toEqual([id]);
      await call(base, 'PATCH', `/Book/${id}`, { price: 3 }); // a non-searched column leaves the index alone
      expect(await find('yak')).toEqual([id]);
      await call(base, 'PUT', `/Book/${id}`, { title: 'Walrus', summary: 'tusks' });
      expect(await find('yak')).toEqual([]);
      expect(await find('walrus tusk')).toEqual([id]);
      expect((await call(base, 'DELETE', `/Book/${id}`)).status).toBe(204);
      expect(await find('walrus')).toEqual([]);
    });

    it('answers 400 where search is not enabled or has too many words', async () => {
      const off = await call(base, 'GET', '/Shelf?search=x');
      expect(off.status).toBe(400);
      expect(off.json).toMatchObject({ code: 'INVALID_PARAMETER', error: expect.stringContaining('search is not enabled on Shelf') });
      const many = await call(base, 'GET', `/Book?search=${Array.from({ length: 17 }, (_, i) => `w${i}`).join('+')}`);
      expect(many.status).toBe(400);
      expect(many.json.error).toContain('at most 16 words');
      const twice = await call(base, 'GET', '/Book?search=a&search=b');
      expect(twice.status).toBe(400);
    });

    it('uses the search index in the query plan', async () => {
      const book = { name: 'Book', properties: [], search: true, access: [], policies: [], children: [] } as unknown as Collection;
      const statement = renderSql(
        sql`SELECT ${ident('t0', 'id')} FROM ${ident('Book')} AS "t0" WHERE ${searchCondition(backend, book, 't0', ['cold', 'wat'])}`,
        backend,
      );
      let plan: string;
      if (backend === 'sqlite') {
        const db = new Database(app.env.DATABASE_URL!.slice('file:'.length), { readonly: true });
        plan = db
          .prepare(`EXPLAIN QUERY PLAN ${statement.text}`)
          .all(...(statement.values as string[]))
          .map((r: any) => r.detail)
          .join('\n');
        db.close();
        expect(plan).toMatch(/VIRTUAL TABLE INDEX/);
        expect(plan).not.toMatch(/SCAN t0\b/);
      } else {
        const client = new pg.Client({ connectionString: app.env.DATABASE_URL });
        await client.connect();
        // Nine rows are cheaper to scan; forbid it to see that the GIN index serves the condition.
        await client.query('SET enable_seqscan = off');
        plan = (await client.query(`EXPLAIN ${statement.text}`, statement.values)).rows.map((r) => r['QUERY PLAN']).join('\n');
        await client.end();
        expect(plan).toMatch(/Bitmap Index Scan on "?Book__search"?/);
      }
      expect(plan.length).toBeGreaterThan(0);
    });

    it('survives migrations that change the table, and drops its objects when search is turned off', async () => {
      await server.close();
      const bookFile = join(app.dir, 'collections/Book.json');
      const book = JSON.parse(readFileSync(bookFile, 'utf8'));
      book.properties.title.maxLength = 300; // SQLite rebuilds the table for this
      book.properties.edition = { type: 'string', default: 'first' };
      writeFileSync(bookFile, JSON.stringify(book));
      const authorFile = join(app.dir, 'collections/Author.json');
      const author = JSON.parse(readFileSync(authorFile, 'utf8'));
      author.search = false;
      writeFileSync(authorFile, JSON.stringify(author));
      const gen = await runCli(['generate', app.dir, '--name', 'change'], app.env);
      expect(gen.code, gen.stderr).toBe(0);
      server = await serve(app.dir, app.env);
      base = server.url;
      // Existing rows are found, in the new searched column too, and new rows are indexed.
      expect((await call(base, 'GET', '/Book?search=fjord&count=only')).json.meta.count).toBe(2);
      expect((await call(base, 'GET', '/Book?search=first&count=only')).json.meta.count).toBe(BOOKS.length);
      await call(base, 'POST', '/Book', { title: 'Quokka', edition: 'second' });
      expect((await call(base, 'GET', '/Book?search=quokka%20sec&count=only')).json.meta.count).toBe(1);
      expect((await call(base, 'GET', '/Author?search=x')).status).toBe(400);
      const migrations = join(app.dir, 'migrations', backend);
      const sqlText = (await import('node:fs'))
        .readdirSync(migrations)
        .filter((f) => f.endsWith('_change'))
        .map((f) => readFileSync(join(migrations, f, 'migration.sql'), 'utf8'))
        .join('');
      expect(sqlText).toContain(backend === 'sqlite' ? 'DROP TABLE IF EXISTS "Author__search"' : 'ALTER TABLE "Author" DROP COLUMN IF EXISTS "__search"');
    });
  });
}

for (const backend of backends()) searchSuite(backend);
