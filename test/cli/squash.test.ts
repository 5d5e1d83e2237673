/**
 * `svc migrate --squash <name>` (issue 31 §4) through the real CLI on SQLite and PostgreSQL: the `_dev`
 * migrations that `svc dev` writes edit by edit (here `svc generate --name dev`, applied each time)
 * are folded into one named migration with the same end schema: a column added and dropped again in
 * between leaves no trace, the local database is not migrated again (the new migration is recorded as
 * applied in their place, `svc generate` sees no change), and a fresh database migrated from the folder
 * gets the same model. With nothing to squash it says so. The backends' suites run side by side.
 */
import { afterAll, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, createPgDatabase, type Backend } from '../support/backends.js';
import { describeBeside } from '../support/beside.js';
import { prepareApp, runCli } from '../support/cli.js';
import { selectRows } from '../support/system-tables.js';

const event = (extra: Record<string, unknown>) =>
  JSON.stringify({
    name: 'Event',
    properties: { title: { type: 'string', required: true }, ...extra },
    access: [{ method: 'GET', roleNames: ['_ANONYMOUS_USER'] }],
  });

const source = mkdtempSync(join(tmpdir(), 'svc-squash-'));
mkdirSync(join(source, 'collections'));
writeFileSync(join(source, 'svc.json'), JSON.stringify({ name: 'squash' }));
writeFileSync(join(source, 'collections', 'Event.json'), event({}));
afterAll(() => rmSync(source, { recursive: true, force: true }));

for (const backend of backends() as Backend[]) {
  describeBeside(`svc migrate --squash on ${backend}`, () => {
    it('folds the trailing _dev migrations into one with the same end schema, recorded as applied locally', async () => {
      const app = await prepareApp(source, backend);
      const fresh = backend === 'postgresql' ? await createPgDatabase() : undefined;
      try {
        const { dir, env } = app;
        const folders = () => readdirSync(join(dir, 'migrations', backend)).filter((n) => !n.endsWith('.toml'));
        const cli = async (args: string[], withEnv = env) => {
          const r = await runCli(args, withEnv);
          expect(r.code, r.stderr).toBe(0);
          return r.stdout;
        };
        await cli(['migrate', dir]);
        const [init] = folders();
        // Three edits as svc dev makes them: a column added, another added, that one dropped again.
        for (const extra of [
          { organizerEmail: { type: 'string' } },
          { organizerEmail: { type: 'string' }, venue: { type: 'string' } },
          { organizerEmail: { type: 'string' } },
        ]) {
          writeFileSync(join(dir, 'collections', 'Event.json'), event(extra));
          expect(await cli(['generate', dir, '--name', 'dev', '--accept-data-loss'])).toMatch(/new migration \S+_dev/);
          await cli(['migrate', dir]);
        }
        const devs = folders().slice(1);
        expect(devs).toHaveLength(3);

        const squashed = JSON.parse(await cli(['migrate', dir, '--squash', 'add_organizer_email']));
        const into = `${devs[2].slice(0, 14)}_add_organizer_email`;
        expect(squashed).toEqual({ squashed: devs, into });
        expect(folders()).toEqual([init, into]);
        const sql = readFileSync(join(dir, 'migrations', backend, into, 'migration.sql'), 'utf8');
        expect(sql).toContain('organizerEmail');
        expect(sql).not.toContain('venue');
        expect(JSON.parse(await cli(['migrate', dir, '--status']))).toEqual({ applied: [init, into], pending: [], failed: [], errors: {} });
        expect(await cli(['migrate', dir])).toContain('database is up to date');
        expect(await cli(['generate', dir])).toContain('no model change, no new migration');

        // A fresh database gets the same model from the folder.
        const other = { DATABASE_URL: fresh ? fresh.url : `file:${join(dir, 'data', 'fresh.db')}` };
        expect(await cli(['migrate', dir], other)).toContain(`applied ${init}, ${into}`);
        expect(await selectRows(other, 'SELECT "organizerEmail" FROM "Event"')).toEqual([]);

        const nothing = await runCli(['migrate', dir, '--squash', 'again'], env);
        expect(nothing.code).toBe(1);
        expect(nothing.stderr).toMatch(/^svc: there are no _dev migrations at the end of \S+ to squash\n$/);
      } finally {
        await fresh?.drop();
        await app.cleanup();
      }
    }, 240_000);
  });
}
