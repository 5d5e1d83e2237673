/**
 * Child aggregates in queries (DESIGN §3 "Child aggregates", issue 31 §3), once per backend: a query
 * from the parent collection counts (sums, averages, min, max) its children through `of`/`via`, a
 * parent without children is kept (count 0, null for the others), a child `filter` narrows the
 * children, filter/sortBy/select/paging/count work on the aggregate fields, and the child rows are
 * joined rows: all of them by default, only those the caller could GET (`_CREATOR`, policies) with
 * `"joins": "caller"`. Fixtures: test/fixtures/apps/catalog (AuthorBooks), test/fixtures/apps/notebook
 * (NoteMarkCounts, MyNoteMarkCounts, BinderFolders, MyBinderFolders).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';

const AUTHORS = ['Ann', 'Bob', 'Cat', 'Dan', 'Eve'];
// [author index, price, year, published, inStock]; Eve (4) has no books, Dan's one book has no price.
const BOOKS: [number, number | null, number, string | null, boolean][] = [
  [0, 12.5, 2001, '2001-05-01', true],
  [0, 7.25, 2010, null, true],
  [0, 20, 1995, '1995-03-03', false],
  [1, 30, 1999, '1999-01-02', false],
  [1, 10.1, 2003, '2003-07-07', false],
  [2, 5, 2020, '2020-12-31', true],
  [3, null, 2022, '2022-01-01', true],
];

/** The AuthorBooks row of author `a`, computed here from BOOKS. */
function expectedRow(a: number, id: string): Record<string, unknown> {
  const books = BOOKS.filter((b) => b[0] === a);
  const prices = books.map((b) => b[1]).filter((p): p is number => p !== null);
  const total = prices.reduce((s, p) => s + p, 0);
  const published = books.map((b) => b[3]).filter((p): p is string => p !== null);
  return {
    id,
    name: AUTHORS[a],
    books: books.length,
    inStock: books.filter((b) => b[4]).length,
    totalPrice: prices.length ? expect.closeTo(total, 9) : null,
    avgPrice: prices.length ? expect.closeTo(total / prices.length, 9) : null,
    firstYear: books.length ? Math.min(...books.map((b) => b[2])) : null,
    lastPublished: published.length ? published.sort().at(-1) : null,
    anyInStock: books.length ? books.some((b) => b[4]) : null,
  };
}

function catalogSuite(backend: Backend): void {
  describe(`child aggregates on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let authorIds: string[];
    const get = async (url: string) => {
      const res = await call(base, 'GET', url);
      expect(res.status, res.text).toBe(200);
      return res.json;
    };
    const enc = encodeURIComponent;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/catalog'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      authorIds = (
        await call(
          base,
          'POST',
          '/Author',
          AUTHORS.map((name) => ({ name })),
        )
      ).json.data;
      const books = BOOKS.map(([a, price, year, published, inStock], i) => ({ title: `B${i}`, author: { id: authorIds[a] }, price, year, published, inStock }));
      expect((await call(base, 'POST', '/Book', books)).status).toBe(201);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('keeps every parent: count 0 and null sum/avg/min/max for one without children', async () => {
      const res = await get('/AuthorBooks?pageSize=100&count=true');
      expect(res.data).toEqual(AUTHORS.map((_, a) => expectedRow(a, authorIds[a])));
      expect(res.meta.count).toBe(AUTHORS.length);
      const eve = await get(`/AuthorBooks/${authorIds[4]}`);
      expect(eve).toEqual({
        id: authorIds[4],
        name: 'Eve',
        books: 0,
        inStock: 0,
        totalPrice: null,
        avgPrice: null,
        firstYear: null,
        lastPublished: null,
        anyInStock: null,
      });
      // Dan has a book without a price: counted, but nothing to sum.
      expect(await get(`/AuthorBooks/${authorIds[3]}?select=books,totalPrice`)).toEqual({ id: authorIds[3], books: 1, totalPrice: null });
    });

    it('applies the child filter to the child rows only', async () => {
      const rows = (await get('/AuthorBooks?pageSize=100&select=name,books,inStock')).data;
      expect(rows.map((r: any) => [r.name, r.books, r.inStock])).toEqual([
        ['Ann', 3, 2],
        ['Bob', 2, 0], // Bob's parent row stays although no child matches the filter
        ['Cat', 1, 1],
        ['Dan', 1, 1],
        ['Eve', 0, 0],
      ]);
    });

    it('filters, sorts, selects, pages and counts on the aggregate fields', async () => {
      const byBooks = (await get('/AuthorBooks?sortBy=books-&select=name,books')).data;
      expect(byBooks.map((r: any) => r.name)).toEqual(['Ann', 'Bob', 'Cat', 'Dan', 'Eve']); // ties by id, ids in creation order
      const byTotal = (await get('/AuthorBooks?sortBy=totalPrice&select=totalPrice')).data;
      expect(byTotal.map((r: any) => r.totalPrice)).toEqual([5, expect.closeTo(39.75, 9), expect.closeTo(40.1, 9), null, null]); // nulls last
      expect((await get(`/AuthorBooks?filter=${enc('books eq 0')}&select=name`)).data).toEqual([{ id: authorIds[4], name: 'Eve' }]);
      expect((await get(`/AuthorBooks?filter=${enc('totalPrice eq null')}&select=name`)).data.map((r: any) => r.name)).toEqual(['Dan', 'Eve']);
      expect((await get(`/AuthorBooks?filter=${enc('inStock ge 1 and avgPrice gt 6')}&select=name`)).data.map((r: any) => r.name)).toEqual(['Ann']);
      expect(await get(`/AuthorBooks?count=only&filter=${enc('books lt 2')}`)).toEqual({ data: [], meta: { count: 3 } });
      const page = await get('/AuthorBooks?sortBy=books-&pageSize=2&pageNo=2&select=books');
      expect(page.data.map((r: any) => r.books)).toEqual([1, 1]);
      const first = (await get('/AuthorBooks?pageSize=3&select=books')).data;
      const rest = (await get(`/AuthorBooks?pageSize=3&lastKey=${first[2].id}&select=books`)).data;
      expect([...first, ...rest].map((r: any) => r.books)).toEqual([3, 2, 1, 1, 0]);
    });

    it('follows the children as they change', async () => {
      const book = (await call(base, 'POST', '/Book', { title: 'Eve one', author: { id: authorIds[4] }, price: 9.5, inStock: true })).json.data[0];
      expect(await get(`/AuthorBooks/${authorIds[4]}?select=books,inStock,totalPrice`)).toEqual({ id: authorIds[4], books: 1, inStock: 1, totalPrice: 9.5 });
      expect((await call(base, 'DELETE', `/Book/${book}`)).status).toBe(204);
      expect(await get(`/AuthorBooks/${authorIds[4]}?select=books,totalPrice`)).toEqual({ id: authorIds[4], books: 0, totalPrice: null });
    });
  });
}

function callerJoinSuite(backend: Backend): void {
  describe(`child aggregates under access rules on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let alice: Identity;
    let bob: Identity;
    let carol: Identity;
    const notes: Record<string, string> = {};
    const rows = async (who: Identity, url: string) => {
      const res = await call(base, 'GET', url, undefined, who.headers);
      expect(res.status, res.text).toBe(200);
      return res.json.data as Record<string, unknown>[];
    };
    // The notes of the mark and flag cases (the binder case adds two more, without marks or flags).
    const two = `filter=${encodeURIComponent('title eq "shared" or title eq "empty"')}`;
    const byTitle = (data: Record<string, unknown>[]) => Object.fromEntries(data.map(({ id: _id, title, ...rest }) => [title, rest]));

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/notebook'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      alice = await userIdentity(app, base, 'alice');
      bob = await userIdentity(app, base, 'bob');
      carol = await userIdentity(app, base, 'carol');
      const post = async (who: Identity, url: string, body: object) => {
        const r = await call(base, 'POST', url, body, who.headers);
        expect(r.status, r.text).toBe(201);
        return r.json.data[0] as string;
      };
      notes.shared = await post(alice, '/Note', { title: 'shared' });
      notes.empty = await post(bob, '/Note', { title: 'empty' });
      // Marks: GET is _CREATOR. Flags: a policy shows each user only their own.
      await post(alice, '/Mark', { note: { id: notes.shared }, label: 'a1' });
      await post(bob, '/Mark', { note: { id: notes.shared }, label: 'b1' });
      await post(bob, '/Mark', { note: { id: notes.shared }, label: 'b2' });
      await post(alice, '/Flag', { note: { id: notes.shared }, label: 'alpha' });
      await post(bob, '/Flag', { note: { id: notes.shared }, label: 'bravo' });
      // Alice's binder holds her note in her folder and, filed by an admin, a note in Bob's folder (_CREATOR).
      const admin = await adminIdentity(app, base);
      const binder = await post(alice, '/Binder', { name: 'alice binder' });
      const aliceFolder = await post(alice, '/Folder', { name: 'alice folder' });
      const bobFolder = await post(bob, '/Folder', { name: 'bob folder' });
      await post(alice, '/Note', { title: 'in alice folder', binder: { id: binder }, folder: { id: aliceFolder } });
      await post(admin, '/Note', { title: 'in bob folder', binder: { id: binder }, folder: { id: bobFolder } });
      notes.binder = binder;
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('counts every child row by default (joined as the query exposes them); me() in a child filter is the caller', async () => {
      const all = (mine: number) => ({ shared: { marks: 3, flags: 2, firstFlag: 'alpha', mine }, empty: { marks: 0, flags: 0, firstFlag: null, mine: 0 } });
      expect(byTitle(await rows(alice, `/NoteMarkCounts?sortBy=title-&${two}`))).toEqual(all(1));
      expect(byTitle(await rows(bob, `/NoteMarkCounts?sortBy=title-&${two}`))).toEqual(all(2));
      expect(byTitle(await rows(carol, `/NoteMarkCounts?sortBy=title-&${two}`))).toEqual(all(0));
      const sorted = await rows(bob, `/NoteMarkCounts?sortBy=marks-&select=title,marks&${two}`);
      expect(sorted.map((r) => [r.title, r.marks])).toEqual([
        ['shared', 3],
        ['empty', 0],
      ]);
    });

    it('with "joins": "caller" counts only the children the caller could GET (_CREATOR and policies)', async () => {
      expect(byTitle(await rows(bob, `/MyNoteMarkCounts?${two}`))).toEqual({
        shared: { marks: 2, flags: 1, firstFlag: 'bravo' },
        empty: { marks: 0, flags: 0, firstFlag: null },
      });
      expect(byTitle(await rows(alice, `/MyNoteMarkCounts?${two}`))).toEqual({
        shared: { marks: 1, flags: 1, firstFlag: 'alpha' },
        empty: { marks: 0, flags: 0, firstFlag: null },
      });
      expect(byTitle(await rows(carol, `/MyNoteMarkCounts?${two}`))).toEqual({
        shared: { marks: 0, flags: 0, firstFlag: null },
        empty: { marks: 0, flags: 0, firstFlag: null },
      });
      // A filter on the aggregate sees the caller's counts, not the hidden ones.
      const f = encodeURIComponent('marks ge 2');
      expect((await rows(bob, `/MyNoteMarkCounts?filter=${f}`)).map((r) => r.title)).toEqual(['shared']);
      expect(await rows(alice, `/MyNoteMarkCounts?filter=${f}`)).toEqual([]);
      const one = await call(base, 'GET', `/MyNoteMarkCounts/${notes.shared}?select=marks`, undefined, alice.headers);
      expect(one.json).toEqual({ id: notes.shared, marks: 1 });
    });

    it('aggregates a dot path of the child rows; with "joins": "caller" a looked-up row the caller could not GET reads null', async () => {
      const row = { id: notes.binder, name: 'alice binder', notes: 2 };
      expect(await rows(alice, '/BinderFolders')).toEqual([{ ...row, folders: 2, lastFolder: 'bob folder' }]);
      expect(await rows(alice, '/MyBinderFolders')).toEqual([{ ...row, folders: 1, lastFolder: 'alice folder' }]);
      expect(await rows(bob, '/MyBinderFolders')).toEqual([]); // the binder policy hides Alice's binder from Bob
    });
  });
}

for (const backend of backends()) {
  catalogSuite(backend);
  callerJoinSuite(backend);
}
