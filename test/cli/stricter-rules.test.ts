/**
 * `svc generate` refuses a stricter rule that stored rows break (issue 31 §4), on both databases, as a
 * real process against the app's real database, following the README's recipe for making a property
 * required in steps: added optional, migrated and served; made required while rows hold null → refused,
 * naming the collection, the property, the count and the row ids, and nothing is written (before, the
 * migration was written and failed when applied: `NOT NULL constraint failed`). A lower `maxLength` and
 * a narrower `enum` are refused the same way. With a literal default the migration fills the null rows
 * and applies. The backends' suites run side by side, each on its own app copy and database.
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
/** The Event collection with `organizerEmail` as given (absent when undefined) and `kind`'s enum. */
const event = (organizerEmail: Record<string, unknown> | undefined, kinds = ['talk', 'workshop', 'party']) => ({
  name: 'Event',
  properties: {
    title: { type: 'string', required: true },
    kind: { type: 'string', enum: kinds },
    ...(organizerEmail && { organizerEmail: { type: 'string', ...organizerEmail } }),
  },
  access: ['GET', 'POST', 'PATCH'].map((method) => ({ method, roleNames: OPEN })),
});

const source = mkdtempSync(join(tmpdir(), 'svc-stricter-'));
mkdirSync(join(source, 'collections'));
writeFileSync(join(source, 'svc.json'), JSON.stringify({ name: 'events' }));
writeFileSync(join(source, 'collections', 'Event.json'), JSON.stringify(event(undefined)));
afterAll(() => rmSync(source, { recursive: true, force: true }));

function stricterSuite(backend: Backend): void {
  describeBeside(`stricter rules over stored rows on ${backend}`, () => {
    let app: PreparedApp;
    const ids: string[] = [];
    const migrations = () => readdirSync(join(app.dir, 'migrations', backend)).filter((n) => !n.endsWith('.toml'));
    const edit = (organizerEmail: Record<string, unknown> | undefined, kinds?: string[]) =>
      writeFileSync(join(app.dir, 'collections', 'Event.json'), JSON.stringify(event(organizerEmail, kinds)));
    const withServer = async (work: (base: string) => Promise<void>) => {
      const server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
      try {
        await work(server.url);
      } finally {
        await server.close();
      }
    };
    /** Runs `svc generate`, expecting a refusal; checks nothing was written; returns stderr. */
    const refused = async () => {
      const before = { migrations: migrations(), manifest: readFileSync(join(app.dir, '.svc', 'manifest.json'), 'utf8') };
      const run = await runCli(['generate', app.dir], app.env);
      expect(run.code, run.stderr).toBe(1);
      expect(migrations()).toEqual(before.migrations);
      expect(readFileSync(join(app.dir, '.svc', 'manifest.json'), 'utf8')).toBe(before.manifest);
      return run.stderr;
    };

    beforeAll(async () => {
      app = await prepareApp(source, backend);
      await withServer(async (base) => {
        for (const kind of ['talk', 'talk', 'party']) {
          const r = await call(base, 'POST', '/Event', { title: `a ${kind}`, kind });
          expect(r.status, r.text).toBe(201);
          ids.push((r.json as { data: string[] }).data[0]);
        }
      });
    });
    afterAll(async () => {
      await app?.cleanup();
    });

    it('step 1: the property added optional is generated and migrated', async () => {
      edit({});
      const run = await runCli(['generate', app.dir], app.env);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/new migration/);
      const migrated = await runCli(['migrate', app.dir], app.env);
      expect(migrated.code, migrated.stderr).toBe(0);
    });

    it('made required while rows hold null: refused naming the collection, property, count and ids, and the ways out', async () => {
      edit({ required: true });
      const sorted = [...ids].sort();
      expect(await refused()).toContain(
        `collections/Event.json: /properties/organizerEmail/required: Event.organizerEmail cannot be made required: ` +
          `3 stored rows (ids ${sorted.join(', ')}) hold no value; give it a "default" (the migration fills those rows with it), ` +
          `or fill those rows in first and then make it required (nothing was written)`,
      );
      await withServer(async (base) => {
        for (const id of sorted.slice(0, 2)) expect((await call(base, 'PATCH', `/Event/${id}`, { organizerEmail: 'ada@example.com' })).status).toBe(200);
      });
      expect(await refused()).toContain(`Event.organizerEmail cannot be made required: 1 stored row (id ${sorted[2]}) hold no value`);
    });

    it('a lower maxLength and a narrower enum that rows break are refused the same way', async () => {
      edit({ maxLength: 5 });
      expect(await refused()).toContain(
        `collections/Event.json: /properties/organizerEmail/maxLength: "maxLength": 5 cannot be set on Event.organizerEmail: 2 stored rows (ids `,
      );
      edit({}, ['talk', 'workshop']);
      const party = ids[2];
      expect(await refused()).toContain(
        `collections/Event.json: /properties/kind/enum: "enum" of Event.kind leaves out values that 1 stored row (id ${party}) hold; change those rows first`,
      );
      // A wider enum and a limit every row meets are not refused.
      edit({ maxLength: 100 }, ['talk', 'workshop', 'party', 'fair']);
      const wider = await runCli(['generate', app.dir], app.env);
      expect(wider.code, wider.stderr).toBe(0);
    });

    it('made required with a default: the migration fills the rows without a value, and applies', async () => {
      edit({ required: true, default: "no-one's@example.com" });
      const run = await runCli(['generate', app.dir], app.env);
      expect(run.code, run.stderr).toBe(0);
      const folder = /new migration migrations\/\w+\/(\S+)/.exec(run.stdout)?.[1];
      expect(folder, run.stdout).toBeDefined();
      expect(readFileSync(join(app.dir, 'migrations', backend, folder!, 'migration.sql'), 'utf8')).toContain(
        `UPDATE "Event" SET "organizerEmail" = 'no-one''s@example.com' WHERE "organizerEmail" IS NULL;`,
      );
      const migrated = await runCli(['migrate', app.dir], app.env);
      expect(migrated.code, migrated.stderr).toBe(0);
      const rows = await selectRows(app.env, 'SELECT "organizerEmail" AS "e" FROM "Event" ORDER BY "id"');
      expect(rows.map((r) => r.e)).toEqual(['ada@example.com', 'ada@example.com', "no-one's@example.com"]);
    });
  });
}

for (const backend of backends()) stricterSuite(backend);
