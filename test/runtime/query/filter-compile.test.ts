import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { HttpError } from '../../../dist/runtime/errors.js';
import type { Collection } from '../../../dist/runtime/manifest.js';
import { compileFilter, resolvePath } from '../../../dist/runtime/query/filter-compile.js';
import { parseFilter } from '../../../dist/runtime/query/filter-parser.js';
import { customer, openFilterDatabases, order, scope, uid, type FilterDatabases, type Row } from '../../support/filter-db.js';

const INJECTION = "x' OR 1=1 --";

const customers: Row[] = [
  { id: 'c1', name: 'Alice', age: 30, vip: true, since: '2024-01-31', credit: 10.5, referrer: null, createdBy: 'u1' },
  { id: 'c2', name: 'alice', age: 25, vip: false, since: '2023-06-01', credit: 0.25, referrer: 'c1', createdBy: null },
  { id: 'c3', name: 'Bob 100%_\\x', age: null, vip: null, since: null, credit: null, referrer: 'c2', createdBy: 'u2' },
  { id: 'c4', name: null, age: 40, vip: true, since: '2024-02-29', credit: -3.5, referrer: 'c1', createdBy: 'u2' },
  { id: 'c5', name: 'A_c', age: 18, vip: false, since: '2020-01-01', credit: 12, referrer: null, createdBy: 'u2' },
].map((r, i) => ({ ...r, createdAt: `2024-01-01T00:00:0${i + 1}.000Z` }));
const orders: Row[] = [
  { id: 'o1', title: 'Red Apple', note: 'ÆØÅ', placedAt: '2024-01-31T10:00:00.000Z', customer: 'c1', createdBy: 'User1' },
  { id: 'o2', title: 'red apple pie', note: 'æøå', placedAt: '2024-02-01T00:00:00.000Z', customer: 'c2', createdBy: 'user1' },
  { id: 'o3', title: '100% sure', note: 'ÄRGER im Büro', placedAt: '2023-12-31T23:59:59.999Z', customer: 'c3' },
  { id: 'o4', title: null, note: null, placedAt: null, customer: null },
  { id: 'o5', title: 'a_b', note: 'Ärger', placedAt: '2024-01-31T10:00:00.001Z', customer: 'c4' },
  { id: 'o6', title: INJECTION, note: 'ΟΔΟΣ Σ', placedAt: '2024-03-01T12:00:00.000Z', customer: 'c5' },
  { id: 'o7', title: 'aXb', note: 'Привет', placedAt: '2024-01-01T00:00:00.000Z', customer: 'c5' },
  { id: 'o8', title: 'Apple', note: 'İstanbul 100%_', placedAt: '2024-01-15T00:00:00.000Z', customer: null },
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
  [
    'precedence and parentheses',
    {
      collection: order,
      given: '(title sw "red" or title sw "Red") and customer.age lt 30',
      want: ['o2'],
    },
  ],
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
  // `~`: Unicode lower case on both sides (JS toLowerCase), byte order after lowering, same null rules.
  ['eq~', { collection: order, given: 'title eq~ "red apple"', want: ['o1'] }],
  ['ne~ matches nulls', { collection: order, given: 'title ne~ "RED APPLE"', want: except('o1') }],
  ['con~', { collection: order, given: 'title con~ "APPLE"', want: ['o1', 'o2', 'o8'] }],
  ['ncon~ matches nulls', { collection: order, given: 'title ncon~ "apple"', want: ['o3', 'o4', 'o5', 'o6', 'o7'] }],
  ['sw~', { collection: order, given: 'title SW~ "RED"', want: ['o1', 'o2'] }],
  ['ew~', { collection: order, given: 'title ew~ "APPLE"', want: ['o1', 'o8'] }],
  ['gt~ compares lower case byte-wise', { collection: order, given: 'title gt~ "b"', want: ['o1', 'o2', 'o6'] }],
  ['le~', { collection: order, given: 'title le~ "apple"', want: ['o3', 'o5', 'o8'] }],
  ['~ keeps % and _ literal', { collection: order, given: 'title con~ "A_B" or note ew~ "100%_"', want: ['o5', 'o8'] }],
  ['eq~ Danish', { collection: order, given: 'note eq~ "æøå"', want: ['o1', 'o2'] }],
  ['eq without ~ stays case-sensitive', { collection: order, given: 'note eq "æøå"', want: ['o2'] }],
  ['sw~ German', { collection: order, given: 'note sw~ "är"', want: ['o3', 'o5'] }],
  ['con~ German ß-free umlaut', { collection: order, given: 'note con~ "BÜRO"', want: ['o3'] }],
  ['eq~ Greek with final sigma', { collection: order, given: 'note eq~ "οδος σ"', want: ['o6'] }],
  ['con~ Cyrillic', { collection: order, given: 'note con~ "ПРИВ"', want: ['o7'] }],
  ['sw~ dotted capital I', { collection: order, given: 'note sw~ "İSTANBUL"', want: ['o8'] }],
  ['İ lower-cases to i + U+0307', { collection: order, given: 'note sw~ "istanbul"', want: [] }],
  ['ncon~ non-ASCII', { collection: order, given: 'note ncon~ "ä"', want: ['o1', 'o2', 'o4', 'o6', 'o7', 'o8'] }],
  ['gt~ non-ASCII is byte order', { collection: order, given: 'note gt~ "z"', want: ['o1', 'o2', 'o3', 'o5', 'o6', 'o7'] }],
  ['eq~ null', { collection: order, given: 'note eq~ null', want: ['o4'] }],
  ['createdBy eq~', { collection: order, given: 'createdBy eq~ "USER1"', want: ['o1', 'o2'] }],
  ['dot path eq~', { collection: order, given: 'customer.name eq~ "ALICE"', want: ['o1', 'o2'] }],
  ['dot path ne~ matches null lookups', { collection: order, given: 'customer.name ne~ "ALICE"', want: except('o1', 'o2') }],
  ['lookup eq~ is eq', { collection: order, given: `customer eq~ "${uid('c1').toUpperCase()}"`, want: ['o1'] }],
  ['id ne~ is ne', { collection: customer, given: `id ne~ "${uid('c1')}"`, want: ['c2', 'c3', 'c4', 'c5'] }],
  // exp() with now = 2024-02-01T12:00:00Z (see NOW).
  ['exp now() - 1D', { collection: order, given: "placedAt gt exp('now() - 1D')", want: ['o2', 'o6'] }],
  ['exp double quotes, upper case, no spaces', { collection: order, given: 'placedAt lt exp("NOW()-31d-12h")', want: ['o3'] }],
  ['exp hours', { collection: order, given: "placedAt ge exp('now() - 26H')", want: ['o1', 'o2', 'o5', 'o6'] }],
  ['exp fractional seconds', { collection: order, given: "placedAt eq exp('now() - 26h + 0.001S')", want: ['o5'] }],
  ['exp minutes and duration arithmetic', { collection: order, given: "placedAt eq exp('now() - (1D + 2 * 60M)')", want: ['o1'] }],
  ['exp date-time on a date is its UTC date', { collection: customer, given: "since eq exp('now() - 1D')", want: ['c1'] }],
  ['exp date ge', { collection: customer, given: "since ge exp('now()')", want: ['c4'] }],
  ['exp Abs', { collection: customer, given: "age eq exp('Abs(-30)')", want: ['c1'] }],
  ['exp Floor and division', { collection: customer, given: "age gt exp('floor(51 / 2)')", want: ['c1', 'c4'] }],
  ['exp Pow and precedence', { collection: customer, given: "age le exp('Pow(2, 4) + 2')", want: ['c5'] }],
  ['exp Round half away from zero', { collection: customer, given: "age eq exp('Round(-2.5) * -10')", want: ['c1'] }],
  ['exp fraction on a decimal', { collection: customer, given: "credit gt exp('1/4')", want: ['c1', 'c5'] }],
  ['exp unary minus and Sqrt', { collection: customer, given: "credit lt exp('-Sqrt(9)')", want: ['c4'] }],
  ['exp Max and Min', { collection: customer, given: "credit eq exp('MAX(10.5, min(3, 4))')", want: ['c1'] }],
  ['exp Ceiling', { collection: customer, given: "credit ge exp('Ceiling(10.2)')", want: ['c5'] }],
  ['exp string', { collection: order, given: `title eq exp('"Apple"') or note eq~ exp("'ÆØÅ'")`, want: ['o1', 'o2', 'o8'] }],
];

/** The request time of the exp() cases, and the callers of the me() cases. */
const NOW = new Date('2024-02-01T12:00:00.000Z');
const meCases: [string, { given: string; callerId: string | null; want: string[] }][] = [
  ['me() eq', { given: "createdBy eq exp('me()')", callerId: 'u2', want: ['c3', 'c4', 'c5'] }],
  ['me() ne matches nulls', { given: "createdBy ne exp('me()')", callerId: 'u2', want: ['c1', 'c2'] }],
  ['me() eq~', { given: "createdBy eq~ exp('ME()')", callerId: 'U1', want: ['c1'] }],
  ['anonymous me() is null', { given: "createdBy eq exp('me()')", callerId: null, want: ['c2'] }],
  ['anonymous me() ne', { given: "createdBy ne exp('me()')", callerId: null, want: ['c1', 'c3', 'c4', 'c5'] }],
  ['me() on a lookup', { given: "referrer eq exp('me()')", callerId: uid('c1'), want: ['c2', 'c4'] }],
];

describe('compileFilter on SQLite and PostgreSQL', () => {
  let dbs: FilterDatabases;
  beforeAll(async () => {
    dbs = await openFilterDatabases(customers, orders);
  });
  afterAll(async () => {
    await dbs.close();
  });

  it.each(cases)('%s', async (_title, { collection, given, want }) => {
    expect(await dbs.names(collection, given, { now: NOW })).toEqual({ sqlite: want, postgresql: want });
  });

  it.each(meCases)('%s', async (_title, { given, callerId, want }) => {
    expect(await dbs.names(customer, given, { callerId })).toEqual({ sqlite: want, postgresql: want });
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
    expect(where.text).toBe(
      '("t0"."title" = ? OR (("t0"."customer" IS NULL OR "t0"."customer" IN (SELECT "t0_f1"."id" FROM "Customer" AS "t0_f1"' +
        ' WHERE ("t0_f1"."referrer" IS NULL OR "t0_f1"."referrer" IN (SELECT "t0_f2"."id" FROM "Customer" AS "t0_f2" WHERE' +
        ' ("t0_f2"."name" <> ? OR "t0_f2"."name" IS NULL))))) AND "t0"."customer" IN (SELECT "t0_f3"."id" FROM "Customer" AS "t0_f3"' +
        ' WHERE "t0_f3"."age" > ?)))',
    );
    expect(where.values).toEqual(['a', 'b', 1]);
  });

  it('lower-cases both sides for ~ and binds the value lower-cased', () => {
    const lite = compileFilter(parseFilter('title sw~ "ÄB"'), scope(order));
    expect(lite).toEqual({ text: 'substr(svc_lower("t0"."title"), 1, length(?)) = ?', values: ['äb', 'äb'] });
    const post = compileFilter(parseFilter('title ge~ "ÄB"'), scope(order, 'postgresql'));
    expect(post).toEqual({ text: 'lower("t0"."title" COLLATE "und-x-icu") COLLATE "C" >= ?', values: ['äb'] });
  });

  it('evaluates exp() once into a bound value', () => {
    const where = compileFilter(
      parseFilter("placedAt gt exp('now() - 1D') and since eq exp('now()')".replace('since', 'customer.since')),
      scope(order, 'sqlite', { now: NOW }),
    );
    expect(where.text).not.toMatch(/now|exp/i);
    expect(where.values).toEqual([new Date('2024-01-31T12:00:00Z'), new Date('2024-02-01T00:00:00Z')]);
    const before = Date.now();
    const [bound] = compileFilter(parseFilter("placedAt gt exp('now()')"), scope(order)).values as Date[];
    expect(bound.getTime()).toBeGreaterThanOrEqual(before);
    expect(bound.getTime()).toBeLessThanOrEqual(Date.now());
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

  const invalid: [string, { collection: Collection; given: string; want: RegExp; callerId?: string }][] = [
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
    [
      '~ on an integer',
      {
        collection: customer,
        given: 'age gt 1 or age gt~ 3',
        want: /case-insensitive operator gt~ needs a string or text property; "age" is integer at position 13/,
      },
    ],
    [
      '~ order on a lookup',
      {
        collection: order,
        given: `customer gt~ "${uid('c1')}"`,
        want: /operator gt~ needs a string .* "customer" is lookup \(ids and lookups take only eq~ and ne~\)/,
      },
    ],
    ['~ on a date-time', { collection: order, given: 'placedAt eq~ "2024-01-01"', want: /operator eq~ needs a string/ }],
    [
      'exp date-time times a number',
      { collection: order, given: "placedAt gt exp('now() * 2')", want: /operator "\*" cannot combine a date-time and a number in exp\(\) at position 24/ },
    ],
    [
      'exp Sqrt of a string',
      { collection: customer, given: `credit eq exp('Sqrt("x")')`, want: /function Sqrt needs a number, found a string at position 21/ },
    ],
    ['exp division by zero', { collection: customer, given: "credit eq exp('1 / (2 - 2)')", want: /division by zero in exp\(\) at position 18/ }],
    ['exp duration by zero', { collection: order, given: "placedAt eq exp('now() - 1D / 0')", want: /division by zero/ }],
    [
      'exp fraction for an integer',
      { collection: customer, given: "age eq exp('1/2')", want: /property "age" \(integer\) expects an integer .* found exp\("1\/2"\) = 0.5 at position 1/ },
    ],
    [
      'exp date-time for a string',
      {
        collection: order,
        given: "title eq exp('now()')",
        want: /property "title" \(string\) expects a string, found exp\("now\(\)"\) = 2024-02-01T12:00:00.000Z/,
      },
    ],
    [
      'exp number for a boolean',
      { collection: customer, given: "vip eq exp('1')", want: /property "vip" \(boolean\) expects true or false, found exp\("1"\) = 1/ },
    ],
    ['exp number for a date-time', { collection: order, given: "placedAt eq exp('1')", want: /property "placedAt" \(date-time\)/ }],
    ['exp a bare duration', { collection: order, given: "placedAt gt exp('7D')", want: /exp\(\) evaluates to a duration/ }],
    ['exp now() plus a number', { collection: order, given: "placedAt gt exp('now() + 7')", want: /operator "\+" cannot combine a date-time and a number/ }],
    ['exp negated date-time', { collection: order, given: "placedAt gt exp('-now()')", want: /"-" cannot negate a date-time/ }],
    ['exp Sqrt of a negative number', { collection: customer, given: "credit gt exp('Sqrt(-1)')", want: /Sqrt of a negative number/ }],
    ['exp Pow without a real result', { collection: customer, given: "credit gt exp('Pow(-8, 1/3)')", want: /Pow has no real result/ }],
    ['exp overflow', { collection: customer, given: "credit gt exp('Pow(10, 400)')", want: /not a finite number/ }],
    ['exp date out of range', { collection: order, given: "placedAt gt exp('now() + 3000000D')", want: /date-time out of range/ }],
    [
      'exp me() of an anonymous caller with con',
      { collection: customer, given: "createdBy con exp('me()')", want: /null \(exp\("me\(\)"\) = null\) can only be compared with eq or ne/ },
    ],
    [
      'exp me() is not a UUID',
      { collection: customer, given: "referrer eq exp('me()')", want: /property "referrer" \(lookup\) expects a UUID/, callerId: 'u1' },
    ],
  ];

  it.each(invalid)('rejects %s with 400 INVALID_FILTER', (_title, { collection, given, want, callerId }) => {
    let error: unknown;
    try {
      compileFilter(parseFilter(given), scope(collection, 'sqlite', { now: NOW, callerId }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    expect((error as HttpError).code).toBe('INVALID_FILTER');
    expect((error as HttpError).message).toMatch(want);
  });
});
