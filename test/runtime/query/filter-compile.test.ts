import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { HttpError } from '../../../runtime/errors.js';
import type { AppManifest, Collection, Property } from '../../../runtime/manifest.js';
import { compileFilter, resolvePath, type FilterScope } from '../../../runtime/query/filter-compile.js';
import { parseFilter } from '../../../runtime/query/filter-parser.js';
import { ident, renderSql, sql } from '../../../runtime/query/sql.js';

const prop = (name: string, type: Property['type'], collection?: string): Property =>
  ({ name, type, required: false, ...(collection ? { collection } : {}) });
const coll = (name: string, properties: Property[]): Collection =>
  ({ name, properties, search: false, access: [], policies: [], children: [] });

const customer = coll('Customer', [
  prop('name', 'string'), prop('age', 'integer'), prop('vip', 'boolean'), prop('since', 'date'),
  prop('credit', 'decimal'), prop('referrer', 'lookup', 'Customer'), prop('photo', 'blob'),
]);
const order = coll('Order', [prop('title', 'string'), prop('placedAt', 'date-time'), prop('customer', 'lookup', 'Customer')]);
const manifest = { manifestVersion: 1, name: 'shop', provider: 'sqlite', collections: [customer, order] } as unknown as AppManifest;
const scope = (collection: Collection, provider: FilterScope['provider'] = 'sqlite'): FilterScope =>
  ({ manifest, collection, provider, alias: 't0' });

/** Row ids encode their names (`o3`), so ids sort like names and map back. */
const uid = (name: string) => `00000000-0000-7000-8000-${Buffer.from(name).toString('hex').padStart(12, '0')}`;
const nameOf = (id: string) => Buffer.from(id.slice(24).replace(/^0+/, ''), 'hex').toString();
const INJECTION = "x' OR 1=1 --";

type Row = Record<string, string | number | boolean | null>;
const customers: Row[] = [
  { id: 'c1', name: 'Alice', age: 30, vip: true, since: '2024-01-31', credit: 10.5, referrer: null, createdBy: 'u1' },
  { id: 'c2', name: 'alice', age: 25, vip: false, since: '2023-06-01', credit: 0.25, referrer: 'c1', createdBy: null },
  { id: 'c3', name: 'Bob 100%_\\x', age: null, vip: null, since: null, credit: null, referrer: 'c2', createdBy: 'u2' },
  { id: 'c4', name: null, age: 40, vip: true, since: '2024-02-29', credit: -3.5, referrer: 'c1', createdBy: 'u2' },
  { id: 'c5', name: 'A_c', age: 18, vip: false, since: '2020-01-01', credit: 12, referrer: null, createdBy: 'u2' },
].map((r, i) => ({ ...r, createdAt: `2024-01-01T00:00:0${i + 1}.000Z` }));
const orders: Row[] = [
  { id: 'o1', title: 'Red Apple', placedAt: '2024-01-31T10:00:00.000Z', customer: 'c1' },
  { id: 'o2', title: 'red apple pie', placedAt: '2024-02-01T00:00:00.000Z', customer: 'c2' },
  { id: 'o3', title: '100% sure', placedAt: '2023-12-31T23:59:59.999Z', customer: 'c3' },
  { id: 'o4', title: null, placedAt: null, customer: null },
  { id: 'o5', title: 'a_b', placedAt: '2024-01-31T10:00:00.001Z', customer: 'c4' },
  { id: 'o6', title: INJECTION, placedAt: '2024-03-01T12:00:00.000Z', customer: 'c5' },
  { id: 'o7', title: 'aXb', placedAt: '2024-01-01T00:00:00.000Z', customer: 'c5' },
  { id: 'o8', title: 'Apple', placedAt: '2024-01-15T00:00:00.000Z', customer: null },
];
const ALL_ORDERS = orders.map((o) => o.id as string);
const except = (...ids: string[]) => ALL_ORDERS.filter((id) => !ids.includes(id));

const cases: [string, { collection: Collection; given: string; want: string[] }][] = [
  ['eq string', { collection: order, given: 'title eq "Red Apple"', want: ['o1'] }],
  ['ne matches nulls', { collection: order, given: 'title ne "Red Apple"', want: except('o1') }],
  ['con is case-sensitive', { collection: order, given: 'title con "Apple"', want: ['o1', 'o8'] }],
  ['con lower case', { collection: order, given: 'title con "pple"', want: ['o1', 'o2', 'o8'] }],
  ['ncon matches nulls', { collection: order, given: 'title ncon "Apple"', want: except('o1', 'o8') }],
  ['sw is case-sensitive', { collection: order, given: 'title sw "red"', want: ['o2'] }],
  ['sw upper case', { collection: order, given: 'title sw "Red"', want: ['o1'] }],
  ['ew is case-sensitive', { collection: order, given: 'title ew "Apple" or title ew "apple"', want: ['o1', 'o8'] }],
  ['% is literal', { collection: order, given: 'title con "%"', want: ['o3'] }],
  ['_ is literal', { collection: order, given: 'title con "a_b"', want: ['o5'] }],
  ['sw with %', { collection: order, given: 'title sw "100%"', want: ['o3'] }],
  ['ew with _', { collection: order, given: 'title ew "_b"', want: ['o5'] }],
  ['backslash is literal', { collection: customer, given: String.raw`name con "%_\\x"`, want: ['c3'] }],
  ['empty string con/sw/ew', { collection: order, given: 'title con "" and title sw "" and title ew ""', want: except('o4') }],
  ['empty string ncon', { collection: order, given: 'title ncon ""', want: ['o4'] }],
  ['eq null', { collection: order, given: 'title eq null', want: ['o4'] }],
  ['ne null', { collection: order, given: 'title NE NULL', want: except('o4') }],
  ['string order is byte order', { collection: order, given: 'title gt "a"', want: ['o2', 'o5', 'o6', 'o7'] }],
  ['date-time gt', { collection: order, given: 'placedAt gt "2024-01-31T10:00:00Z"', want: ['o2', 'o5', 'o6'] }],
  ['date-time ge', { collection: order, given: 'placedAt ge "2024-01-31T10:00:00Z"', want: ['o1', 'o2', 'o5', 'o6'] }],
  ['date-time lt a bare date', { collection: order, given: 'placedAt lt "2024-01-01"', want: ['o3'] }],
  ['date-time with offset', { collection: order, given: 'placedAt eq "2024-01-31T12:00:00+02:00"', want: ['o1'] }],
  ['lookup eq id', { collection: order, given: `customer eq "${uid('c1')}"`, want: ['o1'] }],
  ['lookup.id eq upper-case id', { collection: order, given: `customer.id eq "${uid('c1').toUpperCase()}"`, want: ['o1'] }],
  ['lookup ne id matches no lookup', { collection: order, given: `customer ne "${uid('c1')}"`, want: except('o1') }],
  ['dot path sw', { collection: order, given: 'customer.name sw "A"', want: ['o1', 'o6', 'o7'] }],
  ['dot path ne matches null lookups', { collection: order, given: 'customer.name ne "Alice"', want: except('o1') }],
  ['dot path eq null', { collection: order, given: 'customer.name eq null', want: ['o4', 'o5', 'o8'] }],
  ['dot path ne null', { collection: order, given: 'customer.name ne null', want: ['o1', 'o2', 'o3', 'o6', 'o7'] }],
  ['dot path integer', { collection: order, given: 'customer.age ge 30', want: ['o1', 'o5'] }],
  ['dot path boolean true', { collection: order, given: 'customer.vip eq true', want: ['o1', 'o5'] }],
  ['dot path boolean false', { collection: order, given: 'customer.vip eq FALSE', want: ['o2', 'o6', 'o7'] }],
  ['dot path boolean ne', { collection: order, given: 'customer.vip ne true', want: ['o2', 'o3', 'o4', 'o6', 'o7', 'o8'] }],
  ['two-level dot path', { collection: order, given: 'customer.referrer.name eq "Alice"', want: ['o2', 'o5'] }],
  ['two-level ncon', { collection: order, given: 'customer.referrer.name ncon "lic"', want: ['o1', 'o4', 'o6', 'o7', 'o8'] }],
  ['precedence and parentheses', {
    collection: order, given: '(title sw "red" or title sw "Red") and customer.age lt 30', want: ['o2'],
  }],
  ['and binds tighter than or', { collection: order, given: 'title eq "Apple" or title sw "r" and customer.age eq 25', want: ['o2', 'o8'] }],
  ['injection text is a value', { collection: order, given: `title eq "${INJECTION}"`, want: ['o6'] }],
  ['date eq', { collection: customer, given: 'since eq "2024-01-31"', want: ['c1'] }],
  ['date gt', { collection: customer, given: 'since gt "2024-01-31"', want: ['c4'] }],
  ['date le', { collection: customer, given: 'since le "2023-06-01"', want: ['c2', 'c5'] }],
  ['decimal gt', { collection: customer, given: 'credit gt 0.25', want: ['c1', 'c5'] }],
  ['decimal negative', { collection: customer, given: 'credit lt 0 or credit eq 12', want: ['c4', 'c5'] }],
  ['integer eq null', { collection: customer, given: 'age eq null', want: ['c3'] }],
  ['integer ne matches nulls', { collection: customer, given: 'age ne 30', want: ['c2', 'c3', 'c4', 'c5'] }],
  ['createdBy ne matches nulls', { collection: customer, given: 'createdBy ne "u2"', want: ['c1', 'c2'] }],
  ['id eq', { collection: customer, given: `id eq "${uid('c2')}"`, want: ['c2'] }],
  ['createdAt gt', { collection: customer, given: 'createdAt gt "2024-01-01T00:00:02Z"', want: ['c3', 'c4', 'c5'] }],
  ['self lookup', { collection: customer, given: 'referrer.name eq "Alice" and age gt 30', want: ['c4'] }],
];

/** The statement the tests run: ids of matching rows, ordered. */
function statement(collection: Collection, given: string, provider: FilterScope['provider']) {
  const where = compileFilter(parseFilter(given), scope(collection, provider));
  return renderSql(sql`SELECT ${ident('t0', 'id')} AS "id" FROM ${ident(collection.name)} AS "t0" WHERE ${where} ORDER BY "t0"."id"`, provider);
}

/** Column values as each database stores them (what Prisma writes). */
const DATE_COLUMNS = new Set(['since', 'placedAt', 'createdAt']);
function sqliteValue(key: string, v: Row[string]): unknown {
  if (v === null) return null;
  if (key === 'id' || key === 'referrer' || key === 'customer') return uid(v as string);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (DATE_COLUMNS.has(key)) return new Date(v as string).toISOString().replace('Z', '+00:00');
  return v;
}
const pgValue = (key: string, v: Row[string]) => (v !== null && ['id', 'referrer', 'customer'].includes(key) ? uid(v as string) : v);
/** Bound values as Prisma's raw query layer maps them. */
const sqliteParam = (v: unknown) => v instanceof Date ? v.toISOString().replace('Z', '+00:00') : typeof v === 'boolean' ? (v ? 1 : 0) : v;
const pgParam = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

const CUSTOMER_COLUMNS = ['id', 'name', 'age', 'vip', 'since', 'credit', 'referrer', 'createdAt', 'createdBy'];
const ORDER_COLUMNS = ['id', 'title', 'placedAt', 'customer'];
const insert = (table: string, columns: string[], marks: string[]) =>
  `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${marks.join(', ')})`;

describe('compileFilter on SQLite and PostgreSQL', () => {
  const sqlite = new Database(':memory:');
  const dbName = `svc_fc_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'root', database: 'postgres' });
  const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'root', database: dbName });

  beforeAll(async () => {
    const system = '"createdAt" TIMESTAMP(3), "updatedAt" TIMESTAMP(3), "createdBy" TEXT';
    sqlite.exec(`CREATE TABLE "Customer" ("id" TEXT PRIMARY KEY, "name" TEXT, "age" INTEGER, "vip" BOOLEAN, "since" DATETIME,
      "credit" DECIMAL, "referrer" TEXT, "photo" BLOB, ${system.replaceAll('TIMESTAMP(3)', 'DATETIME')});
      CREATE TABLE "Order" ("id" TEXT PRIMARY KEY, "title" TEXT, "placedAt" DATETIME, "customer" TEXT, ${system.replaceAll('TIMESTAMP(3)', 'DATETIME')});`);
    for (const [table, columns, rows] of [['Customer', CUSTOMER_COLUMNS, customers], ['Order', ORDER_COLUMNS, orders]] as const) {
      const stmt = sqlite.prepare(insert(table, columns, columns.map(() => '?')));
      for (const row of rows) stmt.run(...columns.map((c) => sqliteValue(c, row[c] ?? null)));
    }
    await admin.connect();
    // A locale-aware default collation (ICU en-US) proves string order does not depend on it.
    await admin.query(`CREATE DATABASE "${dbName}" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`)
      .catch(() => admin.query(`CREATE DATABASE "${dbName}"`));
    await client.connect();
    await client.query(`CREATE TABLE "Customer" ("id" UUID PRIMARY KEY, "name" TEXT, "age" INTEGER, "vip" BOOLEAN, "since" DATE,
      "credit" NUMERIC(65,30), "referrer" UUID REFERENCES "Customer"("id"), "photo" BYTEA, ${system});
      CREATE TABLE "Order" ("id" UUID PRIMARY KEY, "title" TEXT, "placedAt" TIMESTAMP(3), "customer" UUID REFERENCES "Customer"("id"), ${system});`);
    for (const [table, columns, rows] of [['Customer', CUSTOMER_COLUMNS, customers], ['Order', ORDER_COLUMNS, orders]] as const) {
      for (const row of rows) {
        await client.query(insert(table, columns, columns.map((_, i) => `$${i + 1}`)), columns.map((c) => pgValue(c, row[c] ?? null)));
      }
    }
  });

  afterAll(async () => {
    sqlite.close();
    await client.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
  });

  it.each(cases)('%s', async (_title, { collection, given, want }) => {
    const lite = statement(collection, given, 'sqlite');
    const liteRows = sqlite.prepare(lite.text).all(...lite.values.map(sqliteParam)) as { id: string }[];
    const post = statement(collection, given, 'postgresql');
    const postRows = (await client.query(post.text, post.values.map(pgParam))).rows as { id: string }[];
    expect(liteRows.map((r) => nameOf(r.id))).toEqual(want);
    expect(postRows.map((r) => nameOf(r.id))).toEqual(want);
  });

  it('binds values instead of splicing them into the text', () => {
    for (const provider of ['sqlite', 'postgresql'] as const) {
      const where = compileFilter(parseFilter(`title eq "${INJECTION}" or customer.name con "${INJECTION}"`), scope(order, provider));
      expect(where.text).not.toContain('1=1');
      expect(where.values).toEqual([INJECTION, INJECTION]);
    }
  });
});

describe('compileFilter SQL shape', () => {
  it('nests lookups with fresh aliases and parenthesises binary nodes', () => {
    const where = compileFilter(parseFilter('title eq "a" or customer.referrer.name ne "b" and customer.age gt 1'), scope(order));
    expect(where.text).toBe('("t0"."title" = ? OR (("t0"."customer" IS NULL OR "t0"."customer" IN (SELECT "t0_f1"."id" FROM "Customer" AS "t0_f1"'
      + ' WHERE ("t0_f1"."referrer" IS NULL OR "t0_f1"."referrer" IN (SELECT "t0_f2"."id" FROM "Customer" AS "t0_f2" WHERE'
      + ' ("t0_f2"."name" <> ? OR "t0_f2"."name" IS NULL))))) AND "t0"."customer" IN (SELECT "t0_f3"."id" FROM "Customer" AS "t0_f3"'
      + ' WHERE "t0_f3"."age" > ?)))');
    expect(where.values).toEqual(['a', 'b', 1]);
  });

  it('binds dates at UTC midnight and lower-cases UUIDs', () => {
    expect(compileFilter(parseFilter('since eq "2024-02-29"'), scope(customer)).values).toEqual([new Date('2024-02-29T00:00:00Z')]);
    const id = uid('c1');
    expect(compileFilter(parseFilter(`id eq "${id.toUpperCase()}"`), scope(customer)).values).toEqual([id]);
  });

  it('resolvePath reports types of properties, system fields and lookups', () => {
    expect(resolvePath(scope(order), ['customer', 'since'])).toMatchObject({ column: 'since', type: 'date', collection: customer });
    expect(resolvePath(scope(order), ['customer', 'id'])).toMatchObject({ column: 'customer', type: 'lookup', hops: [] });
    expect(resolvePath(scope(order), ['createdBy'])).toMatchObject({ column: 'createdBy', type: 'string' });
  });

  const invalid: [string, { collection: Collection; given: string; want: RegExp }][] = [
    ['unknown property', { collection: order, given: 'colour eq "red"', want: /unknown property "colour" on Order at position 1/ }],
    ['unknown property behind a lookup', { collection: order, given: 'customer.colour eq "red"', want: /unknown property "colour" on Customer/ }],
    ['dot path through a non-lookup', { collection: order, given: 'title.x eq "red"', want: /unknown property "title.x" on Order/ }],
    ['prototype names are unknown', { collection: order, given: 'constructor eq "x"', want: /unknown property "constructor"/ }],
    ['string for an integer', { collection: customer, given: 'age eq "12"', want: /property "age" \(integer\) expects an integer/ }],
    ['fraction for an integer', { collection: customer, given: 'age eq 1.5', want: /property "age" .* found 1.5/ }],
    ['integer out of range', { collection: customer, given: 'age lt 3000000000', want: /property "age"/ }],
    ['number for a boolean', { collection: customer, given: 'vip eq 1', want: /property "vip" \(boolean\) expects true or false/ }],
    ['number for a string', { collection: order, given: 'title eq 1', want: /property "title" \(string\) expects a string/ }],
    ['malformed date', { collection: customer, given: 'since eq "2024-1-31"', want: /property "since" \(date\) expects a date/ }],
    ['impossible date', { collection: customer, given: 'since eq "2023-02-29"', want: /property "since"/ }],
    ['date-time for a date', { collection: customer, given: 'since eq "2024-01-31T00:00:00Z"', want: /property "since"/ }],
    ['malformed date-time', { collection: order, given: 'placedAt gt "yesterday"', want: /property "placedAt" \(date-time\)/ }],
    ['bad hour', { collection: order, given: 'placedAt gt "2024-01-01T24:00:00Z"', want: /property "placedAt"/ }],
    ['bad UUID', { collection: order, given: 'customer eq "42"', want: /property "customer" \(lookup\) expects a UUID/ }],
    ['con on an integer', { collection: customer, given: 'age con "1"', want: /operator con needs a string or text property; "age" is integer/ }],
    ['sw on a lookup', { collection: order, given: 'customer sw "0"', want: /operator sw needs a string/ }],
    ['gt null', { collection: order, given: 'title gt null', want: /null can only be compared with eq or ne/ }],
    ['con null', { collection: order, given: 'title con null', want: /null can only be compared with eq or ne/ }],
    ['order on a boolean', { collection: customer, given: 'vip gt false', want: /cannot compare boolean property "vip"/ }],
    ['blob', { collection: customer, given: 'photo eq null', want: /property "photo" is a blob/ }],
    ['case-insensitive not yet', { collection: order, given: 'title eq~ "x"', want: /not supported yet at position 1/ }],
  ];

  it.each(invalid)('rejects %s with 400 INVALID_FILTER', (_title, { collection, given, want }) => {
    let error: unknown;
    try {
      compileFilter(parseFilter(given), scope(collection));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect((error as HttpError).code).toBe('INVALID_FILTER');
    expect((error as HttpError).message).toMatch(want);
  });
});
