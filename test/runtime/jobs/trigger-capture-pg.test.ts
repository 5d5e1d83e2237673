/**
 * Capture SQL on PostgreSQL (DESIGN §12, `runtime/jobs/capture.ts`) in a fresh database with Graphile
 * Worker's own schema (`runMigrations` of graphile-worker 0.17.3): a matching committed create, update
 * (with `changed`) and delete each add exactly one `svc_trigger` job to Graphile's jobs table (without
 * `add_job`'s NOTIFY: none arrives) with the trigger's `max_attempts`, before/after rows and the caller (`svc.caller`, or `createdBy` on
 * create); a rolled-back change and a non-matching one add none; svc's triggers and functions drop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runMigrations } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadAndValidate } from '../../../dist/generator/validate/index.js';
import { dropStatements, installStatements, listInstalledSql } from '../../../dist/runtime/jobs/capture.js';
import { createPgDatabase } from '../../support/backends.js';
import { TRIGGER_APP, writeAppFolder } from '../../support/trigger-app.js';

const root = mkdtempSync(join(tmpdir(), 'svc-capture-pg-'));
let drop = async () => {};
let client: pg.Client;

// Graphile Worker 0.17 keeps jobs in its private tables (the `jobs` view is read-only).
const JOBS =
  'SELECT t.identifier AS task_identifier, j.payload, j.max_attempts FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id ORDER BY j.id';
type Job = { task_identifier: string; payload: { trigger: string; event: Record<string, unknown> }; max_attempts: number };
const jobs = async () => (await client.query<Job>(JOBS)).rows.map((j) => [j.payload.trigger, j.payload.event.op, j.payload.event.callerId, j.max_attempts]);
// Every job is a svc_trigger job: checked on each read.
const onlyTriggers = async () => (await client.query<Job>(JOBS)).rows.every((j) => j.task_identifier === 'svc_trigger');

beforeAll(async () => {
  const db = await createPgDatabase('svc_trg');
  drop = db.drop;
  const dir = writeAppFolder(join(root, 'app'), TRIGGER_APP);
  const { manifest } = await loadAndValidate(dir, { DATABASE_URL: db.url });
  await runMigrations({ connectionString: db.url });
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
  // As the engine's prepare() does: the capture inserts jobs by task id.
  await client.query(`INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('svc_trigger') ON CONFLICT DO NOTHING`);
  await client.query('LISTEN "jobs:insert"');
  client.on('notification', (n) => notified.push(n.channel));
  await client.query(
    `CREATE TABLE "Order" ("id" uuid PRIMARY KEY, "total" numeric, "paid" boolean, "note" text, "createdAt" timestamptz, "updatedAt" timestamptz, "createdBy" uuid)`,
  );
  for (const s of installStatements(manifest)) await client.query(s);
}, 60_000);
afterAll(async () => {
  await client?.end();
  await drop();
  rmSync(root, { recursive: true, force: true });
});

/** NOTIFYs received on `jobs:insert`: the capture sends none (the writing server does, after its commit). */
const notified: string[] = [];
const U1 = '00000000-0000-7000-8000-000000000001';
const U2 = '00000000-0000-7000-8000-000000000002';
const O1 = '00000000-0000-7000-8000-0000000000a1';

describe('PostgreSQL capture', () => {
  test('create, changed update and delete each add one job; the caller comes from svc.caller or createdBy', async () => {
    await client.query(`INSERT INTO "Order" VALUES ($1, 10, false, 'hi', now(), now(), $2)`, [O1, U1]);
    await client.query('BEGIN');
    await client.query(`SELECT set_config('svc.caller', $1, true)`, [U2]);
    await client.query(`UPDATE "Order" SET paid = true WHERE id = $1`, [O1]);
    await client.query(`UPDATE "Order" SET total = 11 WHERE id = $1`, [O1]);
    await client.query('COMMIT');
    await client.query(`DELETE FROM "Order" WHERE id = $1`, [O1]);
    expect(await jobs()).toEqual([
      ['created', 'create', U1, 10],
      ['paidNow', 'update', U2, 3],
      ['created', 'delete', null, 10],
    ]);
    const { rows } = await client.query<Job>(JOBS);
    expect(rows[1].payload.event).toMatchObject({ collection: 'Order', rowId: O1, before: { paid: false }, after: { paid: true, total: 10 } });
    expect(rows[2].payload.event).toMatchObject({ before: { id: O1, total: 11 }, after: null });
    expect(await onlyTriggers()).toBe(true);
    // A notification sent in a transaction arrives at its commit: a round trip later, none came.
    await client.query('SELECT 1');
    expect(notified).toEqual([]);
  });

  test('a rolled-back change and a non-matching one add no job', async () => {
    await client.query('DELETE FROM graphile_worker._private_jobs');
    await client.query('BEGIN');
    await client.query(`INSERT INTO "Order" VALUES (gen_random_uuid(), 1, false, 'x', now(), now(), $1)`, [U1]);
    await client.query('ROLLBACK');
    await client.query(`INSERT INTO "Order" VALUES (gen_random_uuid(), 1, false, 'it''s skip', now(), now(), $1)`, [U1]);
    expect(await jobs()).toEqual([]);
  });

  test("svc's triggers and their functions are listed and dropped", async () => {
    const installed = (await client.query<{ name: string; tbl: string; fn: string }>(listInstalledSql('postgresql'))).rows;
    expect(installed.map((r) => r.name).sort()).toEqual(['svc_trg_Order_created', 'svc_trg_Order_created_delete', 'svc_trg_Order_paidNow']);
    for (const s of dropStatements('postgresql', installed)) await client.query(s);
    expect((await client.query(listInstalledSql('postgresql'))).rows).toEqual([]);
    expect((await client.query(`SELECT 1 FROM pg_proc WHERE proname LIKE 'svc_trg_fn_%'`)).rows).toEqual([]);
  });
});
