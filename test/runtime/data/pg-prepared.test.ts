/**
 * Prepared statements of the PostgreSQL driver (`QueryOptions.prepare`, runtime/data/pg-driver.ts), on a
 * fresh database with a pool of one connection, so `pg_prepared_statements` (per session) shows what the
 * driver's connection holds:
 * - a text marked `prepare` becomes one named statement on the connection, reused, with the same rows
 *   as unnamed; texts not marked never do;
 * - at most 200 texts get a name (texts a client can vary never grow the server without bound);
 * - a table altered under a prepared statement (`cached plan must not change result type`) is answered
 *   right, under a new name;
 * - a statement the server lost behind the driver's back (a pooler such as PgBouncer in transaction
 *   mode) is answered right, and preparing stops.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgDriver } from '../../../dist/runtime/data/pg-driver.js';
import { createPgDatabase } from '../../support/backends.js';

let db: { url: string; drop: () => Promise<void> };
let driver: ReturnType<typeof createPgDriver>;
const held = () => driver.query('SELECT name, statement FROM pg_prepared_statements ORDER BY prepare_time', []);

beforeAll(async () => {
  db = await createPgDatabase('svc_prepared');
  driver = createPgDriver(db.url, { max: 1 });
  await driver.query('CREATE TABLE item (id text PRIMARY KEY, n integer, note text)', []);
  await driver.query("INSERT INTO item VALUES ('a', 1, 'one'), ('b', 2, 'two')", []);
});

afterAll(async () => {
  await driver?.close();
  await db?.drop();
});

describe('prepared statements on PostgreSQL', () => {
  it('runs a marked text as one named statement, reused, with the rows an unnamed run gives; others stay unnamed', async () => {
    const text = 'SELECT id, n, note FROM item WHERE id = $1';
    const unnamed = await driver.query(text, ['a']);
    expect(await held()).toEqual([]);
    for (const id of ['a', 'b', 'a']) expect(await driver.query(text, [id], { prepare: true })).toEqual(await driver.query(text, [id]));
    expect(unnamed).toEqual([{ id: 'a', n: 1, note: 'one' }]);
    expect((await held()).map((r) => r.statement)).toEqual([text]);
  });

  it('names at most 200 texts; later ones run unnamed', async () => {
    for (let i = 0; i < 230; i++) expect(await driver.query(`SELECT n + ${i} AS m FROM item WHERE id = $1`, ['b'], { prepare: true })).toEqual([{ m: 2 + i }]);
    expect((await held()).length).toBe(200);
  });

  it('answers right after the table under a prepared statement is altered (a migration while serving)', async () => {
    const text = 'SELECT n FROM item WHERE id = $1';
    // This text got no name (the 200 are taken): use a fresh driver, whose names are its own.
    const fresh = createPgDriver(db.url, { max: 1 });
    try {
      expect(await fresh.query(text, ['a'], { prepare: true })).toEqual([{ n: 1 }]);
      await driver.query('ALTER TABLE item ALTER COLUMN n TYPE text', []);
      expect(await fresh.query(text, ['a'], { prepare: true })).toEqual([{ n: '1' }]);
      expect(await fresh.query(text, ['b'], { prepare: true })).toEqual([{ n: '2' }]);
      const names = await fresh.query('SELECT name FROM pg_prepared_statements WHERE statement = $1 ORDER BY prepare_time', [text]);
      expect(names.map((r) => r.name)).toEqual(['svc0_0', 'svc1_0']);

      // A pooler handing the session another server connection loses the statement: answered unnamed, and no more names.
      await fresh.query('DEALLOCATE ALL', []);
      expect(await fresh.query(text, ['b'], { prepare: true })).toEqual([{ n: '2' }]);
      expect(await fresh.query('SELECT id FROM item WHERE n = $1', ['1'], { prepare: true })).toEqual([{ id: 'a' }]);
      expect(await fresh.query('SELECT count(*)::int AS c FROM pg_prepared_statements', [])).toEqual([{ c: 0 }]);
    } finally {
      await fresh.close();
    }
  });
});
