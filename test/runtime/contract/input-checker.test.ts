/**
 * The collection input checker (`runtime/data/input.ts`) compiled from the contract's
 * `propertyJsonSchema`, and the OpenAPI document agreeing with it: values the server refuses are
 * refused with 400 details naming the property — NUL characters, years outside 0001–9999, non-finite
 * numbers, out-of-range integers and decimals — and every value a published schema allows passes.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { compileInputChecker } from '../../../dist/runtime/data/input.js';
import { collectionInputSchema, propertyJsonSchema, propertyValueProblem, type Collection, type Property } from '../../../dist/runtime/contract/index.js';

const props: Property[] = [
  { name: 'title', type: 'string', required: true, maxLength: 10, minLength: 2 },
  { name: 'notes', type: 'text', required: false, maxLength: 20 },
  { name: 'qty', type: 'integer', required: false },
  { name: 'rating', type: 'integer', required: false, minimum: 0, maximum: 5 },
  { name: 'total', type: 'decimal', required: false, minimum: 0, maximum: 1000 },
  { name: 'big', type: 'decimal', required: false },
  { name: 'dueOn', type: 'date', required: false },
  { name: 'placedAt', type: 'date-time', required: false },
  { name: 'status', type: 'string', required: false, enum: ['new', 'paid'] },
  { name: 'customer', type: 'lookup', required: false, collection: 'Customer' },
];
const order: Collection = { name: 'Order', properties: props, search: false, access: [], policies: [], children: [] };
const checker = compileInputChecker(order);
const check = (body: unknown, mode: 'create' | 'merge' = 'merge') => checker.check(body, mode, '');

describe('collection input checker', () => {
  it.each([
    ['NUL in a string', { title: 'a\u0000b' }, '/title', 'title must be text without NUL characters (\\u0000)'],
    ['NUL in a text', { notes: 'x\u0000' }, '/notes', 'notes must be text without NUL characters (\\u0000)'],
    ['year 0 in a date', { dueOn: '0000-01-01' }, '/dueOn', 'dueOn must be a date in the years 0001–9999'],
    ['year 0 in a date-time', { placedAt: '0000-06-01T00:00:00Z' }, '/placedAt', 'placedAt must be a date-time in the years 0001–9999'],
    ['a date-time that moves to year 0 in UTC', { placedAt: '0001-01-01T00:30:00+01:00' }, '/placedAt', 'placedAt must be a date-time in the years 0001–9999'],
    ['a leap second (no instant)', { placedAt: '2016-12-31T23:59:60Z' }, '/placedAt', 'placedAt must be a date-time in the years 0001–9999'],
    ['Infinity for a decimal (JSON 1e999)', JSON.parse('{"big": 1e999}'), '/big', undefined],
    ['-Infinity for a decimal', { big: -Infinity }, '/big', undefined],
    ['NaN for a decimal', { big: NaN }, '/big', undefined],
    ['Infinity for an integer', JSON.parse('{"qty": 1e999}'), '/qty', 'qty must be an integer between -2147483648 and 2147483647'],
    ['an integer above 32 bits', { qty: 2 ** 31 }, '/qty', 'qty must be an integer between -2147483648 and 2147483647'],
    ['an integer out of its bounds', { rating: 6 }, '/rating', 'rating must be an integer between 0 and 5'],
    ['a decimal with 36 integer digits', { big: 1e35 }, '/big', undefined],
    ['a decimal string with 36 integer digits', { big: '1'.repeat(36) }, '/big', undefined],
    ['a decimal string above the maximum', { total: '1000.01' }, '/total', undefined],
    ['a decimal number above the maximum', { total: 1000.01 }, '/total', undefined],
    ['a text longer than maxLength', { notes: 'x'.repeat(21) }, '/notes', 'notes must be a string of at most 20 characters'],
    ['null for a required property', { title: null }, '/title', undefined],
  ])('refuses %s', (_title, body, path, message) => {
    const details = check(body);
    expect(details.map((d) => d.path)).toEqual([path]);
    if (message) expect(details[0].message).toBe(message);
    expect(details[0].message).toMatch(new RegExp(`^${path.slice(1)} must be`));
  });

  it.each([
    ['boundary years', { dueOn: '0001-01-01', placedAt: '9999-12-31T23:59:59Z' }],
    ['a decimal string with 35 integer digits', { big: `-${'9'.repeat(35)}.${'1'.repeat(40)}` }],
    ['a decimal string within its bounds', { total: '999.99' }],
    ['a lookup as an object or a bare id', { customer: '6f1c1b0e-5b1a-4c1e-9f1a-1b2c3d4e5f60' }],
    ['null for an optional enum', { status: null }],
    ['emoji and other non-NUL control characters', { title: 'a\u0001🙂' }],
  ])('accepts %s', (_title, body) => {
    expect(check(body)).toEqual([]);
  });

  it('create needs the required properties; the message says what they accept', () => {
    expect(check({}, 'create')).toEqual([{ path: '/title', message: 'title is required (a string of at most 10 characters and at least 2)' }]);
  });
});

describe('published schema = enforced schema', () => {
  const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
  const ajv = addFormats(new Ajv({ strict: false }));
  ajv.addFormat('int32', true);

  it('a nullable enum lists null in its enum', () => {
    expect(propertyJsonSchema(props[8], { forInput: true })).toEqual({ type: ['string', 'null'], enum: ['new', 'paid', null] });
  });

  it('integers carry their bounds, decimals their digits and string form', () => {
    expect(propertyJsonSchema(props[2], { forInput: true })).toMatchObject({ type: ['integer', 'null'], minimum: -2147483648, maximum: 2147483647 });
    const decimal = propertyJsonSchema(props[4], { forInput: true }) as { anyOf: Record<string, unknown>[] };
    expect(decimal.anyOf[0]).toMatchObject({ type: 'number', minimum: 0, maximum: 1000 });
    expect(decimal.anyOf[1]).toEqual({ type: 'string', pattern: '^-?\\d{1,35}(\\.\\d+)?$', description: 'An exact decimal, e.g. "12.50"' });
  });

  it.each([
    { title: 'ab', rating: 5, total: '12.50', dueOn: '2024-02-29', status: 'paid' },
    { title: 'x'.repeat(11) },
    { qty: 2 ** 31 },
    { rating: -1 },
    { big: '1e5' },
    { status: 'gone' },
    { dueOn: '2023-02-29' },
  ])('the input schema and the checker agree on %j', (body) => {
    const publishedOk = ajv.validate(collectionInputSchema(order, { mode: 'merge' }), body);
    expect(check(body).length === 0).toBe(publishedOk);
  });

  it('propertyValueProblem leaves values of other kinds alone', () => {
    expect(propertyValueProblem(props[0], 'fine')).toBeUndefined();
    expect(propertyValueProblem(props[6], '2024-01-31')).toBeUndefined();
    expect(propertyValueProblem(props[2], 5)).toBeUndefined();
  });
});
