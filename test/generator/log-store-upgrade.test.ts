/**
 * The migration from the log store of one row per entry (`_svc_logs`) to one row per batch
 * (`_svc_log_batches`, generator/migrate/log-store-upgrade.ts), on real SQLite and PostgreSQL databases
 * with Prisma's schema engine: entries stored before the upgrade are read back, field for field,
 * through the view `_svc_logs` the runtime makes at start, and the console's search finds them.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationSql } from '../../dist/generator/migrate/plan-migration.js';
import { diffDatamodels } from '../../dist/runtime/index.js';
import { applyMigrationsSafely } from '../../dist/runtime/data/migrate-safely.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { newestEntries, prepareLogStore } from '../../dist/runtime/logs/log-batches.js';
import { raw, sql } from '../../dist/runtime/query/sql.js';
import { backends, createPgDatabase } from '../support/backends.js';

const ROOT = join(import.meta.dirname, '../..');

/** The model of the log store before batches, as `svc generate` emitted it (per provider). */
const OLD_MODEL = (pg: boolean) => `model SvcLogEntry {
  id           String @id
  time         DateTime${pg ? ' @db.Timestamptz(3)' : ''}
  instance     String
  kind         String
  reqId        String?
  method       String?
  path         String?${pg ? ' @db.Text' : ''}
  status       Int?
  durationMs   Float?
  identityId   String?
  identityKind String?
  severity     Int?
  source       String?
  message      String?${pg ? ' @db.Text' : ''}
  @@index([time])
  @@index([reqId])
  @@map("_svc_logs")
}`;

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

describe.each(backends())('upgrading the log store on %s', (backend) => {
  it('carries every entry stored before the upgrade into batches, read back through the view and the search', async () => {
    const pg = backend === 'postgresql';
    const dir = mkdtempSync(join(tmpdir(), 'svc-log-upgrade-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    let url = `file:${join(dir, 'app.db')}`;
    if (pg) {
      const made = await createPgDatabase('svc_log_upgrade');
      cleanups.push(made.drop);
      url = made.url;
    }
    const now = readFileSync(join(ROOT, 'test/golden', pg ? 'shop-postgresql' : 'shop', 'schema.prisma'), 'utf8');
    const before = now.replace(/^model SvcLogBatch \{[^}]*\}/m, OLD_MODEL(pg));
    expect(before).not.toBe(now);
    const provider = backend;
    const migrations = join(dir, 'migrations');
    const write = (name: string, text: string) => {
      mkdirSync(join(migrations, name), { recursive: true });
      writeFileSync(join(migrations, name, 'migration.sql'), text);
    };
    write('20260101000000_init', await migrationSql({ provider, url, previous: null, schema: before, diffDatamodels }));
    writeFileSync(join(migrations, 'migration_lock.toml'), `provider = "${provider}"\n`);
    await applyMigrationsSafely({ provider, url, migrationsDir: migrations });

    let db = await openDatabase(provider, url);
    /** Applies one more migration as `svc migrate` then `svc serve` would: the engine migrates a SQLite file nobody else holds open, then the store is prepared. */
    const migrate = async (name: string, text: string) => {
      write(name, text);
      await db.close();
      expect((await applyMigrationsSafely({ provider, url, migrationsDir: migrations })).applied).toEqual([name]);
      db = await openDatabase(provider, url);
      expect(await prepareLogStore(db)).toBe(true);
    };
    try {
      const stamp = (iso: string) => (pg ? iso : iso.replace('Z', '+00:00'));
      const rows = [
        [
          '0190aaaa-0000-7000-8000-000000000001',
          stamp('2026-11-27T10:00:00.123Z'),
          'i1',
          'request',
          'rq-1',
          'GET',
          '/api/Order?x=1',
          200,
          3.5,
          'u-1',
          'user',
          null,
          null,
          null,
        ],
        [
          '0190aaaa-0000-7000-8000-000000000002',
          stamp('2026-11-27T10:00:01.000Z'),
          'i2',
          'client',
          'rq-2',
          null,
          null,
          null,
          null,
          null,
          null,
          2,
          null,
          'quote " backslash \\ and ø',
        ],
        [
          '0190aaaa-0000-7000-8000-000000000003',
          stamp('2026-11-27T10:00:02.500Z'),
          'i1',
          'function',
          'rq-3',
          null,
          null,
          null,
          null,
          null,
          null,
          3,
          'tasks',
          'line\nbreak',
        ],
      ] as const;
      for (const r of rows) {
        await db.query(
          sql`INSERT INTO "_svc_logs" ("id", "time", "instance", "kind", "reqId", "method", "path", "status", "durationMs", "identityId", "identityKind", "severity", "source", "message")
            VALUES (${r[0]}, ${raw(pg ? `'${r[1]}'::timestamptz` : `'${r[1]}'`)}, ${r[2]}, ${r[3]}, ${r[4]}, ${r[5]}, ${r[6]}, ${r[7]}, ${r[8]}, ${r[9]}, ${r[10]}, ${r[11]}, ${r[12]}, ${r[13]})`,
        );
      }
      const upgrade = await migrationSql({ provider, url, previous: before, schema: now, diffDatamodels });
      expect(upgrade).toContain('Carry the log store over');
      await migrate('20260102000000_log_batches', upgrade);

      const got = await db.query<Record<string, unknown>>(sql`SELECT * FROM "_svc_logs" ORDER BY "id"`);
      expect(
        got.map((g) => [
          g.id,
          new Date(String(g.time instanceof Date ? g.time.toISOString() : g.time)).toISOString(),
          g.instance,
          g.kind,
          g.reqId,
          g.method,
          g.path,
          g.status === null ? null : Number(g.status),
          g.durationMs === null ? null : Number(g.durationMs),
          g.identityId,
          g.identityKind,
          g.severity === null ? null : Number(g.severity),
          g.source,
          g.message,
        ]),
      ).toEqual(rows.map((r) => [r[0], new Date(r[1]).toISOString(), ...r.slice(2)]));
      const found = await newestEntries(db, { where: [sql`"reqId" = ${'rq-2'}`], batches: [], holds: ['rq-2'], limit: 10 });
      expect(found.map((f) => f.message)).toEqual(['quote " backslash \\ and ø']);

      // A later change of the batch table (a column's type on PostgreSQL, which a view reading it
      // blocks; a table redefinition on SQLite, whose rename a view of a missing table blocks).
      const later = now.replace(/^(\s+firstId\s+)String$/m, `$1String?${pg ? ' @db.VarChar(200)' : ''}`);
      expect(later).not.toBe(now);
      const change = await migrationSql({ provider, url, previous: now, schema: later, diffDatamodels });
      expect(change).toContain('DROP VIEW IF EXISTS "_svc_logs"');
      await migrate('20260103000000_log_batches_change', change);
      expect(await db.query(sql`SELECT "id" FROM "_svc_logs" ORDER BY "id"`)).toEqual(rows.map((r) => ({ id: r[0] })));
    } finally {
      await db.close();
    }
  });
});
