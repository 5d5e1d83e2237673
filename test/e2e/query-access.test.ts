/**
 * Queries and search under access rules and policies (DESIGN §3, §4 "Auth details"), once per
 * backend, on test/fixtures/apps/secure: a query's own rules gate it (401 anonymous, 403 without the
 * role); the `from` collection's policies decide which rows it reads, also inside aggregates; search
 * never finds a row the caller cannot see; `me()` in a request filter is the caller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';

function suite(backend: Backend): void {
  describe(`queries and search under access rules on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let alice: Identity;
    let bob: Identity;
    let carol: Identity; // editor + auditor: sees every note
    let dave: Identity; // editor only: sees own and shared notes
    let admin: Identity;
    const as = (who: Identity | null, url: string) => call(base, 'GET', url, undefined, who ? who.headers : {});

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
      alice = await userIdentity(app, base, 'alice');
      bob = await userIdentity(app, base, 'bob');
      carol = await userIdentity(app, base, 'carol', ['editor', 'auditor']);
      dave = await userIdentity(app, base, 'dave', ['editor']);
      const post = async (who: Identity, body: object) => expect((await call(base, 'POST', '/Note', body, who.headers)).status).toBe(201);
      await post(alice, { title: 'alpha secret plan' });
      await post(alice, { title: 'alpha shared plan', shared: true });
      await post(bob, { title: 'bravo secret plan' });
      await post(bob, { title: 'bravo shared notes', shared: true });
      await post(dave, { title: 'delta secret plan' });
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('gates a query with its own rules: 401 anonymous, 403 without the role', async () => {
      expect((await as(null, '/NoteCounts')).status).toBe(401);
      const refused = await as(alice, '/NoteCounts');
      expect(refused.status).toBe(403);
      expect(refused.json).toMatchObject({ code: 'FORBIDDEN', error: expect.stringContaining('NoteCounts') });
      expect((await as(null, '/NoteTitles')).status).toBe(401);
      expect((await as(alice, `/NoteCounts/true`)).status).toBe(403);
    });

    it("reads only the from-rows the caller's policies show, in joins and in aggregates", async () => {
      const titles = async (who: Identity) => (await as(who, '/NoteTitles?pageSize=100&sortBy=title')).json.data.map((r: any) => r.title);
      expect(await titles(alice)).toEqual(['alpha secret plan', 'alpha shared plan', 'bravo shared notes']);
      expect(await titles(bob)).toEqual(['alpha shared plan', 'bravo secret plan', 'bravo shared notes']);
      expect(await titles(carol)).toHaveLength(5);
      expect(await titles(admin)).toHaveLength(5);
      const counts = async (who: Identity) => Object.fromEntries((await as(who, '/NoteCounts')).json.data.map((r: any) => [r.id, r.notes]));
      expect(await counts(carol)).toEqual({ false: 3, true: 2 });
      expect(await counts(dave)).toEqual({ false: 1, true: 2 }); // own private note + the two shared ones
      const hidden = (await as(bob, '/NoteTitles?pageSize=100')).json.data.find((r: any) => r.title === 'alpha secret plan');
      expect(hidden).toBeUndefined();
      const aliceRows = (await as(alice, '/NoteTitles?pageSize=100&sortBy=title')).json.data;
      expect((await as(bob, `/NoteTitles/${aliceRows[0].id}`)).status).toBe(404); // alice's private note
      expect((await as(bob, `/NoteTitles/${aliceRows[1].id}`)).status).toBe(200); // shared
    });

    it('never finds by search a row the caller cannot see', async () => {
      const found = async (who: Identity, words: string) =>
        (await as(who, `/Note?search=${encodeURIComponent(words)}&pageSize=100&sortBy=title`)).json.data.map((r: any) => r.title);
      expect(await found(bob, 'secret')).toEqual(['bravo secret plan']);
      expect(await found(bob, 'alpha')).toEqual(['alpha shared plan']);
      expect(await found(alice, 'pla')).toEqual(['alpha secret plan', 'alpha shared plan']);
      expect(await found(carol, 'secret')).toHaveLength(3);
      expect((await as(bob, '/Note?search=alpha%20secret&count=only')).json.meta.count).toBe(0);
    });

    it('does not let a dot path in a filter probe rows the caller cannot see', async () => {
      // Alice shares a note, bob comments on it, alice unshares it: bob still sees his comment, not the note.
      const note = (await call(base, 'POST', '/Note', { title: 'zulu hidden title', shared: true }, alice.headers)).json.data[0];
      expect((await call(base, 'POST', '/Comment', { note: { id: note }, text: 'bob was here' }, bob.headers)).status).toBe(201);
      expect((await call(base, 'PATCH', `/Note/${note}`, { shared: false }, alice.headers)).status).toBe(200);
      const probe = (who: Identity, filter: string) => as(who, `/Comment?count=only&filter=${encodeURIComponent(filter)}`);
      expect((await probe(bob, 'text eq "bob was here"')).json.meta.count).toBe(1);
      expect((await probe(bob, 'note.title sw "zulu"')).json.meta.count).toBe(0);
      expect((await probe(bob, 'note.title ne "anything"')).json.meta.count).toBe(0);
      expect((await probe(alice, 'note.title sw "zulu"')).json.meta.count).toBe(1); // alice sees her note
      expect((await as(bob, `/Comment?filter=${encodeURIComponent('text eq "bob was here"')}`)).json.data[0].note).toEqual({ id: note });
    });

    it("evaluates me() in a request filter as the caller's id", async () => {
      const mine = await as(bob, `/Note?filter=${encodeURIComponent("createdBy eq exp('me()')")}&pageSize=100&sortBy=title`);
      expect(mine.status).toBe(200);
      expect(mine.json.data.map((r: any) => r.title)).toEqual(['bravo secret plan', 'bravo shared notes']);
      const notMine = await as(carol, `/Note?filter=${encodeURIComponent("createdBy ne exp('me()')")}&count=only`);
      expect(notMine.json.meta.count).toBe((await as(carol, '/Note?count=only')).json.meta.count); // carol wrote none
    });
  });
}

for (const backend of backends()) suite(backend);
