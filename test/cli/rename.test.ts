/**
 * Renaming a property keeps its values (issue 31 §4), through the real CLI on SQLite and PostgreSQL:
 * the plain `svc generate` refuses the drop and names both ways out (`--rename`, or add, copy, drop);
 * `svc generate --rename Event.code=ref` writes a migration that renames the column in place, the
 * stored values are there under the new name, the unique index (renamed with it) still refuses a
 * repeat, and a later migration that drops that index finds it. A rename that does not fit the model
 * is refused naming it. The backends' suites run side by side.
 */
import { afterAll, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { backends, type Backend } from '../support/backends.js';
import { describeBeside } from '../support/beside.js';
import { prepareApp, runCli } from '../support/cli.js';
import { call } from '../support/scenario.js';
import { selectRows } from '../support/system-tables.js';
import { startServer } from '../../dist/runtime/index.js';

const OPEN = ['_ANONYMOUS_USER'];
const event = (name: string, unique = true) =>
  JSON.stringify({
    name: 'Event',
    properties: { title: { type: 'string', required: true }, [name]: { type: 'string', ...(unique && { unique: true }) } },
    access: ['GET', 'POST'].map((method) => ({ method, roleNames: OPEN })),
  });

const source = mkdtempSync(join(tmpdir(), 'svc-rename-'));
mkdirSync(join(source, 'collections'));
writeFileSync(join(source, 'svc.json'), JSON.stringify({ name: 'renames' }));
writeFileSync(join(source, 'collections', 'Event.json'), event('code'));
afterAll(() => rmSync(source, { recursive: true, force: true }));

for (const backend of backends() as Backend[]) {
  describeBeside(`svc generate --rename on ${backend}`, () => {
    it('renames the column in place keeping its values and its unique index', async () => {
      const app = await prepareApp(source, backend);
      try {
        const { dir, env } = app;
        const withServer = async (work: (base: string) => Promise<void>) => {
          const server = await startServer({ appDir: dir, port: 0, env: { ...process.env, ...env }, logger: pino({ level: 'silent' }) });
          try {
            await work(server.url);
          } finally {
            await server.close();
          }
        };
        await withServer(async (base) => {
          for (const code of ['a', 'b']) expect((await call(base, 'POST', '/Event', { title: code, code })).status).toBe(201);
        });

        writeFileSync(join(dir, 'collections', 'Event.json'), event('ref'));
        const refused = await runCli(['generate', dir], env);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(
          'collections/Event.json: /properties/code: property "code" is gone (removed or renamed): the migration drops its column and the values stored in it; ' +
            'if it was renamed to "ref", keep its values with svc generate --rename Event.code=ref, or add the new property beside "code", copy the values, then remove "code"',
        );
        const wrong = await runCli(['generate', dir, '--rename', 'Event.nope=ref'], env);
        expect(wrong.code).toBe(1);
        expect(wrong.stderr).toContain(`collections/Event.json: /properties/ref: --rename Event.nope=ref: the last migration's Event has no property "nope"`);

        const renamed = await runCli(['generate', dir, '--rename', 'Event.code=ref'], env);
        expect(renamed.code, renamed.stderr).toBe(0);
        const folder = /new migration migrations\/\w+\/(\S+)/.exec(renamed.stdout)![1];
        expect(readFileSync(join(dir, 'migrations', backend, folder, 'migration.sql'), 'utf8')).toContain('ALTER TABLE "Event" RENAME COLUMN "code" TO "ref";');
        const migrated = await runCli(['migrate', dir], env);
        expect(migrated.code, migrated.stderr).toBe(0);
        expect((await selectRows(env, 'SELECT "ref" FROM "Event" ORDER BY "ref"')).map((r) => r.ref)).toEqual(['a', 'b']);
        await withServer(async (base) => {
          const repeat = await call(base, 'POST', '/Event', { title: 'again', ref: 'a' });
          expect(repeat.status, repeat.text).toBe(409);
        });
        expect((await runCli(['generate', dir], env)).stdout).toContain('no model change');

        // A later migration that drops the unique index finds it under the new name.
        writeFileSync(join(dir, 'collections', 'Event.json'), event('ref', false));
        const later = await runCli(['generate', dir], env);
        expect(later.code, later.stderr).toBe(0);
        const dropped = await runCli(['migrate', dir], env);
        expect(dropped.code, dropped.stderr).toBe(0);
        await withServer(async (base) => {
          expect((await call(base, 'POST', '/Event', { title: 'again', ref: 'a' })).status).toBe(201);
        });
      } finally {
        await app.cleanup();
      }
    }, 240_000);
  });
}
