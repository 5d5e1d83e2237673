/**
 * Every read path against rows one user may see and another may not (issue 20 §6), on
 * test/fixtures/apps/notebook, once per backend. Alice's folder is hidden from Bob by `_CREATOR`,
 * her binder by a policy; her child rows `Mark` (`_CREATOR`) and `Flag` (policy) likewise; her note,
 * which sits in that folder and binder, is readable by everyone. Each path is read as Alice and as
 * Bob: Alice sees the hidden row's secret name, Bob never does — except through a query in its
 * default join mode, which reads joins as the query's author exposed them (DESIGN §4 "Queries"),
 * while `"joins": "caller"` reads them as Bob could GET them (nulls, and a `null` group).
 * The agent's API tools are called in-process as each user (`AgentService.runApiTool`, what a
 * model's tool call runs), and function code reads through its `get` as its caller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { call, type Reply } from '../support/scenario.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

/** The hidden rows' names: a reply that contains one has shown the row. */
const SECRET = { creator: 'folder-secret-af', policy: 'binder-secret-ab', creatorChild: 'mark-secret-am', policyChild: 'flag-secret-fl' };
type Hidden = keyof typeof SECRET;

/** What one read answers, reduced to what the table checks. */
interface Seen {
  status: number;
  text: string;
  json?: any;
}

/** One read path: how to read it as a user, and which hidden row it may show. */
interface ReadCase {
  path: string;
  hidden: Hidden;
  read(as: Reader): Promise<Seen>;
  /** Whether the reply shows the hidden row (default: it contains the row's secret name). */
  sees?(seen: Seen): boolean;
  /** Bob's status when it is not 200 (a `_CREATOR` miss on a named row is 403, a policy miss 404). */
  bobStatus?: number;
  /** True where Bob sees the row by design (a query's default join mode). */
  bobSees?: boolean;
}

/** Reads as one user over HTTP, through an agent tool, or through function code. */
interface Reader {
  get(url: string): Promise<Seen>;
  tool(name: string, args: Record<string, unknown>): Promise<Seen>;
  fn(name: string, params?: Record<string, string>): Promise<Seen>;
}

const ids: Record<string, string> = {};
const enc = encodeURIComponent;
const countOf = (s: Seen) => Number(s.json?.meta?.count ?? 0) > 0;

const cases: ReadCase[] = [
  // Collections: list, get, views, search, count, filters through dot paths.
  { path: 'list', hidden: 'creator', read: (r) => r.get('/Folder') },
  { path: 'list', hidden: 'policy', read: (r) => r.get('/Binder') },
  { path: 'get', hidden: 'creator', read: (r) => r.get(`/Folder/${ids.af}`), bobStatus: 403 },
  { path: 'get', hidden: 'policy', read: (r) => r.get(`/Binder/${ids.ab}`), bobStatus: 404 },
  { path: 'view list', hidden: 'creator', read: (r) => r.get('/AllFolders') },
  { path: 'view list', hidden: 'policy', read: (r) => r.get('/AllBinders') },
  { path: 'view get', hidden: 'creator', read: (r) => r.get(`/AllFolders/${ids.af}`), bobStatus: 403 },
  { path: 'view get', hidden: 'policy', read: (r) => r.get(`/AllBinders/${ids.ab}`), bobStatus: 404 },
  { path: 'search', hidden: 'creator', read: (r) => r.get('/Folder?search=folder-secret') },
  { path: 'search', hidden: 'policy', read: (r) => r.get('/Binder?search=binder-secret') },
  { path: 'count', hidden: 'creator', read: (r) => r.get(`/Folder?count=only&filter=${enc(`name eq "${SECRET.creator}"`)}`), sees: countOf },
  { path: 'count', hidden: 'policy', read: (r) => r.get(`/Binder?count=only&filter=${enc(`name eq "${SECRET.policy}"`)}`), sees: countOf },
  { path: 'count by a dot path', hidden: 'creator', read: (r) => r.get(`/Note?count=only&filter=${enc(`folder.name eq "${SECRET.creator}"`)}`), sees: countOf },
  { path: 'count by a dot path', hidden: 'policy', read: (r) => r.get(`/Note?count=only&filter=${enc(`binder.name eq "${SECRET.policy}"`)}`), sees: countOf },
  // Lookups from a row everyone may read.
  { path: 'select dot path', hidden: 'creator', read: (r) => r.get('/Note?select=title,folder.name') },
  { path: 'select dot path', hidden: 'policy', read: (r) => r.get('/Note?select=title,binder.name') },
  { path: 'select dot path, get', hidden: 'creator', read: (r) => r.get(`/Note/${ids.an}?select=title,folder.name`) },
  { path: 'lookups=full', hidden: 'creator', read: (r) => r.get('/Note?lookups=full') },
  { path: 'lookups=full', hidden: 'policy', read: (r) => r.get('/Note?lookups=full') },
  { path: 'lookups=full, get', hidden: 'policy', read: (r) => r.get(`/Note/${ids.an}?lookups=full`) },
  // Children.
  { path: 'include', hidden: 'creatorChild', read: (r) => r.get('/Note?include=Mark.note') },
  { path: 'include', hidden: 'policyChild', read: (r) => r.get('/Note?include=Flag.note') },
  { path: 'include, get', hidden: 'creatorChild', read: (r) => r.get(`/Note/${ids.an}?include=Mark.note`) },
  { path: 'include, get', hidden: 'policyChild', read: (r) => r.get(`/Note/${ids.an}?include=Flag.note`) },
  // Queries: the default join mode shows joined rows by design; "joins": "caller" does not.
  { path: 'query, default joins', hidden: 'creator', read: (r) => r.get('/NotesPerFolder'), bobSees: true },
  { path: 'query, default joins', hidden: 'policy', read: (r) => r.get('/NotesPerFolder'), bobSees: true },
  { path: 'query, caller joins', hidden: 'creator', read: (r) => r.get('/MyNotesPerFolder') },
  { path: 'query, caller joins', hidden: 'policy', read: (r) => r.get('/MyNotesPerFolder') },
  { path: 'query get, caller joins', hidden: 'creator', read: (r) => r.get(`/MyNotesPerFolder/${ids.an}`) },
  {
    path: 'query filter on a joined field, caller joins',
    hidden: 'policy',
    read: (r) => r.get(`/MyNotesPerFolder?count=only&filter=${enc(`binderName eq "${SECRET.policy}"`)}`),
    sees: countOf,
  },
  { path: 'groupBy, default joins', hidden: 'creator', read: (r) => r.get('/FolderNames'), bobSees: true },
  { path: 'groupBy, default joins', hidden: 'policy', read: (r) => r.get('/BinderNames'), bobSees: true },
  { path: 'groupBy, caller joins', hidden: 'creator', read: (r) => r.get('/MyFolderNames') },
  { path: 'groupBy, caller joins', hidden: 'policy', read: (r) => r.get('/MyBinderNames') },
  // Queries over the hidden rows themselves: the query's own rules admit everyone, but the `from`
  // collection's `_CREATOR` (Folder) and policy (Binder) filter its rows on every read path.
  { path: 'query list of the from rows', hidden: 'creator', read: (r) => r.get('/FolderList') },
  { path: 'query list of the from rows', hidden: 'policy', read: (r) => r.get('/BinderList') },
  { path: 'query get of a from row', hidden: 'creator', read: (r) => r.get(`/FolderList/${ids.af}`), bobStatus: 404 },
  { path: 'query get of a from row', hidden: 'policy', read: (r) => r.get(`/BinderList/${ids.ab}`), bobStatus: 404 },
  {
    path: 'query count of the from rows',
    hidden: 'creator',
    read: (r) => r.get(`/FolderList?count=only&filter=${enc(`name eq "${SECRET.creator}"`)}`),
    sees: countOf,
  },
  {
    path: 'query count of the from rows',
    hidden: 'policy',
    read: (r) => r.get(`/BinderList?count=only&filter=${enc(`name eq "${SECRET.policy}"`)}`),
    sees: countOf,
  },
  { path: 'query filter on the from rows', hidden: 'creator', read: (r) => r.get(`/FolderList?filter=${enc(`name eq "${SECRET.creator}"`)}`) },
  { path: 'query filter on the from rows', hidden: 'policy', read: (r) => r.get(`/BinderList?filter=${enc(`name eq "${SECRET.policy}"`)}`) },
  { path: 'query select on the from rows', hidden: 'creator', read: (r) => r.get('/FolderList?select=name') },
  { path: 'query select on the from rows', hidden: 'policy', read: (r) => r.get('/BinderList?select=name') },
  { path: 'query groupBy of the from rows, caller joins', hidden: 'creator', read: (r) => r.get('/FoldersByName') },
  { path: 'query groupBy of the from rows', hidden: 'policy', read: (r) => r.get('/BindersByName') },
  {
    path: 'query groupBy get of a from group',
    hidden: 'creator',
    read: (r) => r.get(`/FoldersByName/${SECRET.creator}`),
    sees: (s) => s.status === 200,
    bobStatus: 404,
  },
  { path: 'agent tool query list of the from rows', hidden: 'creator', read: (r) => r.tool('listFolderList', {}) },
  { path: 'agent tool query list of the from rows', hidden: 'policy', read: (r) => r.tool('listBinderList', {}) },
  { path: 'function get of a query over the from rows', hidden: 'creator', read: (r) => r.fn('FolderList') },
  // Agent API tools, in-process as the user.
  { path: 'agent tool list', hidden: 'creator', read: (r) => r.tool('listFolder', {}) },
  { path: 'agent tool list', hidden: 'policy', read: (r) => r.tool('listBinder', {}) },
  { path: 'agent tool get', hidden: 'creator', read: (r) => r.tool('getFolder', { id: ids.af }), bobStatus: 403 },
  { path: 'agent tool get', hidden: 'policy', read: (r) => r.tool('getBinder', { id: ids.ab }), bobStatus: 404 },
  { path: 'agent tool lookups=full', hidden: 'creator', read: (r) => r.tool('listNote', { lookups: 'full' }) },
  { path: 'agent tool caller-joins query', hidden: 'policy', read: (r) => r.tool('listMyNotesPerFolder', {}) },
  // Function code reading as its caller.
  { path: 'function get', hidden: 'creator', read: (r) => r.fn('Folder') },
  { path: 'function get', hidden: 'policy', read: (r) => r.fn('Binder') },
  { path: 'function get with a dot path', hidden: 'creator', read: (r) => r.fn('Note', { select: 'title,folder.name' }) },
  { path: 'function get of a caller-joins query', hidden: 'policy', read: (r) => r.fn('MyNotesPerFolder') },
];

function suite(backend: Backend): void {
  describe(`every read path under _CREATOR and policies on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let alice: Identity;
    let bob: Identity;
    const people: Record<'alice' | 'bob', { who: Identity; id: string }> = {} as never;

    const reader = (name: 'alice' | 'bob'): Reader => {
      const { who, id } = people[name];
      const seen = (r: Reply): Seen => ({ status: r.status, text: r.text, json: r.json });
      return {
        get: async (url) => seen(await call(server.url, 'GET', url, undefined, who.headers)),
        tool: async (tool, args) => {
          const options = { identityId: id, actAs: id, apiTools: 'all' } as Parameters<typeof server.agent.runApiTool>[0];
          const out = await server.agent.runApiTool(options, tool, args, false);
          return { status: out.status, text: out.output };
        },
        fn: async (name, params) => {
          const r = await call(server.url, 'POST', '/readAs', { name, params }, who.headers);
          expect(r.status, r.text).toBe(200);
          const body = r.json.read ?? r.json.refused.body;
          return { status: r.json.read ? 200 : r.json.refused.status, text: JSON.stringify(body), json: body };
        },
      };
    };

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/notebook'), backend);
      server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
      alice = await userIdentity(app, server.url, 'alice');
      bob = await userIdentity(app, server.url, 'bob');
      for (const [name, who] of [
        ['alice', alice],
        ['bob', bob],
      ] as const)
        people[name] = { who, id: (await call(server.url, 'GET', '/_me', undefined, who.headers)).json.id };
      const post = async (who: Identity, url: string, body: unknown) => {
        const r = await call(server.url, 'POST', url, body, who.headers);
        expect(r.status, r.text).toBe(201);
        return r.json.data[0] as string;
      };
      ids.af = await post(alice, '/Folder', { name: SECRET.creator });
      ids.ab = await post(alice, '/Binder', { name: SECRET.policy });
      ids.an = await post(alice, '/Note', { title: 'alice note', folder: { id: ids.af }, binder: { id: ids.ab } });
      await post(alice, '/Mark', { note: { id: ids.an }, label: SECRET.creatorChild });
      await post(alice, '/Flag', { note: { id: ids.an }, label: SECRET.policyChild });
      const bf = await post(bob, '/Folder', { name: 'bob folder' });
      const bb = await post(bob, '/Binder', { name: 'bob binder' });
      await post(bob, '/Note', { title: 'bob note', folder: { id: bf }, binder: { id: bb } });
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it.each(cases.map((c) => [`${c.path} (${c.hidden})`, c] as const))('%s', async (_name, c) => {
      const sees = c.sees ?? ((s: Seen) => s.text.includes(SECRET[c.hidden]));
      const a = await c.read(reader('alice'));
      expect(a.status, a.text.slice(0, 300)).toBe(200);
      expect(sees(a), `alice should see it: ${a.text.slice(0, 300)}`).toBe(true);
      const b = await c.read(reader('bob'));
      expect(b.status, b.text.slice(0, 300)).toBe(c.bobStatus ?? 200);
      expect(sees(b), `bob ${c.bobSees ? 'sees it by design' : 'must not see it'}: ${b.text.slice(0, 300)}`).toBe(c.bobSees ?? false);
    });

    it("refuses an agent tool's lookup write to a row the user could not GET, as it does over HTTP", async () => {
      const write = (who: 'alice' | 'bob', ref: Record<string, unknown>) => reader(who).tool('createNote', { body: { title: 'by the agent', ...ref } });
      for (const [field, id, collection] of [
        ['folder', ids.af, 'Folder'],
        ['binder', ids.ab, 'Binder'],
      ]) {
        const refused = await write('bob', { [field]: { id } });
        expect(refused.status, refused.text).toBe(400);
        expect(JSON.parse(refused.text.slice(4))).toMatchObject({
          code: 'VALIDATION_FAILED',
          details: [{ path: `/${field}`, message: `${field}: no ${collection} with id "${id}"` }],
        });
        expect((await write('alice', { [field]: { id } })).status).toBe(201);
      }
      // Alice's two notes go again, so the query tests below see the notes of the set-up only.
      const alice = people.alice.who.headers;
      const written = (await call(server.url, 'GET', `/Note?filter=${encodeURIComponent('title eq "by the agent"')}&select=id`, undefined, alice)).json.data;
      expect(written).toHaveLength(2);
      const removed = await call(
        server.url,
        'DELETE',
        '/Note',
        written.map((r: { id: string }) => r.id),
        alice,
      );
      expect(removed.status, removed.text).toBeLessThan(300);
    });

    it('joins as the caller: hidden joined rows read null, and a groupBy through them groups under null', async () => {
      const rows = async (who: 'alice' | 'bob', url: string) => (await reader(who).get(url)).json.data as any[];
      const byTitle = (list: any[]) => Object.fromEntries(list.map((r) => [r.title, r]));
      expect(byTitle(await rows('bob', '/MyNotesPerFolder'))).toEqual({
        'alice note': { id: ids.an, title: 'alice note', folderName: null, binderName: null },
        'bob note': expect.objectContaining({ folderName: 'bob folder', binderName: 'bob binder' }),
      });
      expect(byTitle(await rows('alice', '/MyNotesPerFolder'))['alice note']).toMatchObject({ folderName: SECRET.creator, binderName: SECRET.policy });
      expect(byTitle(await rows('bob', '/NotesPerFolder'))['alice note']).toMatchObject({ folderName: SECRET.creator, binderName: SECRET.policy });
      const groups = async (who: 'alice' | 'bob', url: string) =>
        (await rows(who, `${url}?sortBy=notes`)).map((g) => [g.id, 'folderName' in g ? g.folderName : g.binderName, g.notes]);
      expect(await groups('bob', '/MyFolderNames')).toEqual(
        expect.arrayContaining([
          [null, null, 1],
          ['bob folder', 'bob folder', 1],
        ]),
      );
      expect(await groups('bob', '/MyBinderNames')).toEqual(
        expect.arrayContaining([
          [null, null, 1],
          ['bob binder', 'bob binder', 1],
        ]),
      );
      expect(await groups('alice', '/MyFolderNames')).toEqual(
        expect.arrayContaining([
          [SECRET.creator, SECRET.creator, 1],
          [null, null, 1],
        ]),
      );
      expect(await groups('bob', '/FolderNames')).toEqual(expect.arrayContaining([[SECRET.creator, SECRET.creator, 1]]));
    });
  });
}

for (const backend of backends()) suite(backend);
