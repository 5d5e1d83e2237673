/**
 * Complexity bounds of request filters (docs/query-language.md "Limits"): at most 100 comparisons
 * per filter, at most 3 lookups walked by one dot path, and no NUL character (PostgreSQL refuses it).
 * Each bound is checked at the limit (accepted, and compiled on both databases) and one past it
 * (400 INVALID_FILTER naming the limit).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpError } from '../../../dist/runtime/errors.js';
import { compileFilter } from '../../../dist/runtime/query/filter-compile.js';
import { parseFilter } from '../../../dist/runtime/query/filter-parser.js';
import { MAX_FILTER_PREDICATES, MAX_LOOKUP_HOPS } from '../../../dist/runtime/contract/limits.js';
import { customer, openFilterDatabases, order, scope, type FilterDatabases } from '../../support/filter-db.js';

/** The 400 INVALID_FILTER error thrown by `fn`. */
function filterErrorOf(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).code).toBe('INVALID_FILTER');
    expect((err as HttpError).status).toBe(400);
    return err as HttpError;
  }
  throw new Error('expected an INVALID_FILTER error');
}

const ors = (n: number, predicate: string) => Array.from({ length: n }, () => predicate).join(' or ');
const compile = (text: string) => compileFilter(parseFilter(text), scope(order));

describe('filter complexity bounds', () => {
  let dbs: FilterDatabases;
  beforeAll(async () => {
    dbs = await openFilterDatabases(
      [{ id: 'c1', name: 'A', age: 1, vip: true, since: null, credit: null, referrer: 'c1', createdBy: null, createdAt: '2024-01-01T00:00:00.000Z' }],
      [{ id: 'o1', title: 't', note: null, placedAt: null, customer: 'c1', createdBy: null, createdAt: '2024-01-01T00:00:00.000Z' }],
    );
  });
  afterAll(async () => {
    await dbs?.close();
  });

  it('accepts exactly 100 comparisons, in any mix of and/or/parentheses, and runs them on both databases', async () => {
    expect(MAX_FILTER_PREDICATES).toBe(100);
    const flat = ors(100, 'customer.vip eq true');
    expect(await dbs.names(order, flat)).toEqual({ sqlite: ['o1'], postgresql: ['o1'] });
    const nested = `(${ors(50, 'title eq "t"')}) and (${Array.from({ length: 50 }, () => 'customer.age ge 1').join(' and ')})`;
    expect(await dbs.names(order, nested)).toEqual({ sqlite: ['o1'], postgresql: ['o1'] });
  });

  it('refuses 101 comparisons and 150 ORed lookups with a message naming the limit, before compiling', () => {
    for (const text of [ors(101, 'title eq "t"'), ors(150, 'customer.vip eq true'), `title eq "t" and (${ors(100, 'title eq "t"')})`]) {
      const err = filterErrorOf(() => parseFilter(text));
      expect(err.message).toMatch(/^filter: more than 100 comparisons \(the limit per filter\) at position \d+$/);
    }
    const started = performance.now();
    filterErrorOf(() => parseFilter(ors(150, 'customer.vip eq true')));
    expect(performance.now() - started).toBeLessThan(200); // ms: refused while parsing, no SQL built
  });

  it('counts each filter apart: a policy or view filter does not use up the request filter budget', () => {
    // Two filters of 100 comparisons each both parse: the bound is per filter text.
    expect(() => parseFilter(ors(100, 'title eq "a"'))).not.toThrow();
    expect(() => parseFilter(ors(100, 'title eq "b"'))).not.toThrow();
  });

  it('accepts dot paths of up to 3 lookups (and `.id` after a third) and refuses a fourth', async () => {
    expect(MAX_LOOKUP_HOPS).toBe(3);
    expect(await dbs.names(order, 'customer.referrer.referrer.name eq "A"')).toEqual({ sqlite: ['o1'], postgresql: ['o1'] });
    expect(() => compile(`customer.referrer.referrer.referrer.id ne null`)).not.toThrow();
    const err = filterErrorOf(() => compile('customer.referrer.referrer.referrer.name eq "A"'));
    expect(err.message).toBe('filter: "customer.referrer.referrer.referrer.name" walks more than 3 lookups (the limit of a dot path) at position 1');
    filterErrorOf(() => compileFilter(parseFilter('referrer.referrer.referrer.referrer.referrer.age gt 1'), scope(customer)));
  });

  it('refuses a NUL character in a string literal, an exp() and elsewhere, naming its position', () => {
    for (const [text, position] of [
      ['title eq "a\u0000b"', 12],
      [`placedAt gt exp('now()\u0000')`, 23],
      ['title\u0000 eq "a"', 6],
    ] as const) {
      const err = filterErrorOf(() => parseFilter(text));
      expect(err.message).toBe(`filter: NUL character (U+0000) at position ${position} is not allowed in a filter`);
    }
  });
});
