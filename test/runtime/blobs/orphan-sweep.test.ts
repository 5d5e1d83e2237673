/**
 * The sweep of orphaned blob files (runtime/blobs/orphan-sweep.ts) over a real local store and a real
 * table, on both databases: version prefixes older than the grace period that no row names are deleted
 * (a crash before the commit, a replaced blob whose release failed, a deleted row), while a committed
 * blob, a fresh upload, and keys the uploads never write are kept; lookups go in batches (more rows
 * than one batch); agent attachments (`_agent/<identity>/<upload>/`) go when their row is gone or no
 * message used them within a day; the timing comes from the environment and a bad value stops the start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { backends, createPgDatabase, type Backend } from '../../support/backends.js';
import { localFiles } from '../../support/blobs.js';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { ident, raw, sql } from '../../../dist/runtime/query/sql.js';
import { LocalBlobStore } from '../../../dist/runtime/blobs/store.js';
import { OrphanSweep, sweepTiming } from '../../../dist/runtime/blobs/orphan-sweep.js';
import type { AppManifest } from '../../../dist/runtime/manifest.js';
import type { Logger } from '../../../dist/runtime/log.js';

const HOUR_MS = 60 * 60 * 1000;
const logger = { info: () => {}, debug: () => {}, warn: () => {} } as unknown as Logger;
const manifest = {
  collections: [
    {
      name: 'Product',
      properties: [
        { name: 'title', type: 'string' },
        { name: 'image', type: 'blob' },
        { name: 'manual', type: 'blob' },
      ],
    },
    { name: 'Note', properties: [{ name: 'text', type: 'string' }] },
  ],
} as unknown as AppManifest;

function sweepSuite(backend: Backend): void {
  describe(`orphan sweep on ${backend}`, () => {
    let dir: string;
    let db: Database;
    let dropPg: (() => Promise<void>) | undefined;
    let store: LocalBlobStore;

    /** Writes a file under the store (aged `ageMs` when given); returns its version prefix. */
    const put = (key: string, ageMs = 0): string => {
      const path = join(dir, 'blobs', ...key.split('/'));
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, key);
      if (ageMs > 0) utimesSync(path, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs));
      return `${key.split('/').slice(0, 4).join('/')}/`;
    };
    const stored = (prefix: string) =>
      JSON.stringify({ name: 'f', size: 1, contentType: 'text/plain', sha256: 'x', url: '/u', prefix, uploadedAt: new Date().toISOString() });
    const insert = async (id: string, image: string | null, manual: string | null = null) => {
      await db.query({ text: 'INSERT INTO "Product" ("id", "image", "manual") VALUES (?, ?, ?)', values: [id, image, manual] });
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'svc-sweep-'));
      let url = `file:${join(dir, 'app.db')}`;
      if (backend === 'postgresql') {
        const pg = await createPgDatabase();
        url = pg.url;
        dropPg = pg.drop;
      }
      db = await openDatabase(backend, url);
      const idType = backend === 'postgresql' ? 'uuid' : 'TEXT';
      await db.query(raw(`CREATE TABLE "Product" ("id" ${idType} PRIMARY KEY, "title" TEXT, "image" TEXT, "manual" TEXT)`));
      // As the generator emits it (generator/emit/system-models.ts).
      const time = backend === 'postgresql' ? 'TIMESTAMPTZ(3)' : 'DATETIME';
      await db.query(
        raw(
          `CREATE TABLE "_svc_agent_uploads" ("id" TEXT PRIMARY KEY, "identityId" TEXT NOT NULL, "threadId" TEXT, "name" TEXT NOT NULL, "type" TEXT NOT NULL, "size" INTEGER NOT NULL, "storageKey" TEXT NOT NULL, "createdAt" ${time} NOT NULL)`,
        ),
      );
      store = new LocalBlobStore(join(dir, 'blobs'));
    });
    afterAll(async () => {
      await db?.close();
      await dropPg?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it('deletes old unreferenced versions and keeps committed, fresh and foreign files', async () => {
      const row = randomUUID();
      const committed = put(`Product/${row}/image/${randomUUID()}/original`, 2 * HOUR_MS);
      put(`${committed}thumb-100x100`, 2 * HOUR_MS);
      const manual = put(`Product/${row}/manual/${randomUUID()}/original`, 2 * HOUR_MS);
      await insert(row, stored(committed), stored(manual));
      // The version a replacement left behind (its release failed), and a crash before any commit.
      const replaced = put(`Product/${row}/image/${randomUUID()}/original`, 2 * HOUR_MS);
      const crashed = put(`Product/${randomUUID()}/image/${randomUUID()}/original`, 2 * HOUR_MS);
      // An upload in flight: its original is fresh (a thumbnail of an orphan is old, its original fresh).
      const fresh = put(`Product/${randomUUID()}/image/${randomUUID()}/original`);
      const mixed = put(`Product/${randomUUID()}/image/${randomUUID()}/thumb-100x100`, 2 * HOUR_MS);
      put(`${mixed}original`);
      // Keys no upload writes: not a GUID row, not a blob field, too deep, another collection.
      const foreign = [
        `Product/not-a-guid/image/${randomUUID()}/original`,
        `Product/${randomUUID()}/title/${randomUUID()}/original`,
        `Product/${randomUUID()}/image/${randomUUID()}/deep/original`,
        `Note/${randomUUID()}/text/${randomUUID()}/original`,
      ];
      for (const key of foreign) put(key, 2 * HOUR_MS);
      const sweep = new OrphanSweep({ store, db, manifest: () => manifest, logger });
      const result = await sweep.run();
      expect(result).toEqual({ scanned: 6, deleted: 2 });
      const left = localFiles(join(dir, 'blobs'));
      for (const prefix of [replaced, crashed])
        expect(
          left.some((f) => f.startsWith(prefix)),
          prefix,
        ).toBe(false);
      for (const prefix of [committed, manual, fresh, mixed])
        expect(
          left.some((f) => f.startsWith(prefix)),
          prefix,
        ).toBe(true);
      for (const key of foreign) expect(left).toContain(key);
      expect(left).toContain(`${committed}thumb-100x100`);
      // A grace period of 0 takes the fresh ones too; the committed ones stay.
      expect(await new OrphanSweep({ store, db, manifest: () => manifest, logger, graceMs: 0 }).run()).toEqual({ scanned: 4, deleted: 2 });
      expect(localFiles(join(dir, 'blobs')).filter((f) => f.startsWith('Product/') && f.split('/').length === 5 && !/\/title\/|not-a-guid/.test(f))).toEqual(
        [`${committed}original`, `${committed}thumb-100x100`, `${manual}original`].sort(),
      );
      await sweep.close();
    });

    it('agent attachments: an upload without its row goes after the grace period, one never used goes after a day, a used one stays', async () => {
      const identity = randomUUID();
      const upload = async (threadId: string | null, createdAgoMs: number, fileAgeMs: number) => {
        const id = randomUUID();
        put(`_agent/${identity}/${id}/original`, fileAgeMs);
        await db.query(
          sql`INSERT INTO ${ident('_svc_agent_uploads')} ("id", "identityId", "threadId", "name", "type", "size", "storageKey", "createdAt")
              VALUES (${id}, ${identity}, ${threadId}, ${'a.png'}, ${'image/png'}, ${1}, ${`_agent/${identity}/${id}/original`}, ${new Date(Date.now() - createdAgoMs)})`,
        );
        return `_agent/${identity}/${id}/`;
      };
      const used = await upload(randomUUID(), 48 * HOUR_MS, 48 * HOUR_MS);
      const waiting = await upload(null, 2 * HOUR_MS, 2 * HOUR_MS);
      const stale = await upload(null, 25 * HOUR_MS, 25 * HOUR_MS);
      const rowless = `_agent/${identity}/${randomUUID()}/`;
      put(`${rowless}original`, 2 * HOUR_MS);
      const fresh = `_agent/${identity}/${randomUUID()}/`;
      put(`${fresh}original`);
      put(`_agent/${identity}/not-an-upload/original`, 2 * HOUR_MS);
      const result = await new OrphanSweep({ store, db, manifest: () => ({ collections: [] }) as unknown as AppManifest, logger }).run();
      expect(result).toEqual({ scanned: 5, deleted: 2 });
      const left = localFiles(join(dir, 'blobs')).filter((f) => f.startsWith('_agent/'));
      expect(left.sort()).toEqual([`${used}original`, `${waiting}original`, `${fresh}original`, `_agent/${identity}/not-an-upload/original`].sort());
      for (const gone of [stale, rowless]) expect(left).not.toContain(`${gone}original`);
      const rows = await db.query(sql`SELECT "id" FROM ${ident('_svc_agent_uploads')} WHERE "identityId" = ${identity}`);
      expect(rows.map((r) => `_agent/${identity}/${String(r.id)}/`).sort()).toEqual([used, waiting].sort());
    });

    it('looks rows up in batches: more versions than one statement checks', async () => {
      const kept: string[] = [];
      const orphans: string[] = [];
      for (let i = 0; i < 230; i++) {
        const row = randomUUID();
        const prefix = put(`Product/${row}/image/${randomUUID()}/original`, 2 * HOUR_MS);
        if (i % 3 === 0) {
          await insert(row, stored(prefix));
          kept.push(prefix);
        } else orphans.push(prefix);
      }
      const result = await new OrphanSweep({ store, db, manifest: () => manifest, logger }).run();
      expect(result.deleted).toBe(orphans.length);
      const left = localFiles(join(dir, 'blobs'));
      for (const prefix of kept) expect(left).toContain(`${prefix}original`);
      for (const prefix of orphans) expect(left).not.toContain(`${prefix}original`);
    });
  });
}

for (const backend of backends()) sweepSuite(backend);

describe('sweep timing', () => {
  it('reads the environment, with defaults, and refuses bad values', () => {
    expect(sweepTiming({})).toEqual({ graceMs: HOUR_MS, intervalMs: HOUR_MS });
    expect(sweepTiming({ SVC_BLOB_SWEEP_GRACE_MS: '0', SVC_BLOB_SWEEP_INTERVAL_MS: '500' })).toEqual({ graceMs: 0, intervalMs: 500 });
    for (const [name, value] of [
      ['SVC_BLOB_SWEEP_GRACE_MS', '-1'],
      ['SVC_BLOB_SWEEP_GRACE_MS', '1.5'],
      ['SVC_BLOB_SWEEP_GRACE_MS', 'soon'],
      ['SVC_BLOB_SWEEP_INTERVAL_MS', '0'],
      ['SVC_BLOB_SWEEP_INTERVAL_MS', '1e400'],
    ])
      expect(() => sweepTiming({ [name]: value }), `${name}=${value}`).toThrow(new RegExp(name));
  });
});
