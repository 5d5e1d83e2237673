/**
 * The log store's batches (runtime/logs/log-batches.ts) on real SQLite and PostgreSQL databases, against
 * a plain sort of every entry:
 * - `newestEntries` answers the same page as sorting all entries, for batches of three instances whose
 *   id ranges overlap, with entry filters, text hints, batch bounds and page cursors;
 * - `pruneBatches` deletes whole batches and rewrites the one astride the age or the count bound, and
 *   says how many entries went;
 * - the view `_svc_logs` shows one row per entry;
 * - instances preparing the store at the same moment all start (PostgreSQL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { insertBatch, newestEntries, prepareLogStore, pruneBatches, type StoredEntry } from '../../../dist/runtime/logs/log-batches.js';
import { raw, sql, type Sql } from '../../../dist/runtime/query/sql.js';
import { backends, createPgDatabase, type Backend } from '../../support/backends.js';

/** The table as the generated migration makes it (generator/emit/system-models.ts `SvcLogBatch`). */
const TABLE: Record<Backend, string> = {
  sqlite: `CREATE TABLE "_svc_log_batches" ("id" TEXT NOT NULL PRIMARY KEY, "firstId" TEXT NOT NULL, "first" DATETIME NOT NULL,
    "last" DATETIME NOT NULL, "instance" TEXT NOT NULL, "count" INTEGER NOT NULL, "entries" TEXT NOT NULL)`,
  postgresql: `CREATE TABLE "_svc_log_batches" ("id" TEXT NOT NULL PRIMARY KEY, "firstId" TEXT NOT NULL, "first" TIMESTAMPTZ(3) NOT NULL,
    "last" TIMESTAMPTZ(3) NOT NULL, "instance" TEXT NOT NULL, "count" INTEGER NOT NULL, "entries" TEXT NOT NULL)`,
};

/** A small seeded generator (mulberry32), so a failure names a seed that repeats it. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const T0 = Date.parse('2026-11-28T10:00:00.000Z');
const idAt = (ms: number, n: number) => `${ms.toString(16).padStart(12, '0')}-${String(n).padStart(6, '0')}`;

describe.each(backends())('log batches on %s', (backend) => {
  let db: Database;
  let done: () => Promise<void>;
  const iso = (ms: number) => (backend === 'sqlite' ? new Date(ms).toISOString().replace('Z', '+00:00') : new Date(ms).toISOString());
  const all: (StoredEntry & { instance: string })[] = [];

  beforeAll(async () => {
    if (backend === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'svc-log-batches-'));
      db = await openDatabase('sqlite', `file:${join(dir, 'app.db')}`);
      done = async () => rmSync(dir, { recursive: true, force: true });
    } else {
      const pg = await createPgDatabase('svc_log_batches');
      db = await openDatabase('postgresql', pg.url);
      done = pg.drop;
    }
    await db.query(raw(TABLE[backend]));
    expect(await prepareLogStore(db)).toBe(true);
    expect(await prepareLogStore(db)).toBe(false);
    // Three instances write batches of 1–40 entries over the same ten minutes: their id ranges overlap.
    const rnd = random(7);
    let n = 0;
    for (const instance of ['a', 'b', 'c']) {
      let ms = T0;
      for (let b = 0; b < 25; b++) {
        const batch: StoredEntry[] = [];
        for (let i = 1 + Math.floor(rnd() * 40); i > 0; i--) {
          ms += Math.floor(rnd() * 600);
          const e: StoredEntry = { id: idAt(ms, n++), time: iso(ms), kind: rnd() < 0.8 ? 'request' : 'client', reqId: `r${Math.floor(rnd() * 200)}` };
          if (e.kind === 'request') e.status = rnd() < 0.1 ? 500 : 200;
          batch.push(e);
        }
        await insertBatch(db, instance, batch);
        all.push(...batch.map((e) => ({ ...e, instance })));
      }
    }
  });

  afterAll(async () => {
    await db?.close();
    await done?.();
  });

  it('shows one row per entry through the view _svc_logs', async () => {
    const rows = await db.query<{ id: unknown; instance: unknown; status: unknown }>(sql`SELECT "id", "instance", "status" FROM "_svc_logs" ORDER BY "id"`);
    const want = [...all].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(rows.map((r) => [r.id, r.instance, r.status === null ? null : Number(r.status)])).toEqual(want.map((e) => [e.id, e.instance, e.status ?? null]));
  });

  it('pages newest first exactly like a sort of every entry, with filters, text hints, batch bounds and cursors', async () => {
    const rnd = random(11);
    for (let round = 0; round < 40; round++) {
      const where: Sql[] = [];
      const batches: Sql[] = [];
      const holds: string[] = [];
      let keep = (_e: StoredEntry) => true;
      const pick = rnd();
      if (pick < 0.25) {
        const reqId = `r${Math.floor(rnd() * 200)}`;
        where.push(sql`"reqId" = ${reqId}`);
        holds.push(reqId);
        keep = (e) => e.reqId === reqId;
      } else if (pick < 0.5) {
        where.push(sql`"status" >= ${500}`);
        keep = (e) => (e.status ?? 0) >= 500;
      } else if (pick < 0.75) {
        const from = new Date(T0 + Math.floor(rnd() * 400_000));
        where.push(sql`"time" >= ${from}`);
        batches.push(sql`b."last" >= ${from}`);
        keep = (e) => Date.parse(e.time) >= from.getTime();
      }
      const limit = 1 + Math.floor(rnd() * 60);
      const want = all.filter(keep).sort((x, y) => (x.id < y.id ? 1 : -1));
      // Page through to the end with cursors, as the console does.
      let after: string | undefined;
      for (let page = 0; page < 200; page++) {
        const cursor = after === undefined ? [] : [sql`"id" < ${after}`];
        const cursorBatches = after === undefined ? [] : [sql`b."firstId" < ${after}`];
        const got = await newestEntries(db, { where: [...where, ...cursor], batches: [...batches, ...cursorBatches], holds, limit });
        const expected = want.filter((e) => after === undefined || e.id < after).slice(0, limit);
        expect(
          got.map((e) => e.id),
          `round ${round}, page ${page}`,
        ).toEqual(expected.map((e) => e.id));
        if (got.length < limit) break;
        after = String(got.at(-1)!.id);
      }
    }
  });

  it('prunes whole batches and rewrites the one astride the age bound, then the count bound', async () => {
    const count = async () => Number((await db.query<{ n: unknown }>(sql`SELECT COUNT(*) AS "n" FROM "_svc_logs"`))[0].n);
    const before = await count();
    expect(before).toBe(all.length);
    // Age: a cutoff inside some batch of every instance.
    const cutoff = new Date(T0 + 120_000);
    const older = all.filter((e) => Date.parse(e.time) < cutoff.getTime()).length;
    expect(older).toBeGreaterThan(0);
    expect(await pruneBatches(db, cutoff, 1_000_000)).toBe(older);
    expect(await count()).toBe(before - older);
    const oldest = await db.query<{ t: unknown }>(sql`SELECT MIN("time") AS "t" FROM "_svc_logs"`);
    expect(new Date(String(oldest[0].t)).getTime()).toBeGreaterThanOrEqual(cutoff.getTime());
    // Count: keep 37 entries (a number no batch boundary gives), newest by batch.
    const left = before - older;
    expect(await pruneBatches(db, cutoff, 37)).toBe(left - 37);
    expect(await count()).toBe(37);
    const newest = [...all].sort((x, y) => (x.id < y.id ? 1 : -1))[0];
    expect((await db.query(sql`SELECT "id" FROM "_svc_logs" WHERE "id" = ${newest.id}`)).length).toBe(1);
    // Nothing more to do: nothing deleted.
    expect(await pruneBatches(db, cutoff, 37)).toBe(0);
  });
});

describe('instances starting together on postgresql', () => {
  it('prepares the store once, and none of six instances preparing it at the same moment fails', async () => {
    const pg = await createPgDatabase('svc_log_prepare');
    const dbs: Database[] = [];
    try {
      for (let i = 0; i < 6; i++) dbs.push(await openDatabase('postgresql', pg.url));
      await dbs[0].query(raw(TABLE.postgresql));
      const results = await Promise.allSettled(dbs.map((db) => prepareLogStore(db)));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      const [row] = await dbs[0].query<{ p: unknown; k: unknown }>(
        sql`SELECT (SELECT relpersistence FROM pg_class WHERE relname = '_svc_log_batches') AS "p", (SELECT relkind FROM pg_class WHERE relname = '_svc_logs') AS "k"`,
      );
      expect(row).toEqual({ p: 'u', k: 'v' });
      expect(await prepareLogStore(dbs[1])).toBe(false);
    } finally {
      for (const db of dbs) await db.close();
      await pg.drop();
    }
  });
});
