/**
 * Authorization over real HTTP (DESIGN §3 access and policies, §4 "Auth details"), once per backend,
 * on test/fixtures/apps/secure. Every data route (list, one, POST, PUT, PATCH, DELETE, bulk DELETE,
 * views, include, nested children) is walked with five identities: anonymous, a user (alice),
 * another user (bob), a role holder (carol: editor + auditor) and an admin service account.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call, type Reply } from '../support/scenario.js';

type Who = 'anonymous' | 'alice' | 'bob' | 'carol' | 'admin';
const WHO: Who[] = ['anonymous', 'alice', 'bob', 'carol', 'admin'];

function accessSuite(backend: Backend): void {
  describe(`access rules and policies on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    const id: Record<Exclude<Who, 'anonymous'>, Identity> = {} as never;
    /** Notes: a1 private and a2 shared by alice, b1 private by bob. Comments on a2: cb by bob, cc by carol. */
    const n: Record<string, string> = {};

    const as = (who: Who, method: string, url: string, body?: unknown): Promise<Reply> =>
      call(base, method, url, body, who === 'anonymous' ? {} : id[who].headers);
    const created = async (who: Who, url: string, body: unknown): Promise<string> => {
      const r = await as(who, 'POST', url, body);
      expect(r.status, r.text).toBe(201);
      return r.json.data[0];
    };
    /** Asserts one status per identity for a request made fresh for each (`request` may create rows first). */
    async function walk(name: string, want: Record<Who, number>, request: (who: Who) => Promise<Reply>): Promise<void> {
      for (const who of WHO) {
        const r = await request(who);
        expect(r.status, `${name} as ${who}: ${r.text.slice(0, 200)}`).toBe(want[who]);
        if (r.status >= 400) expect(r.json, `${name} as ${who}`).toMatchObject({ error: expect.any(String), code: expect.any(String) });
      }
    }
    const ids = (r: Reply) => r.json.data.map((x: { id: string }) => x.id).sort();

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      id.admin = await adminIdentity(app, base);
      id.alice = await userIdentity(app, base, 'alice');
      id.bob = await userIdentity(app, base, 'bob');
      id.carol = await userIdentity(app, base, 'carol', ['editor', 'auditor']);
      n.a1 = await created('alice', '/Note', { title: 'alice private' });
      n.a2 = await created('alice', '/Note', { title: 'alice shared', shared: true });
      n.b1 = await created('bob', '/Note', { title: 'bob private' });
      n.cb = await created('bob', '/Comment', { note: { id: n.a2 }, text: 'bob on a2' });
      n.cc = await created('carol', '/Comment', { note: { id: n.a2 }, text: 'carol on a2' });
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('lists, counts and reads one row only where rules and policies allow', async () => {
      await walk('GET /Note', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', '/Note?pageSize=100'));
      expect(ids(await as('alice', 'GET', '/Note?pageSize=100'))).toEqual([n.a1, n.a2].sort());
      expect(ids(await as('bob', 'GET', '/Note?pageSize=100'))).toEqual([n.a2, n.b1].sort());
      expect(ids(await as('carol', 'GET', '/Note?pageSize=100'))).toEqual(expect.arrayContaining([n.a1, n.a2, n.b1]));
      expect((await as('bob', 'GET', '/Note?count=only')).json.meta.count).toBe(2);
      expect((await as('bob', 'GET', `/Note?count=true&filter=${encodeURIComponent('title sw "alice"')}`)).json.meta.count).toBe(1);
      await walk('GET /Note/a1 (private)', { anonymous: 401, alice: 200, bob: 404, carol: 200, admin: 200 }, (w) => as(w, 'GET', `/Note/${n.a1}`));
      await walk('GET /Note/a2 (shared)', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', `/Note/${n.a2}`));
      await walk('GET /Bulletin (anonymous allowed)', { anonymous: 200, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', '/Bulletin'));
      await walk('POST /Bulletin (editor)', { anonymous: 401, alice: 403, bob: 403, carol: 201, admin: 201 }, (w) =>
        as(w, 'POST', '/Bulletin', { text: 'hi' }),
      );
      await walk('PUT /Bulletin (no rule)', { anonymous: 401, alice: 403, bob: 403, carol: 403, admin: 404 }, (w) =>
        as(w, 'PUT', `/Bulletin/${n.a1}`, { text: 'x' }),
      );
    });

    it('creates for any authenticated caller, with createdBy from the caller and never from the body', async () => {
      await walk('POST /Note', { anonymous: 401, alice: 201, bob: 201, carol: 201, admin: 201 }, (w) =>
        as(w, 'POST', '/Note', { title: `by ${w}`, createdBy: id.bob.id, id: n.a1 }),
      );
      const mine = await created('alice', '/Note', { title: 'forged', createdBy: id.bob.id });
      expect((await as('alice', 'GET', `/Note/${mine}`)).json.createdBy).toBe(id.alice.id);
      expect((await as('bob', 'GET', `/Note/${mine}`)).status).toBe(404); // not bob's, though the body said so
      // Nor can a write move a row to someone else.
      expect((await as('alice', 'PATCH', `/Note/${mine}`, { createdBy: id.bob.id, title: 'still mine' })).json).toMatchObject({
        createdBy: id.alice.id,
        title: 'still mine',
      });
      expect((await as('alice', 'PUT', `/Note/${mine}`, { createdBy: id.bob.id, title: 'replaced' })).json).toMatchObject({
        createdBy: id.alice.id,
        title: 'replaced',
      });
    });

    it('updates and deletes: _CREATOR owns its rows (others 403), invisible rows are 404, editors and admins may', async () => {
      for (const method of ['PUT', 'PATCH']) {
        await walk(`${method} /Note/a2 (shared)`, { anonymous: 401, alice: 200, bob: 403, carol: 200, admin: 200 }, (w) =>
          as(w, method, `/Note/${n.a2}`, { title: `${method} by ${w}`, shared: true }),
        );
        await walk(`${method} /Note/a1 (private)`, { anonymous: 401, alice: 200, bob: 404, carol: 200, admin: 200 }, (w) =>
          as(w, method, `/Note/${n.a1}`, { title: `${method} by ${w}` }),
        );
      }
      expect((await as('admin', 'GET', `/Note/${n.a1}`)).json.title).toBe('PATCH by admin');
      const fresh = (w: Who) => created('alice', '/Note', { title: `to delete by ${w}`, shared: true });
      await walk('DELETE /Note/x', { anonymous: 401, alice: 204, bob: 403, carol: 204, admin: 204 }, async (w) => as(w, 'DELETE', `/Note/${await fresh(w)}`));
      await walk('DELETE a private note of bob', { anonymous: 401, alice: 404, bob: 204, carol: 204, admin: 204 }, async (w) =>
        as(w, 'DELETE', `/Note/${await created('bob', '/Note', { title: 'bob private' })}`),
      );
      await walk('bulk DELETE /Note', { anonymous: 401, alice: 204, bob: 403, carol: 204, admin: 204 }, async (w) =>
        as(w, 'DELETE', '/Note', [await fresh(w), await fresh(w)]),
      );
      // A bulk delete naming an invisible row is 404 and deletes nothing.
      const keep = await fresh('bob');
      expect((await as('bob', 'DELETE', '/Note', [keep, n.b1, n.a1])).status).toBe(404);
      expect((await as('alice', 'GET', `/Note/${keep}`)).status).toBe(200);
      expect((await as('bob', 'GET', `/Note/${n.b1}`)).status).toBe(200);
    });

    it("_CREATOR on every method: lists narrow to own rows, another caller's row is 403", async () => {
      const mine = await created('alice', '/Journal', { entry: 'dear diary', createdBy: id.bob.id });
      const theirs = await created('bob', '/Journal', { entry: 'bob writes' });
      await walk('POST /Journal', { anonymous: 401, alice: 201, bob: 201, carol: 201, admin: 201 }, (w) => as(w, 'POST', '/Journal', { entry: w }));
      expect((await as('alice', 'GET', '/Journal?pageSize=100')).json.data.map((j: any) => j.entry)).toEqual(['dear diary', 'alice']);
      expect((await as('alice', 'GET', '/Journal?count=only')).json.meta.count).toBe(2);
      await walk('GET /Journal/theirs', { anonymous: 401, alice: 403, bob: 200, carol: 403, admin: 200 }, (w) => as(w, 'GET', `/Journal/${theirs}`));
      await walk('PATCH /Journal/theirs', { anonymous: 401, alice: 403, bob: 200, carol: 403, admin: 200 }, (w) =>
        as(w, 'PATCH', `/Journal/${theirs}`, { entry: `patched by ${w}` }),
      );
      await walk('PUT /Journal/mine', { anonymous: 401, alice: 200, bob: 403, carol: 403, admin: 200 }, (w) =>
        as(w, 'PUT', `/Journal/${mine}`, { entry: `put by ${w}` }),
      );
      expect((await as('bob', 'DELETE', '/Journal', [theirs, mine])).status).toBe(403);
      expect((await as('alice', 'GET', `/Journal/${mine}`)).json).toMatchObject({ entry: 'put by admin', createdBy: id.alice.id });
      await walk('DELETE /Journal/x', { anonymous: 401, alice: 204, bob: 403, carol: 403, admin: 204 }, async (w) =>
        as(w, 'DELETE', `/Journal/${await created('alice', '/Journal', { entry: 'gone' })}`),
      );
    });

    it("views apply their filter and the base collection's rules and policies, or their own rules", async () => {
      await walk('GET /SharedNotes', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', '/SharedNotes?pageSize=100'));
      const bobShared = ids(await as('bob', 'GET', '/SharedNotes?pageSize=100'));
      expect(bobShared).toContain(n.a2);
      expect(bobShared).not.toContain(n.b1); // his, but not shared
      await walk('GET /SharedNotes/a1 (outside the view)', { anonymous: 401, alice: 404, bob: 404, carol: 404, admin: 404 }, (w) =>
        as(w, 'GET', `/SharedNotes/${n.a1}`),
      );
      await walk('PATCH /SharedNotes/a2', { anonymous: 401, alice: 200, bob: 403, carol: 200, admin: 200 }, (w) =>
        as(w, 'PATCH', `/SharedNotes/${n.a2}`, { body: w }),
      );
      await walk('GET /MyNotes', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', '/MyNotes?pageSize=100'));
      expect(ids(await as('bob', 'GET', '/MyNotes?pageSize=100'))).toEqual(
        ids(await as('bob', 'GET', `/Note?pageSize=100&filter=${encodeURIComponent(`createdBy eq "${id.bob.id}"`)}`)),
      );
      expect(ids(await as('bob', 'GET', '/MyNotes?pageSize=100'))).toContain(n.b1);
      await walk('POST /MyNotes (its own rules: GET only)', { anonymous: 401, alice: 403, bob: 403, carol: 403, admin: 201 }, (w) =>
        as(w, 'POST', '/MyNotes', { title: 'x' }),
      );
      await walk('DELETE /MyNotes/b1', { anonymous: 401, alice: 403, bob: 403, carol: 403, admin: 404 }, (w) => as(w, 'DELETE', `/MyNotes/${n.b1}`));
    });

    it("include reads children under the child collection's GET rule and policies", async () => {
      const kids = async (w: Who) => (await as(w, 'GET', `/Note/${n.a2}?include=Comment.note`)).json['Comment.note'].map((c: any) => c.id).sort();
      await walk('GET /Note/a2?include=Comment.note', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) =>
        as(w, 'GET', `/Note/${n.a2}?include=Comment.note`),
      );
      expect(await kids('alice')).toEqual([n.cb, n.cc].sort()); // comments on her note
      expect(await kids('bob')).toEqual([n.cb]); // only his own
      expect(await kids('admin')).toEqual([n.cb, n.cc].sort());
      const listed = (await as('bob', 'GET', `/Note?pageSize=100&include=Comment.note&filter=${encodeURIComponent(`id eq "${n.a2}"`)}`)).json.data[0];
      expect(listed['Comment.note'].map((c: any) => c.id)).toEqual([n.cb]);
      await walk('include of a child the caller may not read', { anonymous: 401, alice: 403, bob: 403, carol: 200, admin: 200 }, (w) =>
        as(w, 'GET', `/Note?include=Attachment.note`),
      );
      await walk('GET /Comment (policies)', { anonymous: 401, alice: 200, bob: 200, carol: 200, admin: 200 }, (w) => as(w, 'GET', '/Comment?pageSize=100'));
      expect(ids(await as('bob', 'GET', '/Comment?pageSize=100'))).toEqual([n.cb]);
      await walk('GET /Comment/cc', { anonymous: 401, alice: 200, bob: 404, carol: 200, admin: 200 }, (w) => as(w, 'GET', `/Comment/${n.cc}`));
    });

    it("nested children are written under the child collection's rules and policies", async () => {
      const dave = await userIdentity(app, base, 'dave', ['editor']); // may edit any visible note, sees only his comments
      const davePatch = await call(base, 'PATCH', `/Note/${n.a2}`, { 'Comment.note': [] }, dave.headers);
      expect(davePatch.status, davePatch.text).toBe(200);
      expect((await as('admin', 'GET', `/Note/${n.a2}?include=Comment.note`)).json['Comment.note']).toHaveLength(2); // hidden children untouched
      const stolen = await call(base, 'PATCH', `/Note/${n.a2}`, { 'Comment.note': [{ id: n.cb }, { id: n.cc, text: 'x' }] }, dave.headers);
      expect(stolen.status).toBe(400); // cc is not his to see: it is "not a child of this row"
      expect((await as('alice', 'PATCH', `/Note/${n.a2}`, { 'Comment.note': [{ id: n.cb, text: 'edited by alice' }, { id: n.cc }] })).status).toBe(403); // Comment PATCH is _CREATOR/editor
      expect((await as('alice', 'PATCH', `/Note/${n.a2}`, { 'Comment.note': [] })).status).toBe(403); // Comment DELETE is _CREATOR
      expect((await as('admin', 'GET', `/Comment/${n.cb}`)).json.text).toBe('bob on a2');
      expect((await as('carol', 'PATCH', `/Note/${n.a2}`, { 'Comment.note': [{ id: n.cb, text: 'edited by carol' }, { id: n.cc }] })).status).toBe(200); // editor
      const withKids = await as('alice', 'POST', '/Note', { title: 'with comments', 'Comment.note': [{ text: 'first' }] });
      expect(withKids.status).toBe(201);
      expect((await as('bob', 'POST', '/Note', { title: 'attach', 'Attachment.note': [{ name: 'x' }] })).status).toBe(403);
      expect((await as('bob', 'GET', '/Note?count=only&filter=title%20eq%20%22attach%22')).json.meta.count).toBe(0); // nothing written
    });

    it('lookups to rows the caller cannot see are refused on write and not expanded on read', async () => {
      const hidden = await as('alice', 'POST', '/Comment', { note: { id: n.b1 }, text: 'on bob private' });
      expect(hidden.status).toBe(400);
      expect(hidden.json.details[0].path).toBe('/note');
      const ce = await created('bob', '/Comment', { note: { id: n.a2 }, text: 'bob again' });
      expect((await as('bob', 'GET', `/Comment/${ce}`)).json.note).toMatchObject({ id: n.a2, title: expect.any(String) });
      expect((await as('alice', 'PATCH', `/Note/${n.a2}`, { shared: false })).status).toBe(200);
      expect((await as('bob', 'GET', `/Comment/${ce}`)).json.note).toEqual({ id: n.a2 }); // a2 is private now
      expect((await as('alice', 'GET', `/Comment/${ce}`)).json.note).toMatchObject({ id: n.a2, title: expect.any(String) });
    });

    it("lists expand each row's lookup under the target's policies: hidden notes stay { id }, with select and keyset pages too", async () => {
      const a4 = await created('alice', '/Note', { title: 'alice shared for good', shared: true });
      const a3 = await created('alice', '/Note', { title: 'alice shared, then not', shared: true });
      const onA4 = await created('bob', '/Comment', { note: { id: a4 }, text: 'page a4' });
      const onA3 = await created('bob', '/Comment', { note: { id: a3 }, text: 'page a3' });
      expect((await as('alice', 'PATCH', `/Note/${a3}`, { shared: false })).status).toBe(200);
      const filter = encodeURIComponent('text sw "page "');
      const notes = (r: Reply) => Object.fromEntries(r.json.data.map((c: { id: string; note: unknown }) => [c.id, c.note]));
      const bob = await as('bob', 'GET', `/Comment?filter=${filter}`);
      expect(bob.status, bob.text).toBe(200);
      expect(notes(bob)).toEqual({ [onA4]: expect.objectContaining({ id: a4, title: 'alice shared for good' }), [onA3]: { id: a3 } });
      // The note's author sees both comments (policy: note.createdBy) and both notes in full.
      expect(notes(await as('alice', 'GET', `/Comment?filter=${filter}`))).toEqual({
        [onA4]: expect.objectContaining({ id: a4, title: 'alice shared for good' }),
        [onA3]: expect.objectContaining({ id: a3, title: 'alice shared, then not', shared: false }),
      });
      expect(notes(await as('bob', 'GET', `/Comment?filter=${filter}&select=note.title`))).toEqual({
        [onA4]: { id: a4, title: 'alice shared for good' },
        [onA3]: { id: a3 },
      });
      const [first, second] = [onA4, onA3].sort();
      const page = await as('bob', 'GET', `/Comment?filter=${filter}&lastKey=${first}&pageSize=5`);
      expect(page.json.data.map((c: { id: string }) => c.id)).toEqual([second]);
      expect(page.json.data[0].note).toEqual(second === onA3 ? { id: a3 } : expect.objectContaining({ title: 'alice shared for good' }));
    });

    it('treats SQL-looking input in filters and bodies as data', async () => {
      const nasty = `x'); DROP TABLE "Note"; -- " OR 1=1`;
      const row = await created('alice', '/Note', { title: nasty, body: `' OR '1'='1` });
      expect((await as('alice', 'GET', `/Note/${row}`)).json).toMatchObject({ title: nasty, body: `' OR '1'='1` });
      for (const filter of ['title eq "x\\" OR 1=1 --"', `title eq "' OR '1'='1"`, 'title eq "x" or createdBy ne "y"']) {
        const r = await as('bob', 'GET', `/Note?pageSize=100&filter=${encodeURIComponent(filter)}`);
        expect(r.status, r.text).toBe(200);
        for (const note of r.json.data) expect([n.a2, n.b1].includes(note.id) || note.createdBy === id.bob.id || note.shared).toBe(true);
      }
      expect((await as('bob', 'GET', `/Note?filter=${encodeURIComponent(`title eq "${nasty.replace(/"/g, '\\"')}"`)}`)).json.data).toEqual([]); // alice's, private
      expect((await as('alice', 'GET', `/Note?filter=${encodeURIComponent(`title eq "${nasty.replace(/"/g, '\\"')}"`)}`)).json.data).toHaveLength(1);
      expect((await as('admin', 'GET', '/Note?count=only')).json.meta.count).toBeGreaterThan(3); // the table is still there
    });
  });
}

for (const backend of backends()) accessSuite(backend);
