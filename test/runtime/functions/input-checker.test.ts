/**
 * Declared function inputs (SPEC §4.8 rule 6, DESIGN §4 "Function details"): query strings coerced per
 * type, enums, required fields, body fields for POST/PUT, details pointing at `/query/<name>` and `/body/<name>`.
 */
import { describe, expect, test } from 'vitest';
import { compileFunctionInputs } from '../../../dist/runtime/functions/input-checker.js';
import type { FunctionDefinition, TypedField } from '../../../dist/runtime/manifest.js';

const fn = (queryParams: TypedField[], requestBody: TypedField[] = []): FunctionDefinition => ({
  name: 'f',
  enabled: true,
  functionTypeId: 2,
  endpoint: '/f',
  queryParams,
  requestBody,
  responseFields: [],
  access: {},
  module: 'functions/f.js',
});

describe('query parameters', () => {
  test.each<[string, { field: TypedField; given: string | string[]; want?: unknown; error?: string }]>([
    ['integer', { field: { name: 'x', type: 'integer' }, given: '42', want: 42 }],
    ['integer refuses a fraction', { field: { name: 'x', type: 'integer' }, given: '4.2', error: 'query parameter x must be an integer' }],
    ['integer refuses text', { field: { name: 'x', type: 'integer' }, given: 'many', error: 'query parameter x must be an integer' }],
    ['decimal', { field: { name: 'x', type: 'decimal' }, given: '-12.75', want: -12.75 }],
    ['decimal refuses text', { field: { name: 'x', type: 'decimal' }, given: '12,75', error: 'query parameter x must be a number' }],
    ['boolean true', { field: { name: 'x', type: 'boolean' }, given: 'true', want: true }],
    ['boolean false', { field: { name: 'x', type: 'boolean' }, given: 'false', want: false }],
    ['boolean refuses yes', { field: { name: 'x', type: 'boolean' }, given: 'yes', error: 'query parameter x must be true or false' }],
    ['date', { field: { name: 'x', type: 'date' }, given: '2024-02-29', want: '2024-02-29' }],
    ['date refuses an impossible day', { field: { name: 'x', type: 'date' }, given: '2023-02-29', error: 'query parameter x must be a date "YYYY-MM-DD"' }],
    ['date-time', { field: { name: 'x', type: 'date-time' }, given: '2024-01-31T10:00:00+02:00', want: '2024-01-31T10:00:00+02:00' }],
    [
      'date-time needs a time zone',
      {
        field: { name: 'x', type: 'date-time' },
        given: '2024-01-31T10:00:00',
        error: 'query parameter x must be a date-time in ISO 8601 with a time zone, e.g. "2024-01-31T10:00:00Z"',
      },
    ],
    ['guid', { field: { name: 'x', type: 'guid' }, given: '0190AAAA-0000-7000-8000-000000000001', want: '0190AAAA-0000-7000-8000-000000000001' }],
    ['guid refuses text', { field: { name: 'x', type: 'guid' }, given: 'abc', error: 'query parameter x must be a GUID' }],
    ['string enum', { field: { name: 'x', type: 'string', spec: { enum: ['a', 'b'] } }, given: 'c', error: 'query parameter x must be one of "a", "b"' }],
    ['integer enum after coercion', { field: { name: 'x', type: 'integer', spec: { enum: [1, 2] } }, given: '2', want: 2 }],
    ['a repeated scalar parameter', { field: { name: 'x', type: 'integer' }, given: ['1', '2'], error: 'query parameter x must be an integer' }],
  ])('%s', (_title, { field, given, want, error }) => {
    const query: Record<string, unknown> = { x: given, other: 'kept' };
    const details = compileFunctionInputs(fn([field])).checkQuery(query);
    if (error) {
      expect(details).toEqual([{ path: '/query/x', message: error }]);
    } else {
      expect(details).toEqual([]);
      expect(query).toEqual({ x: want, other: 'kept' });
    }
  });

  test('a missing required parameter is named; an optional one may be absent', () => {
    const checker = compileFunctionInputs(
      fn([
        { name: 'need', type: 'integer', isRequired: true },
        { name: 'may', type: 'integer' },
      ]),
    );
    expect(checker.checkQuery({})).toEqual([{ path: '/query/need', message: 'query parameter need is required (an integer)' }]);
    expect(checker.checkQuery({ need: '1' })).toEqual([]);
  });
});

describe('request body', () => {
  const checker = compileFunctionInputs(
    fn(
      [],
      [
        { name: 'title', type: 'string', isRequired: true },
        { name: 'qty', type: 'integer' },
        { name: 'price', type: 'decimal' },
      ],
    ),
  );
  test.each<[string, unknown, { path: string; message: string }[]]>([
    ['valid', { title: 't', qty: 2, price: '9.99', extra: [1] }, []],
    ['missing required field', { qty: 2 }, [{ path: '/body/title', message: 'body field title is required (a string)' }]],
    ['no body at all', null, [{ path: '/body/title', message: 'body field title is required (a string)' }]],
    ['strings are not coerced in a body', { title: 't', qty: '2' }, [{ path: '/body/qty', message: 'body field qty must be an integer' }]],
    ['not an object', [{ title: 't' }], [{ path: '/body', message: 'the body must be a JSON object' }]],
  ])('%s', (_title, body, want) => expect(checker.checkBody(body)).toEqual(want));
  test('hasBody tells whether body fields are declared', () => {
    expect(checker.hasBody).toBe(true);
    expect(compileFunctionInputs(fn([])).hasBody).toBe(false);
  });
});
