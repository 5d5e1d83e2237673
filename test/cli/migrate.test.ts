/**
 * Migrations that cannot strand a database (issue 21 §5), through the real CLI on SQLite and
 * PostgreSQL: a migration that fails is rolled back whole and stays pending, `svc migrate --status`
 * tells applied, pending and failed apart, a database an older run left with a failed record is
 * refused with the way out (`--resolve`), and on SQLite a server holding the file is named in one line.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import pg from 'pg';
import { applyMigrations } from '../../dist/runtime/index.js';
import { backends, createPgDatabase, type Backend } from '../support/backends.js';
import { ROOT, runCli, serve } from '../support/cli.js';

const work = mkdtempSync(join(tmpdir(), 'svc-migrate-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The tables of the database at `url`. */
async function tables(backend: Backend, url: string): Promise<string[]> {
  if (backend === 'sqlite') {
    const db = new Sqlite(url.replace(/^file:/, ''), { readonly: true });
    try {
      return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.name);
  } finally {
    await c.end();
  }
}

describe.each(backends())('svc migrate on %s', (backend) => {
  it('rolls a failing migration back whole, keeps it pending, and applies it once fixed; --status tells the states apart', async () => {
    const dir = join(work, `rollback-${backend}`);
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), dir, { recursive: true });
    const pgdb = backend === 'postgresql' ? await createPgDatabase() : undefined;
    try {
      const env = { DATABASE_URL: pgdb ? pgdb.url : `file:${join(dir, 'data', 'app.db')}` };
      expect((await runCli(['generate', dir], env)).code).toBe(0);
      const init = await runCli(['migrate', dir], env);
      expect(init.code, init.stderr).toBe(0);
      const status = async () => JSON.parse((await runCli(['migrate', dir, '--status'], env)).stdout);
      expect((await status()).pending).toEqual([]);
      expect((await status()).applied).toHaveLength(1);

      // The first statement works, the second fails: nothing of it may stay.
      const broken = join(dir, 'migrations', backend, '29990101000000_broken');
      mkdirSync(broken);
      writeFileSync(join(broken, 'migration.sql'), 'CREATE TABLE "Half" ("id" TEXT);\nINSERT INTO "Nowhere" ("id") VALUES (\'x\');\n');
      const failed = await runCli(['migrate', dir], env);
      expect(failed.code).toBe(1);
      expect(failed.stderr.trim().split('\n')).toHaveLength(1);
      expect(failed.stderr).toContain('migration 29990101000000_broken failed and was rolled back');
      expect(await tables(backend, env.DATABASE_URL)).not.toContain('Half');
      expect(await status()).toMatchObject({ pending: ['29990101000000_broken'], failed: [] });

      writeFileSync(join(broken, 'migration.sql'), 'CREATE TABLE "Half" ("id" TEXT);\n');
      const fixed = await runCli(['migrate', dir], env);
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(fixed.stdout).toContain('applied 29990101000000_broken');
      expect(await tables(backend, env.DATABASE_URL)).toContain('Half');
      expect(await status()).toMatchObject({ pending: [], failed: [] });
    } finally {
      await pgdb?.drop();
    }
  }, 240_000);

  it('a failed record left by an older run is refused with the way out, and --resolve lets it apply again', async () => {
    const dir = join(work, `stranded-${backend}`);
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), dir, { recursive: true });
    const pgdb = backend === 'postgresql' ? await createPgDatabase() : undefined;
    try {
      const env = { DATABASE_URL: pgdb ? pgdb.url : `file:${join(dir, 'data', 'app.db')}` };
      expect((await runCli(['generate', dir], env)).code).toBe(0);
      expect((await runCli(['migrate', dir], env)).code).toBe(0);
      const broken = join(dir, 'migrations', backend, '29990101000000_broken');
      mkdirSync(broken);
      writeFileSync(join(broken, 'migration.sql'), 'INSERT INTO "Nowhere" ("id") VALUES (\'x\');\n');
      // What svc did before: the engine alone records the migration as failed.
      await expect(applyMigrations({ provider: backend, url: env.DATABASE_URL, migrationsDir: join(dir, 'migrations', backend) })).rejects.toThrow();
      expect(JSON.parse((await runCli(['migrate', dir, '--status'], env)).stdout)).toMatchObject({ failed: ['29990101000000_broken'], pending: [] });

      const refused = await runCli(['migrate', dir], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('run svc migrate --resolve 29990101000000_broken');
      const wrong = await runCli(['migrate', dir, '--resolve', 'nope'], env);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('"nope" is not a failed migration of this database (failed: 29990101000000_broken)');

      writeFileSync(join(broken, 'migration.sql'), 'CREATE TABLE "Whole" ("id" TEXT);\n');
      const resolved = await runCli(['migrate', dir, '--resolve', '29990101000000_broken'], env);
      expect(resolved.code, resolved.stderr).toBe(0);
      expect(JSON.parse(resolved.stdout)).toEqual({ resolved: '29990101000000_broken' });
      const applied = await runCli(['migrate', dir], env);
      expect(applied.code, applied.stderr).toBe(0);
      expect(await tables(backend, env.DATABASE_URL)).toContain('Whole');
    } finally {
      await pgdb?.drop();
    }
  }, 240_000);
});

describe('svc migrate beside a running server (SQLite)', () => {
  it('says in one line that a process holds the database file, and applies once it has stopped', async () => {
    const dir = join(work, 'busy');
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), dir, { recursive: true });
    expect((await runCli(['generate', dir])).code).toBe(0);
    const server = await serve(dir);
    try {
      const extra = join(dir, 'migrations', 'sqlite', '29990101000000_extra');
      mkdirSync(extra);
      writeFileSync(join(extra, 'migration.sql'), 'CREATE TABLE "Extra" ("id" TEXT);\n');
      const busy = await runCli(['migrate', dir]);
      expect(busy.code).toBe(1);
      expect(busy.stderr.trim().split('\n')).toHaveLength(1);
      expect(busy.stderr).toMatch(/database file .* is locked by another process \(a running svc serve\?\): stop it, then run svc migrate again/);
    } finally {
      await server.close();
    }
    const after = await runCli(['migrate', dir]);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain('applied 29990101000000_extra');
  }, 240_000);
});

describe('instances starting together (PostgreSQL)', () => {
  it('three overlapping svc migrate runs on a fresh database apply each migration once and none is left failed', async () => {
    const dir = join(work, 'together');
    cpSync(join(ROOT, 'test/fixtures/apps/catalog'), dir, { recursive: true });
    const pgdb = await createPgDatabase();
    try {
      const env = { DATABASE_URL: pgdb.url };
      // A second migration, so that a run arriving late has something to find applied.
      expect((await runCli(['generate', dir], env)).code).toBe(0);
      const second = join(dir, 'migrations', 'postgresql', '29990101000000_more');
      mkdirSync(second);
      // It takes a while, so the runs that start later find it in progress (started, not finished).
      writeFileSync(join(second, 'migration.sql'), 'CREATE TABLE "More" ("id" TEXT PRIMARY KEY);\nSELECT pg_sleep(3);\n');
      const later = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
      const runs = await Promise.all([0, 1500, 2500].map(async (ms) => (await later(ms), runCli(['migrate', dir], env))));
      for (const r of runs) expect(r.code, r.stderr).toBe(0);
      // Every migration was applied by exactly one of the runs ("svc: applied a, b"; the others: up to date).
      const applied = runs.flatMap((r) => /applied (.+)/.exec(r.stdout + r.stderr)?.[1].split(', ') ?? []);
      expect(applied.sort()).toEqual([expect.stringMatching(/_init$/), '29990101000000_more']);
      const status = JSON.parse((await runCli(['migrate', dir, '--status'], env)).stdout);
      expect(status).toMatchObject({ pending: [], failed: [] });
      expect(status.applied).toHaveLength(2);
    } finally {
      await pgdb.drop();
    }
  });
});
