/**
 * @module Unique properties (DESIGN §11, issue 22 item 4) on each backend: `"unique": true` on a string,
 * integer, date, guid and lookup property becomes a unique index; a POST, PUT or PATCH that would make
 * two rows hold the same value answers 409 UNIQUE_VIOLATION naming the property, and writes nothing;
 * nulls never clash; the property is marked in openapi.json and the 409 listed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { call } from '../support/scenario.js';

function uniqueSuite(backend: Backend): void {
  describe(`unique properties on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let team: string;

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/unique'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      team = ((await call(base, 'POST', '/Team', { title: 'Red' })).json as { data: string[] }).data[0];
      const first = await call(base, 'POST', '/Member', {
        handle: 'ada',
        badge: 1,
        joinedOn: '2024-01-31',
        ref: '0190c0de-0000-7000-8000-000000000001',
        captainOf: { id: team },
      });
      expect(first.status, first.text).toBeLessThan(300);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it.each([
      ['handle', { handle: 'ada' }],
      ['badge', { handle: 'b1', badge: 1 }],
      ['joinedOn', { handle: 'b2', joinedOn: '2024-01-31' }],
      ['ref', { handle: 'b3', ref: '0190c0de-0000-7000-8000-000000000001' }],
      ['captainOf', { handle: 'b4', captainOf: { id: '' } }],
    ])('a second row with the same %s is 409 UNIQUE_VIOLATION naming it, and nothing is written', async (property, body) => {
      const sent = 'captainOf' in body ? { ...body, captainOf: { id: team } } : body;
      const before = ((await call(base, 'GET', '/Member?count=only')).json as { count: number }).count;
      const r = await call(base, 'POST', '/Member', sent);
      expect(r.status, r.text).toBe(409);
      expect(r.json).toMatchObject({ code: 'UNIQUE_VIOLATION', details: [{ path: `/${property}` }] });
      expect((r.json as { error: string }).error).toContain(property);
      expect(((await call(base, 'GET', '/Member?count=only')).json as { count: number }).count).toBe(before);
    });

    it('a PATCH onto another row’s value is 409 and leaves the row as it was; nulls and other values do not clash', async () => {
      const second = await call(base, 'POST', '/Member', { handle: 'grace', note: 'kept' });
      expect(second.status, second.text).toBeLessThan(300);
      const third = await call(base, 'POST', '/Member', { handle: 'linus' }); // badge, joinedOn, ref, captainOf all null twice
      expect(third.status, third.text).toBeLessThan(300);
      const id = (second.json as { data: string[] }).data[0];
      const clash = await call(base, 'PATCH', `/Member/${id}`, { handle: 'ada', note: 'changed' });
      expect(clash.status, clash.text).toBe(409);
      expect(clash.json).toMatchObject({ code: 'UNIQUE_VIOLATION', details: [{ path: '/handle' }] });
      expect((await call(base, 'GET', `/Member/${id}`)).json).toMatchObject({ handle: 'grace', note: 'kept' });
      expect((await call(base, 'PATCH', `/Member/${id}`, { badge: 2 })).status).toBe(200);
    });

    it('openapi.json marks the unique properties and lists the 409', async () => {
      const doc = (await call(base, 'GET', '/_openapi')).json as {
        components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> };
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      };
      expect(doc.components.schemas.Member.properties.handle.description).toMatch(/unique/i);
      expect(doc.components.schemas.Member.properties.note.description ?? '').not.toMatch(/unique/i);
      expect(doc.paths['/Member'].post.responses['409']).toBeDefined();
    });
  });
}

for (const backend of backends()) uniqueSuite(backend);
