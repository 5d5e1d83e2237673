/**
 * Capture SQL (DESIGN §12, `runtime/jobs/capture.ts`) on a real SQLite file: the installed triggers
 * write exactly one `svc_trigger` job per matching committed change (create/update/delete, with
 * before/after rows, the op, and the caller from `svc_caller()` or `createdBy`), none for a rolled-back
 * change, none when `filter` or `changed` does not match, and none on a collection without triggers;
 * the literal renderer doubles quotes and refuses what it cannot render; svc's triggers can be listed
 * and dropped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadAndValidate } from '../../../dist/generator/validate/index.js';
import { dropStatements, installStatements, listInstalledSql, sqlLiteral } from '../../../dist/runtime/jobs/capture.js';
import { registerSqliteFunctions } from '../../../dist/runtime/data/sqlite-functions.js';
import { TRIGGER_APP, writeAppFolder } from '../../support/trigger-app.js';

const root = mkdtempSync(join(tmpdir(), 'svc-capture-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const JOBS_DDL = `CREATE TABLE IF NOT EXISTS "_svc_jobs" ("id" TEXT PRIMARY KEY, "task" TEXT NOT NULL, "payload" TEXT NOT NULL, "key" TEXT UNIQUE,
  "runAt" INTEGER NOT NULL, "attempts" INTEGER NOT NULL DEFAULT 0, "maxAttempts" INTEGER NOT NULL DEFAULT 10, "lastError" TEXT,
  "lockedAt" INTEGER, "lockedBy" TEXT, "createdAt" INTEGER NOT NULL)`;

let db: Database.Database;
/** Sets the capture context as a unit of work does (`svc_set_context`, registered by `registerSqliteFunctions`). */
const setContext = (callerId: string | null, depth = 0) => db.prepare('SELECT svc_set_context(?, ?) AS x').get(callerId, depth);
const jobs = () =>
  (db.prepare('SELECT task, payload, maxAttempts FROM _svc_jobs ORDER BY rowid').all() as { task: string; payload: string; maxAttempts: number }[]).map(
    (r) => ({
      ...r,
      payload: JSON.parse(r.payload) as {
        trigger: string;
        event: Record<string, unknown> & { before: Record<string, unknown> | null; after: Record<string, unknown> | null };
      },
    }),
  );

beforeAll(async () => {
  const dir = writeAppFolder(join(root, 'app'), TRIGGER_APP);
  const { manifest } = await loadAndValidate(dir, { DATABASE_URL: `file:${join(root, 'db.sqlite')}` });
  db = new Database(join(root, 'db.sqlite'));
  registerSqliteFunctions(db);
  for (const c of ['Order', 'Note']) {
    const props = c === 'Order' ? '"total" REAL, "paid" INTEGER, "note" TEXT' : '"text" TEXT';
    db.exec(`CREATE TABLE "${c}" ("id" TEXT PRIMARY KEY, ${props}, "createdAt" TEXT, "updatedAt" TEXT, "createdBy" TEXT)`);
  }
  db.exec(JOBS_DDL);
  for (const s of installStatements(manifest)) db.exec(s);
});

describe('SQLite capture', () => {
  test('a create, an update that changes paid to true and a delete each leave one job', () => {
    db.exec('DELETE FROM _svc_jobs');
    setContext(null);
    db.prepare(`INSERT INTO "Order" VALUES ('o1', 10, 0, 'hi', 'a', 'a', 'u1')`).run();
    setContext('u2', 3);
    db.prepare(`UPDATE "Order" SET paid = 1 WHERE id = 'o1'`).run();
    db.prepare(`UPDATE "Order" SET total = 11 WHERE id = 'o1'`).run(); // paid unchanged: no job
    db.prepare(`DELETE FROM "Order" WHERE id = 'o1'`).run();
    const found = jobs();
    expect(found.map((j) => [j.payload.trigger, j.payload.event.op, j.payload.event.callerId, j.maxAttempts])).toEqual([
      ['created', 'create', 'u1', 10],
      ['paidNow', 'update', 'u2', 3],
      ['created', 'delete', 'u2', 10],
    ]);
    // The depth of the writing transaction's context (a trigger-run function's write is one deeper).
    expect(found.map((j) => (j.payload as { depth?: number }).depth)).toEqual([0, 3, 3]);
    expect(found[0].payload.event).toMatchObject({ collection: 'Order', rowId: 'o1', before: null, after: { id: 'o1', total: 10, paid: 0, note: 'hi' } });
    expect(found[1].payload.event).toMatchObject({ before: { paid: 0 }, after: { paid: 1, total: 10 } });
    expect(found[2].payload.event).toMatchObject({ before: { id: 'o1', total: 11 }, after: null });
    expect(found.every((j) => j.task === 'svc_trigger' && /^[0-9a-f-]{36}$/.test(String(j.payload.event.id)))).toBe(true);
  });

  test('a rolled-back change leaves no job; a filter that does not match leaves none', () => {
    db.exec('DELETE FROM _svc_jobs');
    expect(() =>
      db.transaction(() => {
        db.prepare(`INSERT INTO "Order" VALUES ('o2', 1, 0, 'x', 'a', 'a', 'u1')`).run();
        throw new Error('rollback');
      })(),
    ).toThrow('rollback');
    db.prepare(`INSERT INTO "Order" VALUES ('o3', 1, 0, 'it''s skip', 'a', 'a', 'u1')`).run();
    db.prepare(`UPDATE "Order" SET paid = 0, total = 2 WHERE id = 'o3'`).run();
    db.prepare(`INSERT INTO "Note" VALUES ('n1', 't', 'a', 'a', 'u1')`).run();
    expect(jobs()).toEqual([]);
  });

  test("svc's triggers are listed and dropped", () => {
    const installed = db.prepare(listInstalledSql('sqlite')).all() as { name: string; tbl: string }[];
    expect(installed.map((r) => r.name).sort()).toEqual(['svc_trg_Order_created_create', 'svc_trg_Order_created_delete', 'svc_trg_Order_paidNow_update']);
    for (const s of dropStatements('sqlite', installed)) db.exec(s);
    expect(db.prepare(listInstalledSql('sqlite')).all()).toEqual([]);
  });
});

describe('sqlLiteral', () => {
  test('quotes strings, renders numbers and booleans per provider, refuses the rest', () => {
    expect(sqlLiteral("it's", 'sqlite')).toBe("'it''s'");
    expect(sqlLiteral(true, 'sqlite')).toBe('1');
    expect(sqlLiteral(false, 'postgresql')).toBe('FALSE');
    expect(sqlLiteral(null, 'postgresql')).toBe('NULL');
    expect(sqlLiteral(-2.5, 'sqlite')).toBe('-2.5');
    expect(() => sqlLiteral({}, 'sqlite')).toThrow(TypeError);
    expect(() => sqlLiteral(Number.NaN, 'sqlite')).toThrow(TypeError);
    expect(() => sqlLiteral('a\0b', 'sqlite')).toThrow(TypeError);
  });
});
