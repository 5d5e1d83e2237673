import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { applyMigrations, diffDatamodels, migrationLockToml, type DatabaseProvider } from '../../dist/runtime/data/schema-engine.js';

const PG_ADMIN = 'postgres://root@127.0.0.1:5432/postgres';

/** The sample two-model schema; `withNote` adds a column (with a `;` in its default); PG gets native types. */
function schema(provider: DatabaseProvider, withNote = false): string {
  const pgOnly = (attr: string) => (provider === 'postgresql' ? ` ${attr}` : '');
  return `generator client {
  provider = "prisma-client"
  output   = "./client"
}
datasource db {
  provider = "${provider}"
}
model Customer {
  id        String   @id${pgOnly('@db.Uuid')}
  createdAt DateTime @default(now())
  updatedAt DateTime @updatedAt
  createdBy String?
  name      String
  total     Decimal?${pgOnly('@db.Decimal(65, 30)')}
${withNote ? '  note      String?  @default("a;b")\n' : ''}  orders    Order[]  @relation("Order_customer")
}
model Order {
  id            String    @id${pgOnly('@db.Uuid')}
  createdAt     DateTime  @default(now())
  updatedAt     DateTime  @updatedAt
  createdBy     String?
  title         String
  customer      String?${pgOnly('@db.Uuid')}
  customer__ref Customer? @relation("Order_customer", fields: [customer], references: [id], onDelete: SetNull)
  @@index([customer])
}
`;
}

interface Target {
  url: string;
  tables(): Promise<string[]>;
  migrationRows(): Promise<{ migration_name: string; finished_at: unknown }[]>;
  columns(table: string): Promise<string[]>;
}

async function sqliteTarget(dir: string): Promise<Target> {
  const file = path.join(dir, 'nested', 'data', 'app.db'); // parent folder does not exist yet
  const query = <T>(sql: string): T[] => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  return {
    url: `file:${file}`,
    tables: async () => query<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`).map((r) => r.name),
    migrationRows: async () => query(`SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name`),
    columns: async (t) => query<{ name: string }>(`PRAGMA table_info("${t}")`).map((r) => r.name),
  };
}

async function pgTarget(dbName: string): Promise<Target> {
  const url = `postgres://root@127.0.0.1:5432/${dbName}`;
  const query = async <T>(sql: string): Promise<T[]> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  };
  return {
    url,
    tables: async () =>
      (await query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)).map((r) => r.table_name),
    migrationRows: async () => query(`SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name`),
    columns: async (t) =>
      (await query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = '${t}'`)).map((r) => r.column_name),
  };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe.each<DatabaseProvider>(['sqlite', 'postgresql'])('schema engine on %s', (provider) => {
  let dir: string;
  let target: Target;
  const dbName = `svc_se_${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'svc-se-'));
    if (provider === 'postgresql') {
      await admin(`CREATE DATABASE "${dbName}"`);
      target = await pgTarget(dbName);
    } else {
      target = await sqliteTarget(dir);
    }
  });

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (provider === 'postgresql') await admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  });

  const diff = (from: string | null, to: string) => diffDatamodels({ provider, url: target.url, from, to });
  const migrationsDir = () => path.join(dir, 'migrations');
  const writeMigration = (name: string, sql: string) => {
    mkdirSync(path.join(migrationsDir(), name), { recursive: true });
    writeFileSync(path.join(migrationsDir(), name, 'migration.sql'), sql);
  };

  it('diffs from empty to the schema: both tables, the FK and the index', async () => {
    const sql = await diff(null, schema(provider));
    expect(sql).toMatch(/CREATE TABLE "Customer"/);
    expect(sql).toMatch(/CREATE TABLE "Order"/);
    expect(sql).toMatch(/FOREIGN KEY \("customer"\) REFERENCES "Customer"\s*\("id"\) ON DELETE SET NULL/);
    expect(sql).toMatch(/CREATE INDEX "Order_customer_idx" ON "Order"\("customer"\)/);
  });

  it('diffs an added column to an ALTER, and identical schemas to an empty string', async () => {
    expect(await diff(schema(provider), schema(provider, true))).toMatch(/ALTER TABLE "Customer" ADD COLUMN\s+"note" TEXT/);
    expect(await diff(schema(provider), schema(provider))).toBe('');
  });

  it('throws a one-line error for an invalid schema', async () => {
    const err = await diff(null, 'garbage').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^schema diff failed: .*Error validating/);
    expect((err as Error).message).not.toContain('\n');
  });

  it('applies a migrations folder once, recording it in _prisma_migrations', async () => {
    mkdirSync(migrationsDir(), { recursive: true });
    writeFileSync(path.join(migrationsDir(), 'migration_lock.toml'), migrationLockToml(provider));
    writeMigration('20240101000000_init', await diff(null, schema(provider)));
    writeMigration('20240102000000_add_note', await diff(schema(provider), schema(provider, true)));

    const first = await applyMigrations({ provider, url: target.url, migrationsDir: migrationsDir() });
    expect(first.applied).toEqual(['20240101000000_init', '20240102000000_add_note']);
    expect(await target.tables()).toEqual(expect.arrayContaining(['Customer', 'Order', '_prisma_migrations']));
    expect(await target.columns('Customer')).toContain('note');
    const rows = await target.migrationRows();
    expect(rows.map((r) => r.migration_name)).toEqual(first.applied);
    expect(rows.every((r) => r.finished_at != null)).toBe(true);

    expect(await applyMigrations({ provider, url: target.url, migrationsDir: migrationsDir() })).toEqual({ applied: [] });
  });

  it('names the failing migration in a one-line error', async () => {
    writeMigration('20240103000000_bad', 'CREATE TABLE "Partial" (id INTEGER);\nCREATE TABLE "Customer" (id INTEGER);');
    const err = await applyMigrations({ provider, url: target.url, migrationsDir: migrationsDir() }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^migration 20240103000000_bad failed: .*Customer/);
    expect((err as Error).message).not.toContain('\n');
    // PostgreSQL runs the script as one implicit transaction: nothing of it is left behind.
    if (provider === 'postgresql') expect(await target.tables()).not.toContain('Partial');
  });
});

it('migrationLockToml matches what Prisma writes', () => {
  expect(migrationLockToml('sqlite')).toBe(
    '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "sqlite"\n',
  );
});
