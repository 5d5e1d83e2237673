/**
 * A lookup may name only a row the caller could GET (issue 20 §6), whatever hides the others: a
 * `_CREATOR` rule (`Folder`) or a policy (`Binder`), on test/fixtures/apps/notebook, once per backend.
 * Every path that writes a lookup as the caller is walked: POST one and many, PUT, PATCH, nested
 * children, and a function's `post` acting as its caller. A refused write changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';

function suite(backend: Backend): void {
  describe(`lookup writes need a target the caller could GET on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let alice: Identity;
    let bob: Identity;
    let admin: Identity;
    const ids: Record<string, string> = {};
    const send = (who: Identity, method: string, url: string, body?: unknown) => call(base, method, url, body, who.headers);
    const created = async (who: Identity, url: string, body: unknown) => {
      const r = await send(who, 'POST', url, body);
      expect(r.status, r.text).toBe(201);
      return r.json.data[0] as string;
    };

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/notebook'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
      alice = await userIdentity(app, base, 'alice');
      bob = await userIdentity(app, base, 'bob');
      ids.aliceFolder = await created(alice, '/Folder', { name: 'alice folder' });
      ids.bobFolder = await created(bob, '/Folder', { name: 'bob folder' });
      ids.aliceBinder = await created(alice, '/Binder', { name: 'alice binder' });
      ids.bobBinder = await created(bob, '/Binder', { name: 'bob binder' });
      ids.bobNote = await created(bob, '/Note', { title: 'bob note', folder: { id: ids.bobFolder }, binder: { id: ids.bobBinder } });
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    const notes = async () => (await send(admin, 'GET', '/Note?count=only')).json.meta.count as number;
    const refusal = (field: string, collection: string, id: string, path = `/${field}`) => ({
      code: 'VALIDATION_FAILED',
      details: [{ path, message: `${field}: no ${collection} with id "${id}"` }],
    });

    const cases: { name: string; field: 'folder' | 'binder'; collection: string; target: 'aliceFolder' | 'aliceBinder' }[] = [
      { name: '_CREATOR', field: 'folder', collection: 'Folder', target: 'aliceFolder' },
      { name: 'a policy', field: 'binder', collection: 'Binder', target: 'aliceBinder' },
    ];
    for (const c of cases) {
      it(`refuses a lookup to a row hidden by ${c.name} on POST, bulk POST, PUT, PATCH and nested children`, async () => {
        const before = await notes();
        const target = ids[c.target];
        const ref = { [c.field]: { id: target } };
        expect((await send(bob, 'POST', '/Note', { title: 'x', ...ref })).json).toMatchObject(refusal(c.field, c.collection, target));
        const bulk = await send(bob, 'POST', '/Note', [{ title: 'ok' }, { title: 'x', ...ref }]);
        expect(bulk.status).toBe(400);
        expect(bulk.json).toMatchObject(refusal(c.field, c.collection, target, `/1/${c.field}`));
        const put = await send(bob, 'PUT', `/Note/${ids.bobNote}`, { title: 'moved', ...ref });
        expect(put.status).toBe(400);
        expect(put.json).toMatchObject(refusal(c.field, c.collection, target));
        expect((await send(bob, 'PATCH', `/Note/${ids.bobNote}`, ref)).status).toBe(400);
        // Nested children under the other lookup (the parent pointer itself is set by the server).
        const [parent, key] = c.field === 'folder' ? [`/Binder/${ids.bobBinder}`, 'Note.binder'] : [`/Folder/${ids.bobFolder}`, 'Note.folder'];
        const nested = await send(bob, 'PATCH', parent, { [key]: [{ id: ids.bobNote }, { title: 'child', ...ref }] });
        expect(nested.status, nested.text).toBe(400);
        expect(nested.json).toMatchObject(refusal(c.field, c.collection, target, `/${key}/1/${c.field}`));
        const nestedPost = await send(bob, 'POST', parent.replace(/\/[^/]+$/, ''), { name: 'new', [key]: [{ title: 'child', ...ref }] });
        expect(nestedPost.json).toMatchObject(refusal(c.field, c.collection, target, `/${key}/0/${c.field}`));
        expect(await notes()).toBe(before);
        const bobNote = (await send(bob, 'GET', `/Note/${ids.bobNote}`)).json;
        expect(bobNote).toMatchObject({ title: 'bob note', folder: { id: ids.bobFolder }, binder: { id: ids.bobBinder } });
      });

      it(`refuses it through a function acting as the caller (${c.name}), and admits the owner`, async () => {
        const target = ids[c.target];
        const refused = await send(bob, 'POST', '/addNote', { title: 'via function', [c.field]: { id: target } });
        expect(refused.json).toMatchObject({ refused: { status: 400, body: refusal(c.field, c.collection, target) } });
        const admitted = await send(alice, 'POST', '/addNote', { title: 'via function', [c.field]: { id: target } });
        expect(admitted.json).toMatchObject({ created: { data: [expect.any(String)] } });
        expect((await send(alice, 'POST', '/Note', { title: 'own', [c.field]: { id: target } })).status).toBe(201);
        expect((await send(admin, 'POST', '/Note', { title: 'admin', [c.field]: { id: target } })).status).toBe(201);
      });
    }

    it('still says a dangling lookup is missing for a caller who may GET every row', async () => {
      const ghost = '0190aaaa-0000-7000-8000-000000000000';
      const r = await send(admin, 'POST', '/Note', { title: 'x', folder: { id: ghost } });
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject(refusal('folder', 'Folder', ghost));
    });
  });
}

for (const backend of backends()) suite(backend);
