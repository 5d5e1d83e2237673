/**
 * @module Fixture for the filter-compiler suites (SPEC §4.3): a two-collection model (Customer with
 * a self lookup, Order with a lookup to Customer) and the same rows stored the way Prisma stores
 * them in an in-memory SQLite database (with svc's SQL functions registered) and in a fresh
 * PostgreSQL database whose default collation is locale-aware (ICU en-US), so that byte order
 * and case rules never come from the database's locale.
 */
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AppManifest, Collection, Property } from '../../dist/runtime/manifest.js';
import { registerSqliteFunctions } from '../../dist/runtime/data/sqlite-functions.js';
import { compileFilter, type FilterScope } from '../../dist/runtime/query/filter-compile.js';
import { parseFilter } from '../../dist/runtime/query/filter-parser.js';
import { ident, renderSql, sql } from '../../dist/runtime/query/sql.js';
import { PG_ADMIN_URL } from './backends.js';

const prop = (name: string, type: Property['type'], collection?: string): Property => ({ name, type, required: false, ...(collection ? { collection } : {}) });
const coll = (name: string, properties: Property[]): Collection => ({ name, properties, search: false, access: [], policies: [], children: [] });

export const customer = coll('Customer', [
  prop('name', 'string'),
  prop('age', 'integer'),
  prop('vip', 'boolean'),
  prop('since', 'date'),
  prop('credit', 'decimal'),
  prop('referrer', 'lookup', 'Customer'),
  prop('photo', 'blob'),
]);
export const order = coll('Order', [prop('title', 'string'), prop('note', 'text'), prop('placedAt', 'date-time'), prop('customer', 'lookup', 'Customer')]);
export const manifest = { manifestVersion: 1, name: 'shop', provider: 'sqlite', collections: [customer, order] } as unknown as AppManifest;

/** A filter scope on alias `t0`; `extra` sets `now` and `callerId`. */
export const scope = (collection: Collection, provider: FilterScope['provider'] = 'sqlite', extra: Partial<FilterScope> = {}): FilterScope => ({
  manifest,
  collection,
  provider,
  alias: 't0',
  ...extra,
});

/** Row ids encode short row names (`o3`, at most 6 bytes), so ids sort like names and map back. */
export const uid = (name: string) => `00000000-0000-7000-8000-${Buffer.from(name).toString('hex').padStart(12, '0')}`;
export const nameOf = (id: string) => Buffer.from(id.slice(24).replace(/^0+/, ''), 'hex').toString();

/** A row by column; `id` and lookups hold row names (`c1`), dates ISO strings. */
export type Row = Record<string, string | number | boolean | null>;

const LOOKUPS = new Set(['id', 'referrer', 'customer']);
const DATE_COLUMNS = new Set(['since', 'placedAt', 'createdAt']);
const COLUMNS = {
  Customer: ['id', 'name', 'age', 'vip', 'since', 'credit', 'referrer', 'createdAt', 'createdBy'],
  Order: ['id', 'title', 'note', 'placedAt', 'customer', 'createdAt', 'createdBy'],
};

/** Column values as each database stores them (what Prisma writes). */
function sqliteValue(key: string, v: Row[string]): unknown {
  if (v === null) return null;
  if (LOOKUPS.has(key)) return uid(v as string);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (DATE_COLUMNS.has(key)) return new Date(v as string).toISOString().replace('Z', '+00:00');
  return v;
}
const pgValue = (key: string, v: Row[string]) => (v !== null && LOOKUPS.has(key) ? uid(v as string) : v);
/** Bound values as Prisma's raw query layer maps them. */
const sqliteParam = (v: unknown) => (v instanceof Date ? v.toISOString().replace('Z', '+00:00') : typeof v === 'boolean' ? (v ? 1 : 0) : v);
const pgParam = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

const insert = (table: string, columns: string[], marks: string[]) =>
  `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${marks.join(', ')})`;

/** The statement the suites run: ids of matching rows, ordered. */
export function statement(collection: Collection, given: string, provider: FilterScope['provider'], extra: Partial<FilterScope> = {}) {
  const where = compileFilter(parseFilter(given), scope(collection, provider, extra));
  return renderSql(sql`SELECT ${ident('t0', 'id')} AS "id" FROM ${ident(collection.name)} AS "t0" WHERE ${where} ORDER BY "t0"."id"`, provider);
}

export interface FilterDatabases {
  /** Row names matching `given` on each database, ordered by id. Compile errors are thrown. */
  names(collection: Collection, given: string, extra?: Partial<FilterScope>): Promise<{ sqlite: string[]; postgresql: string[] }>;
  close(): Promise<void>;
}

/** Creates both databases and stores `customers` and `orders` in them. */
export async function openFilterDatabases(customers: Row[], orders: Row[]): Promise<FilterDatabases> {
  const sqlite = new Database(':memory:');
  registerSqliteFunctions(sqlite);
  const dbName = `svc_fc_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${dbName}`;
  const client = new pg.Client({ connectionString: url.toString() });
  const data = [
    ['Customer', COLUMNS.Customer, customers],
    ['Order', COLUMNS.Order, orders],
  ] as const;

  const system = '"createdAt" TIMESTAMP(3), "updatedAt" TIMESTAMP(3), "createdBy" TEXT';
  const liteSystem = system.replaceAll('TIMESTAMP(3)', 'DATETIME');
  sqlite.exec(`CREATE TABLE "Customer" ("id" TEXT PRIMARY KEY, "name" TEXT, "age" INTEGER, "vip" BOOLEAN, "since" DATETIME,
    "credit" DECIMAL, "referrer" TEXT, "photo" BLOB, ${liteSystem});
    CREATE TABLE "Order" ("id" TEXT PRIMARY KEY, "title" TEXT, "note" TEXT, "placedAt" DATETIME, "customer" TEXT, ${liteSystem});`);
  for (const [table, columns, rows] of data) {
    const stmt = sqlite.prepare(
      insert(
        table,
        columns,
        columns.map(() => '?'),
      ),
    );
    for (const row of rows) stmt.run(...columns.map((c) => sqliteValue(c, row[c] ?? null)));
  }
  await admin.connect();
  await admin
    .query(`CREATE DATABASE "${dbName}" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`)
    .catch(() => admin.query(`CREATE DATABASE "${dbName}"`));
  await client.connect();
  await client.query(`CREATE TABLE "Customer" ("id" UUID PRIMARY KEY, "name" TEXT, "age" INTEGER, "vip" BOOLEAN, "since" DATE,
    "credit" NUMERIC(65,30), "referrer" UUID REFERENCES "Customer"("id"), "photo" BYTEA, ${system});
    CREATE TABLE "Order" ("id" UUID PRIMARY KEY, "title" TEXT, "note" TEXT, "placedAt" TIMESTAMP(3),
    "customer" UUID REFERENCES "Customer"("id"), ${system});`);
  for (const [table, columns, rows] of data) {
    // Customers refer to customers: insert without referrers first, then set them.
    for (const row of rows) {
      const values = columns.map((c) => (c === 'referrer' ? null : pgValue(c, row[c] ?? null)));
      await client.query(
        insert(
          table,
          columns,
          columns.map((_, i) => `$${i + 1}`),
        ),
        values,
      );
    }
    if (table === 'Customer') {
      for (const row of rows.filter((r) => r.referrer)) {
        await client.query('UPDATE "Customer" SET "referrer" = $1 WHERE "id" = $2', [uid(row.referrer as string), uid(row.id as string)]);
      }
    }
  }

  return {
    async names(collection, given, extra = {}) {
      const lite = statement(collection, given, 'sqlite', extra);
      const liteRows = sqlite.prepare(lite.text).all(...lite.values.map(sqliteParam)) as { id: string }[];
      const post = statement(collection, given, 'postgresql', extra);
      const postRows = (await client.query(post.text, post.values.map(pgParam))).rows as { id: string }[];
      return { sqlite: liteRows.map((r) => nameOf(r.id)), postgresql: postRows.map((r) => nameOf(r.id)) };
    },
    async close() {
      sqlite.close();
      await client.end().catch(() => undefined);
      await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      await admin.end();
    },
  };
}
