/**
 * `svc generate` refuses `"unique": true` on a property whose stored rows repeat a value (DESIGN §11,
 * issue 22 item 4), on both databases, as a real process against the app's real database: the
 * refusal names the collection, the property, the repeated values with their counts and row ids, and
 * writes nothing (no migration, `.svc/` as it was, the rows and indexes unchanged); once the rows are
 * fixed, generate succeeds and the migrated index refuses a repeat with 409. The backends' suites run
 * side by side (`describeBeside`), each on its own app copy and database.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { describeBeside } from '../support/beside.js';
import { prepareApp, runCli, type PreparedApp } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { selectRows } from '../support/system-tables.js';
import { startServer } from '../../dist/runtime/index.js';

const OPEN = ['_ANONYMOUS_USER', '_AUTHENTICATED_USER'];
const person = (unique: boolean) => ({
  name: 'Person',
  properties: { handle: { type: 'string', maxLength: 40, ...(unique && { unique: true }) }, note: { type: 'string' } },
  access: ['GET', 'POST', 'PATCH'].map((method) => ({ method, roleNames: OPEN })),
});

/** The source app: one collection, `handle` not unique yet. */
const source = mkdtempSync(join(tmpdir(), 'svc-unique-clash-'));
mkdirSync(join(source, 'collections'));
writeFileSync(join(source, 'svc.json'), JSON.stringify({ name: 'people' }));
writeFileSync(join(source, 'collections', 'Person.json'), JSON.stringify(person(false)));
afterAll(() => rmSync(source, { recursive: true, force: true }));

function clashSuite(backend: Backend): void {
  describeBeside(`unique over clashing rows on ${backend}`, () => {
    let app: PreparedApp;
    const ids: Record<string, string[]> = {};
    const migrations = () => readdirSync(join(app.dir, 'migrations', backend)).filter((n) => !n.endsWith('.toml'));
    const handles = async () =>
      (await selectRows(app.env, 'SELECT "handle", "note" FROM "Person" ORDER BY "id"')).map((r) => `${String(r.handle)}:${String(r.note)}`);
    /** Runs the app in this process while `work` talks to its API. */
    const withServer = async (work: (base: string) => Promise<void>) => {
      const server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
      try {
        await work(server.url);
      } finally {
        await server.close();
      }
    };

    beforeAll(async () => {
      app = await prepareApp(source, backend);
      await withServer(async (base) => {
        for (const [handle, n] of [
          ['ada', 3],
          ['bob', 2],
          ['cy', 1],
          [null, 2],
        ] as const) {
          for (let i = 0; i < n; i++) {
            const r = await call(base, 'POST', '/Person', { handle, note: `n${i}` });
            expect(r.status, r.text).toBe(201);
            (ids[String(handle)] ??= []).push((r.json as { data: string[] }).data[0]);
          }
        }
      });
    });
    afterAll(async () => {
      await app?.cleanup();
    });

    it('refuses, naming the values, their counts and rows, and writes nothing; after the rows are fixed it migrates', async () => {
      const before = { migrations: migrations(), manifest: readFileSync(join(app.dir, '.svc', 'manifest.json'), 'utf8'), rows: await handles() };
      writeFileSync(join(app.dir, 'collections', 'Person.json'), JSON.stringify(person(true)));
      const refused = await runCli(['generate', app.dir], app.env);
      expect(refused.code, refused.stderr).toBe(1);
      const sorted = (list: string[]) => [...list].sort();
      expect(refused.stderr).toContain(
        `collections/Person.json: /properties/handle/unique: "unique" cannot be added to Person.handle: rows in the database already share values: ` +
          `"ada" (3 rows: ${sorted(ids.ada).join(', ')}); "bob" (2 rows: ${sorted(ids.bob).join(', ')}); change or clear those rows first (nothing was written)`,
      );
      expect(refused.stderr).not.toContain('"cy"');
      expect(migrations()).toEqual(before.migrations);
      expect(readFileSync(join(app.dir, '.svc', 'manifest.json'), 'utf8')).toBe(before.manifest);
      expect(await handles()).toEqual(before.rows);

      await withServer(async (base) => {
        for (const [i, id] of [...ids.ada.slice(1), ...ids.bob.slice(1)].entries())
          expect((await call(base, 'PATCH', `/Person/${id}`, { handle: `x${i}` })).status).toBe(200);
        // Two nulls stay: nulls never clash.
      });
      const accepted = await runCli(['generate', app.dir], app.env);
      expect(accepted.code, accepted.stderr).toBe(0);
      expect(accepted.stdout).toMatch(/new migration/);
      expect(migrations()).toHaveLength(before.migrations.length + 1);
      await withServer(async (base) => {
        const repeat = await call(base, 'POST', '/Person', { handle: 'ada' });
        expect(repeat.status, repeat.text).toBe(409);
        expect(repeat.json).toMatchObject({ code: 'UNIQUE_VIOLATION', details: [{ path: '/handle' }] });
        expect((await call(base, 'POST', '/Person', { handle: null })).status).toBe(201);
      });
    });
  });
}

for (const backend of backends()) clashSuite(backend);
