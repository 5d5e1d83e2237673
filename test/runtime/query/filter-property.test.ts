/**
 * Property test of the filter language (SPEC §4.3): random well-formed filters (every operator with
 * and without `~`, dot paths into lookups, literals from the data plus edge values, null, nested
 * and/or with parentheses, `exp()` numbers, date-times and `me()`) over a fixed data set with
 * NULLs, mixed case, non-ASCII and `%`/`_` in strings. SQLite and PostgreSQL must both return
 * exactly the rows the plain-TypeScript reference evaluator returns.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import { HttpError } from '../../../dist/runtime/errors.js';
import { parseFilter } from '../../../dist/runtime/query/filter-parser.js';
import { manifest, openFilterDatabases, order, uid, type FilterDatabases, type Row } from '../../support/filter-db.js';
import { referenceNames } from '../../support/filter-reference.js';

const NOW = new Date('2024-02-01T12:34:56.789Z');
const H = 3_600_000;

/* ---------- the data set ---------- */

const NAMES = ['Alice', 'alice', 'ÄRGER', 'ärger', null, 'Bob 100%_\\x', 'Σίσυφος', 'ΣΊΣΥΦΟΣ', 'Øyvind', 'a_c'];
const AGES = [30, 25, null, 40, 18, 0, -5, 2147483647, 30, -2147483648];
const CREDITS = [10.5, 0.25, null, -3.5, 12, 0, 0.1, 1000000, 3.14159, -0.5];
const SINCE = ['2024-01-31', '2024-02-01', null, '2024-02-02', '2020-01-01', '2024-01-30', '1999-12-31', '2024-02-01', null, '2030-06-15'];
const customers: Row[] = NAMES.map((name, i) => ({
  id: `c${i + 1}`,
  name,
  age: AGES[i],
  vip: i % 3 === 2 ? null : i % 2 === 0,
  since: SINCE[i],
  credit: CREDITS[i],
  referrer: i % 4 === 0 ? null : `c${((i * 7) % 10) + 1}`,
  createdBy: ['u1', null, 'U1'][i % 3],
  createdAt: new Date(NOW.getTime() - i * 5 * H).toISOString(),
}));

const TITLES = [
  'Red Apple',
  'red apple',
  'APPLE pie',
  'Äpfel',
  'äpfel',
  'ÆØÅ',
  'æøå',
  'Ærø',
  '100%',
  '100_%',
  'a_b',
  'a%b',
  'ΟΔΟΣ',
  'οδος',
  'Привет',
  'ПРИВЕТ',
  'İstanbul',
  'istanbul',
  '😀 smile',
  'ｱｲ',
  'x"y',
  'back\\slash',
  '',
  null,
  'Zebra',
  'zebra',
  'ß',
  'SS',
  'ǅemal',
  '\u212Bngstrom',
  '\u2126hm \u212Aelvin',
  '𐐀𐐁',
  'ÉCOLE',
  'école',
  null,
  'ΣΑΣ',
  'σας',
  '% _',
  'Apple',
  'aXb',
];
const NOTES = ['ÆØÅ note', null, 'ärger im Büro', 'ÄRGER IM BÜRO', 'Привет мир', '100% sure', 'a_b_c', 'İİ', '', 'plain'];
const CREATORS = ['User1', 'user1', 'USER1', null, 'ÆØÅ', 'u2', 'æøå'];
const orders: Row[] = TITLES.map((title, i) => ({
  id: `o${i + 1}`,
  title,
  note: NOTES[i % NOTES.length],
  customer: i % 12 === 11 ? null : `c${(i % 10) + 1}`,
  placedAt: i % 9 === 8 ? null : new Date(NOW.getTime() + (i - 20) * 7.5 * H + (i % 3) - 1).toISOString(),
  createdBy: CREATORS[i % CREATORS.length],
  createdAt: new Date(NOW.getTime() - i * 3 * H).toISOString(),
}));

/* ---------- value pools ---------- */

const strings = [...NAMES, ...TITLES, ...NOTES, ...CREATORS].filter((s): s is string => s !== null);
const STRING_POOL = [
  ...new Set([
    ...strings,
    ...strings.map((s) => s.toUpperCase()),
    ...strings.map((s) => s.toLowerCase()),
    ...strings.map((s) => [...s].slice(0, 2).join('')),
    ...strings.map((s) => [...s].slice(-2).join('')),
    '',
    '%',
    '_',
    '\\',
    '"',
    'a',
    'z',
    '~',
    'ς',
    'i̇',
    'ss',
    'å',
  ]),
];
const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const INTS = [...new Set(AGES.filter((a): a is number => a !== null).flatMap((a) => [a, a + 1, a - 1]))].filter((a) => a >= -2147483648 && a <= 2147483647);
const SMALL_INTS = INTS.filter((a) => Math.abs(a) < 1000);
const DECIMALS = [...CREDITS.filter((c): c is number => c !== null), 0.5, -1, 2, 10.25, 3.1416];
const dateTimes = [...orders, ...customers].flatMap((r) => [r.placedAt, r.createdAt]).filter((d): d is string => typeof d === 'string');
const DATE_TIME_POOL = [
  ...new Set(
    dateTimes.flatMap((d) => {
      const ms = Date.parse(d);
      return [d, new Date(ms + 1).toISOString(), new Date(ms - 1).toISOString(), new Date(ms + 2 * H).toISOString().replace('Z', '+02:00'), d.slice(0, 10)];
    }),
  ),
];
const DATE_POOL = [...new Set([...SINCE.filter((d): d is string => d !== null), ...dateTimes.map((d) => d.slice(0, 10)), '2024-02-29'])];
const IDS = [...customers, ...orders].map((r) => uid(r.id as string));
const GUID_POOL = [...IDS, ...IDS.map((id) => id.toUpperCase()), '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-7fff-bfff-ffffffffffff'];

/* ---------- filter arbitraries ---------- */

type Kind = 'string' | 'integer' | 'decimal' | 'boolean' | 'date' | 'date-time' | 'guid';
const FIELDS: [string, Kind][] = [
  ['title', 'string'],
  ['note', 'string'],
  ['createdBy', 'string'],
  ['customer.name', 'string'],
  ['customer.referrer.name', 'string'],
  ['customer.age', 'integer'],
  ['customer.credit', 'decimal'],
  ['customer.vip', 'boolean'],
  ['customer.since', 'date'],
  ['placedAt', 'date-time'],
  ['createdAt', 'date-time'],
  ['customer.createdAt', 'date-time'],
  ['id', 'guid'],
  ['customer', 'guid'],
  ['customer.id', 'guid'],
  ['customer.referrer', 'guid'],
];
const ORDER_OPS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le'];
const OPS: Record<Kind, string[]> = {
  string: [...ORDER_OPS, 'con', 'ncon', 'sw', 'ew'],
  integer: ORDER_OPS,
  decimal: ORDER_OPS,
  boolean: ['eq', 'ne'],
  date: ORDER_OPS,
  'date-time': ORDER_OPS,
  guid: ORDER_OPS,
};
const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);
const durationExp = fc
  .tuple(
    pick(['+', '-']),
    fc.integer({ min: 0, max: 400 }),
    pick(['D', 'H', 'M', 'S', 'd', 'h', 'm', 's']),
    fc.option(fc.tuple(pick(['+', '-']), fc.integer({ min: 1, max: 90 }), pick(['H', 'm', 'S'])), { nil: undefined }),
  )
  .map(([sign, n, unit, more]) => `exp('now() ${sign} ${n}${unit}${more ? ` ${more[0]} ${more[1]}${more[2]}` : ''}')`);
const integerExp = fc
  .tuple(pick(SMALL_INTS), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 4 }))
  .map(([a, b, form]) => [`${a} + ${b}`, `Floor(${a} / ${b})`, `Abs(${a}) - ${b}`, `Max(${a}, ${b} * 10)`, `ROUND(${a} / 2)`][form])
  .map((e) => `exp('${e}')`);
const decimalExp = fc
  .tuple(pick(DECIMALS), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 0, max: 3 }))
  .map(([a, b, form]) => [`${a} / ${b}`, `Sqrt(${Math.abs(a)})`, `Min(${a}, ${b}) * 0.5`, `-(${a} - ${b})`][form])
  .map((e) => `exp("${e}")`);

/** Rendered values for a property kind and operator (null only with eq/ne; me() only with eq/ne). */
function valueArb(kind: Kind, op: string): fc.Arbitrary<string> {
  const nullable = op === 'eq' || op === 'ne';
  const withNull = (arb: fc.Arbitrary<string>) => (nullable ? fc.oneof({ weight: 6, arbitrary: arb }, { weight: 1, arbitrary: fc.constant('null') }) : arb);
  switch (kind) {
    case 'string': {
      const literal = pick(STRING_POOL).map(quote);
      const exps = pick(STRING_POOL.filter((s) => !/['"]/.test(s))).map((s) => `exp('"${s}"')`);
      return withNull(
        nullable ? fc.oneof(literal, exps, fc.constant(`exp("me()")`)) : fc.oneof({ weight: 4, arbitrary: literal }, { weight: 1, arbitrary: exps }),
      );
    }
    case 'integer':
      return withNull(fc.oneof({ weight: 3, arbitrary: pick(INTS).map(String) }, { weight: 1, arbitrary: integerExp }));
    case 'decimal':
      return withNull(fc.oneof({ weight: 3, arbitrary: pick(DECIMALS).map(String) }, { weight: 1, arbitrary: decimalExp }));
    case 'boolean':
      return withNull(pick(['true', 'false', 'TRUE']));
    case 'date':
      return withNull(fc.oneof({ weight: 3, arbitrary: pick(DATE_POOL).map(quote) }, { weight: 1, arbitrary: durationExp }));
    case 'date-time':
      return withNull(fc.oneof({ weight: 3, arbitrary: pick(DATE_TIME_POOL).map(quote) }, { weight: 1, arbitrary: durationExp }));
    case 'guid':
      return withNull(pick(GUID_POOL).map(quote));
  }
}

const comparison: fc.Arbitrary<string> = pick(FIELDS).chain(([path, kind]) =>
  fc.tuple(pick(OPS[kind]), fc.boolean()).chain(([op, tilde]) => {
    const ci = tilde && (kind === 'string' || (kind === 'guid' && (op === 'eq' || op === 'ne')));
    return valueArb(kind, op).map((value) => `${path} ${op}${ci ? '~' : ''} ${value}`);
  }),
);

interface Group {
  kind: 'and' | 'or';
  operands: Tree[];
  paren: boolean;
  upper: boolean;
}
type Tree = string | Group;
function treeArb(depth: number): fc.Arbitrary<Tree> {
  if (depth === 0) return comparison;
  const group = fc.record({
    kind: pick(['and', 'or'] as const),
    operands: fc.array(treeArb(depth - 1), { minLength: 2, maxLength: 3 }),
    paren: fc.boolean(),
    upper: fc.boolean(),
  });
  return fc.oneof({ weight: 2, arbitrary: comparison }, { weight: 3, arbitrary: group });
}
function render(tree: Tree): string {
  if (typeof tree === 'string') return tree;
  const keyword = tree.upper ? tree.kind.toUpperCase() : tree.kind;
  const parts = tree.operands.map((o) => {
    const text = render(o);
    const needs = typeof o !== 'string' && (o.paren || (tree.kind === 'and' && o.kind === 'or'));
    return needs ? `(${text})` : text;
  });
  return parts.join(` ${keyword} `);
}

/* ---------- the property ---------- */

describe('filter property: SQLite and PostgreSQL agree with the reference evaluator', () => {
  let dbs: FilterDatabases;
  beforeAll(async () => {
    dbs = await openFilterDatabases(customers, orders);
  });
  afterAll(async () => {
    await dbs.close();
  });

  it('random well-formed filters return exactly the reference rows', async () => {
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(pick(['User1', 'æøå', null]), treeArb(3), async (callerId, tree) => {
        const text = render(tree);
        const want = referenceNames(parseFilter(text), { manifest, rows: { Customer: customers, Order: orders }, exp: { now: NOW, callerId } }, order);
        if (want.length > 0 && want.length < orders.length) nonEmpty += 1;
        expect(await dbs.names(order, text, { now: NOW, callerId }), `${text} (me() = ${callerId})`).toEqual({ sqlite: want, postgresql: want });
      }),
      { numRuns: 1000 },
    );
    // The generator must produce discriminating filters, not only all-or-nothing ones.
    expect(nonEmpty).toBeGreaterThan(300);
  });

  it('random exp() texts compile to a 400 or to the reference rows', async () => {
    const arity = (f: string) => (['Max', 'MIN', 'Pow'].includes(f) ? 2 : 1);
    const FUNCTIONS = ['Abs', 'ceiling', 'Floor', 'Round', 'Max', 'MIN', 'Pow', 'Sqrt'];
    /** Syntactically valid expressions over `leaves`; functions get the wrong arity 1 time in 10. */
    const expression = (leaves: fc.Arbitrary<string>) =>
      fc.letrec<{ e: string }>((tie) => ({
        e: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          leaves,
          fc.tuple(tie('e'), pick([' + ', ' - ', '*', ' / ']), tie('e'), fc.boolean()).map(([l, op, r, p]) => (p ? `(${l}${op}${r})` : `${l}${op}${r}`)),
          tie('e').map((e) => `-${e}`),
          fc
            .tuple(pick(FUNCTIONS), fc.array(tie('e'), { minLength: 2, maxLength: 2 }), fc.nat(9))
            .map(([f, args, wrong]) => `${f}(${args.slice(0, wrong === 0 ? 3 - arity(f) : arity(f)).join(', ')})`),
        ),
      })).e;
    const numeric = expression(pick(['0', '1', '2.5', '1000', '3', '0.25', '7']));
    const duration = fc.oneof(
      pick(['7D', '1.5h', '30M', '2s', '0D']),
      numeric.map((n) => `(${n}) * 1H`),
    );
    const typed = {
      date: fc.tuple(duration, pick([' + ', ' - ']), fc.boolean()).map(([d, op, first]) => (first && op === ' + ' ? `${d} + now()` : `now()${op}${d}`)),
      number: numeric,
      string: pick(['me()', '"a"', '"Red Apple"', '"user1"']),
    };
    const anything = expression(
      fc.oneof(
        { weight: 30, arbitrary: pick(['now()', 'me()', '7D', '1.5h', '30M', '2s', '0', '1', '2.5', '"a"']) },
        { weight: 1, arbitrary: pick(['7x', 'foo(1)', '1 2']) },
      ),
    );
    const targets = [
      ['placedAt gt', 'date'],
      ['customer.since le', 'date'],
      ['customer.credit ge', 'number'],
      ['customer.age ne', 'number'],
      ['title eq~', 'string'],
      ['createdBy eq', 'string'],
    ] as const;
    const comparisonText = pick(targets).chain(([left, kind]) =>
      fc.oneof({ weight: 3, arbitrary: typed[kind] }, { weight: 1, arbitrary: anything }).map((e) => `${left} exp('${e}')`),
    );
    let compiled = 0;
    await fc.assert(
      fc.asyncProperty(comparisonText, pick(['User1', null]), async (text, callerId) => {
        let want: string[];
        try {
          want = referenceNames(parseFilter(text), { manifest, rows: { Customer: customers, Order: orders }, exp: { now: NOW, callerId } }, order);
          const got = await dbs.names(order, text, { now: NOW, callerId });
          compiled += 1;
          expect(got, text).toEqual({ sqlite: want, postgresql: want });
        } catch (e) {
          if (!(e instanceof HttpError) || e.status !== 400 || e.code !== 'INVALID_FILTER') throw e;
        }
      }),
      { numRuns: 1500 },
    );
    expect(compiled).toBeGreaterThan(600);
  });

  it('the data set has the rows the generators rely on', () => {
    expect(orders).toHaveLength(40);
    expect(orders.some((o) => o.placedAt === null) && customers.some((c) => c.name === null)).toBe(true);
  });

  it('strings order by code point (UTF-8 bytes), not by UTF-16 code unit', async () => {
    // U+FF71 < U+10400 < U+1F600, although "😀" and "𐐀" start with surrogates (< U+FF71) in UTF-16.
    const want = ['o19', 'o32'];
    expect(orders.filter((o) => want.includes(o.id as string)).map((o) => o.title)).toEqual(['😀 smile', '𐐀𐐁']);
    expect(await dbs.names(order, 'title gt "ｱｲ"')).toEqual({ sqlite: want, postgresql: want });
  });
});
