/**
 * Nested children (SPEC §4.4, DESIGN §4): child rows written through `<Child>.<lookup>` keys in POST,
 * PUT and PATCH, in one transaction per request, one level deep, on every backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { call, runScenario, useHeaders } from '../support/scenario.js';

const KEY = 'Child.parent';
const NOWHERE = '00000000-0000-4000-8000-00000000abcd';

function childrenSuite(backend: Backend): void {
  describe(`nested children on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let tag: string;
    const counts = async () => ({
      parents: (await call(base, 'GET', '/Parent?count=only')).json.meta.count,
      children: (await call(base, 'GET', '/Child?count=only')).json.meta.count,
    });
    const childrenOf = async (id: string) => (await call(base, 'GET', `/Parent/${id}?include=${KEY}`)).json[KEY];

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/nested'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      useHeaders(base, (await adminIdentity(app, base)).headers);
      tag = (await call(base, 'POST', '/Tag', { label: 'red' })).json.data[0];
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('creates children with their parent, the parent pointer set by the service', async () => {
      const r = await runScenario(base, {
        name: 'post with children',
        method: 'POST',
        url: '/Parent',
        status: 201,
        body: {
          name: 'P1',
          [KEY]: [
            { name: 'a', tag: { id: tag } },
            { name: 'b', qty: 3, parent: { id: NOWHERE } },
          ],
        },
      });
      const kids = await childrenOf(r.json.data[0]);
      expect(kids.map((k: any) => [k.name, k.qty, k.parent, k.tag])).toEqual([
        ['a', 1, r.json.data[0], tag],
        ['b', 3, r.json.data[0], null],
      ]);
      const many = await runScenario(base, {
        name: 'post array with children',
        method: 'POST',
        url: '/Parent',
        status: 201,
        body: [{ name: 'P2', [KEY]: [{ name: 'c' }] }, { name: 'P3' }],
      });
      expect(await childrenOf(many.json.data[0])).toHaveLength(1);
      expect(await childrenOf(many.json.data[1])).toEqual([]);
    });

    it('on PATCH and PUT updates children with id, creates those without, deletes the missing ones', async () => {
      const parent = (await call(base, 'POST', '/Parent', { name: 'P4', [KEY]: [{ name: 'keep' }, { name: 'change' }, { name: 'drop' }] })).json.data[0];
      const [keep, change] = await childrenOf(parent);
      await runScenario(base, { name: 'patch without key', method: 'PATCH', url: `/Parent/${parent}`, body: { name: 'P4b' }, status: 200 });
      expect(await childrenOf(parent)).toHaveLength(3);
      await runScenario(base, {
        name: 'patch children',
        method: 'PATCH',
        url: `/Parent/${parent}`,
        status: 200,
        body: { [KEY]: [{ id: keep.id }, { id: change.id, qty: 7, name: 'changed' }, { name: 'new' }] },
      });
      const after = await childrenOf(parent);
      expect(after.map((k: any) => [k.name, k.qty])).toEqual([
        ['keep', 1],
        ['changed', 7],
        ['new', 1],
      ]);
      expect(after[0].id).toBe(keep.id);
      await runScenario(base, { name: 'put empty array', method: 'PUT', url: `/Parent/${parent}`, body: { name: 'P4c', [KEY]: [] }, status: 200 });
      expect(await childrenOf(parent)).toEqual([]);
    });

    it('rejects bad children with 400 and writes nothing, also when the last child fails inside the transaction', async () => {
      const other = (await call(base, 'POST', '/Parent', { name: 'Other', [KEY]: [{ name: 'theirs' }] })).json.data[0];
      const theirs = (await childrenOf(other))[0].id;
      const target = (await call(base, 'POST', '/Parent', { name: 'Target', [KEY]: [{ name: 'mine' }] })).json.data[0];
      const before = await counts();
      await runScenario(base, {
        name: 'child invalid',
        method: 'POST',
        url: '/Parent',
        status: 400,
        body: { name: 'X', [KEY]: [{ name: 'ok' }, { name: 'bad', qty: 0 }] },
        json: { details: [{ path: `/${KEY}/1/qty` }] },
      });
      await runScenario(base, { name: 'not an array', method: 'POST', url: '/Parent', body: { name: 'X', [KEY]: { name: 'a' } }, status: 400 });
      await runScenario(base, {
        name: 'too deep',
        method: 'POST',
        url: '/Parent',
        status: 400,
        body: { name: 'X', [KEY]: [{ name: 'a', 'GrandChild.child': [{ note: 'n' }] }] },
        contains: ['one level'],
      });
      // The last child's lookup points nowhere: found inside the transaction, after the parent and
      // the first children were written; everything rolls back.
      await runScenario(base, {
        name: 'last child fails in the transaction',
        method: 'POST',
        url: '/Parent',
        status: 400,
        body: [
          { name: 'Y', [KEY]: [{ name: 'ok' }] },
          { name: 'Z', [KEY]: [{ name: 'ok' }, { name: 'dangling', tag: { id: NOWHERE } }] },
        ],
        json: { details: [{ path: `/1/${KEY}/1/tag` }] },
      });
      await runScenario(base, {
        name: 'patch: last child fails',
        method: 'PATCH',
        url: `/Parent/${target}`,
        status: 400,
        body: { name: 'renamed', [KEY]: [{ name: 'new one' }, { name: 'dangling', tag: { id: NOWHERE } }] },
      });
      await runScenario(base, {
        name: "another parent's child",
        method: 'PATCH',
        url: `/Parent/${target}`,
        status: 400,
        body: { name: 'renamed', [KEY]: [{ id: theirs, name: 'stolen' }] },
        contains: ['not a child'],
      });
      expect(await counts()).toEqual(before);
      expect((await call(base, 'GET', `/Parent/${target}`)).json.name).toBe('Target');
      expect((await childrenOf(target)).map((k: any) => k.name)).toEqual(['mine']);
      expect((await childrenOf(other)).map((k: any) => k.name)).toEqual(['theirs']);
    });
  });
}

for (const backend of backends()) childrenSuite(backend);
