/**
 * Lookup expansion in the read's own statement (runtime/data/lookup-sql.ts, SPEC §4.2 `lookups`), over
 * real HTTP on test/fixtures/apps/typed, once per backend: an expanded lookup reads exactly as the
 * looked-up row read on its own (decimals with all their digits, dates, date-times, booleans, text,
 * nulls, system fields), in lists, keyset pages and GET one, with `select` of lookup fields and
 * `lookups=id`; a lookup whose row is gone stays `{ id }`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { call, type Reply } from '../support/scenario.js';

/** Notes with values that are easy to get wrong on the way through JSON built by the database. */
const NOTES = [
  { title: 'digits', body: 'quotes " and \\ and ünïcödé ✓', pinned: true, rating: 5, status: 'published', dueOn: '2024-02-29', price: 0.30000000000000004 },
  { title: 'big', pinned: false, rating: 0, dueOn: '0999-01-01', price: 123456789.12345679 },
  { title: 'round', price: 12.5 },
  { title: 'empty' },
];

function suite(backend: Backend): void {
  describe(`lookups expanded in the read's statement on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let alice: Identity;
    const noteIds: string[] = [];
    const commentIds: string[] = [];
    const get = (url: string): Promise<Reply> => call(base, 'GET', url, undefined, alice.headers);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/typed'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      alice = await userIdentity(app, base, 'alice');
      for (const note of NOTES) {
        const r = await call(base, 'POST', '/Note', note, alice.headers);
        expect(r.status, r.text).toBe(201);
        noteIds.push(r.json.data[0]);
      }
      for (const [i, noteId] of noteIds.entries()) {
        const r = await call(base, 'POST', '/Comment', { note: { id: noteId }, text: `lx ${i}` }, alice.headers);
        expect(r.status, r.text).toBe(201);
        commentIds.push(r.json.data[0]);
      }
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('answers each expanded note exactly as GET of the note itself, in a list and in GET one', async () => {
      const direct = await Promise.all(noteIds.map(async (id) => (await get(`/Note/${id}`)).json));
      expect(direct[0]).toMatchObject({ price: 0.30000000000000004, dueOn: '2024-02-29', pinned: true, createdAt: expect.stringMatching(/Z$/) });
      const list = await get(`/Comment?filter=${encodeURIComponent('text sw "lx "')}&pageSize=10`);
      expect(list.status, list.text).toBe(200);
      expect(list.json.data.map((c: { note: unknown }) => c.note)).toEqual(direct);
      for (const [i, id] of commentIds.entries()) {
        const one = await get(`/Comment/${id}`);
        expect(one.json.note).toEqual(direct[i]);
        expect(Object.keys(one.json)).toEqual(['id', 'note', 'text', 'postedAt', 'createdAt', 'updatedAt', 'createdBy']);
      }
      // Keyset pages expand the same way.
      const page = await get(`/Comment?lastKey=${commentIds[1]}&pageSize=1`);
      expect(page.json.data).toHaveLength(1);
      expect(page.json.data[0].note).toEqual(direct[2]);
    });

    it('selects lookup fields with dot paths, and lookups=id keeps { id }', async () => {
      const selected = await get(`/Comment?filter=${encodeURIComponent('text eq "lx 0"')}&select=text,note.price,note.dueOn`);
      expect(selected.json.data).toEqual([{ id: commentIds[0], text: 'lx 0', note: { id: noteIds[0], price: 0.30000000000000004, dueOn: '2024-02-29' } }]);
      const bare = await get(`/Comment/${commentIds[1]}?select=note.title`);
      expect(bare.json).toEqual({ id: commentIds[1], note: { id: noteIds[1], title: 'big' } });
      const ids = await get(`/Comment?filter=${encodeURIComponent('text sw "lx "')}&lookups=id`);
      expect(ids.json.data.map((c: { note: unknown }) => c.note)).toEqual(noteIds.map((id) => ({ id })));
      const notSelected = await get(`/Comment/${commentIds[0]}?select=text`);
      expect(notSelected.json).toEqual({ id: commentIds[0], text: 'lx 0' });
    });
  });
}

for (const backend of backends()) suite(backend);
