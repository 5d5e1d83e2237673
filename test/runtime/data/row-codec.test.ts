/**
 * The row codec (runtime/data/row-codec.ts): date-time and date texts as the databases give them are
 * rewritten to ISO 8601 UTC without a `Date` and agree with the `Date` route; `rowDecoder` decodes
 * a row in place into the item `decodeRow` builds.
 */
import { describe, expect, it } from 'vitest';
import { decodeRow, decodeValue, rowDecoder } from '../../../dist/runtime/data/row-codec.js';
import type { Collection } from '../../../dist/runtime/manifest.js';

describe('row codec', () => {
  it('reads every UTC date-time text the databases give as the ISO form Date gives', () => {
    const texts = [
      '2024-01-31 10:00:00+00', // PostgreSQL text, no fraction
      '2024-01-31 10:00:00.5+00',
      '2024-01-31 10:00:00.25+00',
      '2024-01-31 10:00:00.125+00',
      '2024-01-31T10:00:00.125+00:00', // PostgreSQL JSON, SQLite stored text
      '2024-01-31T10:00:00.125Z',
      '0999-12-31 23:59:59.999+00',
    ];
    for (const t of texts) {
      const viaDate = new Date(t.replace(' ', 'T').replace(/\+00$/, 'Z')).toISOString();
      expect(decodeValue({ type: 'date-time' }, t), t).toBe(viaDate);
    }
    expect(decodeValue({ type: 'date-time' }, '2024-01-31 10:00:00.5+00')).toBe('2024-01-31T10:00:00.500Z');
    expect(decodeValue({ type: 'date-time' }, new Date('2024-01-31T10:00:00.5Z'))).toBe('2024-01-31T10:00:00.500Z');
    expect(decodeValue({ type: 'date' }, '2024-02-29')).toBe('2024-02-29');
    expect(decodeValue({ type: 'date' }, '2024-02-29T00:00:00.000+00:00')).toBe('2024-02-29');
  });

  it('decodes rows in place into the items decodeRow builds, with missing columns as null', () => {
    const c = {
      name: 'Thing',
      properties: [
        { name: 'price', type: 'decimal' },
        { name: 'done', type: 'boolean' },
        { name: 'owner', type: 'lookup', collection: 'Person' },
      ],
    } as unknown as Collection;
    const columns = ['id', 'price', 'done', 'owner', 'createdAt', 'updatedAt', 'createdBy'];
    const raw = () => ({ id: 'a', price: '12.50', done: 1, owner: 'p1', createdAt: '2024-01-31 10:00:00+00', updatedAt: new Date(0), createdBy: null });
    const row = raw();
    const item = rowDecoder(c, columns)(row);
    expect(item).toBe(row);
    expect(item).toEqual(decodeRow(c, raw()));
    expect(Object.keys(item)).toEqual(columns);
    expect(item).toMatchObject({ price: 12.5, done: true, owner: { id: 'p1' }, createdAt: '2024-01-31T10:00:00.000Z' });
    expect(rowDecoder(c, ['id', 'price'])({ id: 'b' })).toEqual({ id: 'b', price: null });
    expect(() => rowDecoder(c, ['id', 'nope'])).toThrow(/Thing has no column nope/);
  });
});
