/**
 * The SQL builder's rendering (runtime/query/sql.ts `renderSql`) and the one-row INSERT
 * (runtime/data/row-sql.ts `insertRows`), whose texts are kept per shape: a kept text must give the same
 * statement as building it afresh, with the values of this call, never those of an earlier one; texts
 * past the bound are still numbered right.
 */
import { describe, expect, it } from 'vitest';
import { ident, join, raw, renderSql, sql } from '../../../dist/runtime/query/sql.js';
import { insertRows } from '../../../dist/runtime/data/row-sql.js';
import type { Collection } from '../../../dist/runtime/manifest.js';

describe('renderSql', () => {
  it('numbers the markers for PostgreSQL, the same the second time, with each call its own values', () => {
    const q = (a: unknown, b: unknown) => sql`SELECT * FROM ${ident('T')} WHERE "a" = ${a} AND "b" IN (${join([sql`${b}`, sql`${b}`], ', ')})`;
    const first = renderSql(q(1, 'x'), 'postgresql');
    const second = renderSql(q(2, 'y'), 'postgresql');
    expect(first).toEqual({ text: 'SELECT * FROM "T" WHERE "a" = $1 AND "b" IN ($2, $3)', values: [1, 'x', 'x'] });
    expect(second).toEqual({ text: first.text, values: [2, 'y', 'y'] });
    expect(renderSql(q(3, 'z'), 'sqlite')).toEqual({ text: 'SELECT * FROM "T" WHERE "a" = ? AND "b" IN (?, ?)', values: [3, 'z', 'z'] });
  });

  it('numbers texts right past the bound of kept texts (3,000 shapes)', () => {
    for (let n = 1; n <= 3000; n++) {
      const list = join(
        Array.from({ length: n % 7 }, (_, i) => sql`${i}`),
        ', ',
      );
      const { text, values } = renderSql(sql`SELECT ${raw(String(n))}, ${n} WHERE x IN (${list})`, 'postgresql');
      expect(text).toBe(`SELECT ${n}, $1 WHERE x IN (${Array.from({ length: n % 7 }, (_, i) => `$${i + 2}`).join(', ')})`);
      expect(values).toEqual([n, ...Array.from({ length: n % 7 }, (_, i) => i)]);
    }
  });
});

describe('insertRows', () => {
  const collection = { name: 'Note', properties: [] } as unknown as Collection;
  it('gives a kept one-row text the values of this row, and the same statement as several rows do', () => {
    const a = insertRows(collection, [{ id: 'a', title: 'one', n: 1 }]);
    const b = insertRows(collection, [{ id: 'b', title: 'two', n: 2 }]);
    expect(a).toEqual({ text: 'INSERT INTO "Note" ("id", "title", "n") VALUES (?, ?, ?)', values: ['a', 'one', 1] });
    expect(b).toEqual({ text: a.text, values: ['b', 'two', 2] });
    // Another column list is another text.
    expect(insertRows(collection, [{ id: 'c', n: 3 }])).toEqual({ text: 'INSERT INTO "Note" ("id", "n") VALUES (?, ?)', values: ['c', 3] });
    expect(
      insertRows(collection, [
        { id: 'd', title: 'x', n: 4 },
        { id: 'e', title: 'y', n: 5 },
      ]),
    ).toEqual({ text: 'INSERT INTO "Note" ("id", "title", "n") VALUES (?, ?, ?), (?, ?, ?)', values: ['d', 'x', 4, 'e', 'y', 5] });
  });
});
