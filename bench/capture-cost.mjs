#!/usr/bin/env node
/**
 * What a capture trigger costs one SQLite INSERT (issue 33, the POST-with-a-trigger figure), without
 * HTTP: 20,000 autocommit one-row INSERTs into a Task table on a WAL file, with no trigger, with the
 * capture svc installs (the whole row as JSON, runtime/jobs/capture.ts), and with a capture that keeps
 * only the row id. Prints microseconds per INSERT. `node bench/capture-cost.mjs`.
 */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const FILE = join(tmpdir(), 'svc-capture-cost.db');
const JOBS = `CREATE TABLE "_svc_jobs" ("id" TEXT PRIMARY KEY, "task" TEXT NOT NULL, "payload" TEXT NOT NULL, "key" TEXT UNIQUE, "runAt" INTEGER NOT NULL, "attempts" INTEGER NOT NULL DEFAULT 0, "maxAttempts" INTEGER NOT NULL DEFAULT 10, "lastError" TEXT, "lockedAt" INTEGER, "lockedBy" TEXT, "createdAt" INTEGER NOT NULL)`;
const uuid = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;
const NOW = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
const row = `json_object('id', NEW."id", 'title', NEW."title", 'size', NEW."size", 'createdAt', NEW."createdAt", 'updatedAt', NEW."updatedAt", 'createdBy', NEW."createdBy")`;
const variants = {
  none: null,
  full: `INSERT INTO "_svc_jobs" SELECT lower(hex(randomblob(16))), 'svc_trigger', json_object('trigger','t','event',json_object('id', ${uuid}, 'op','create','collection','Task','rowId',NEW."id",'before',NULL,'after',${row},'at',strftime('%Y-%m-%dT%H:%M:%fZ','now'),'callerId',NEW."createdBy"),'depth',0), NULL, ${NOW}, 0, 10, NULL, NULL, NULL, ${NOW} WHERE TRUE`,
  idOnly: `INSERT INTO "_svc_jobs" SELECT lower(hex(randomblob(16))), 'svc_trigger', json_object('rowId', NEW."id"), NULL, 0, 0, 10, NULL, NULL, NULL, 0`,
};
for (const [name, body] of Object.entries(variants)) {
  rmSync(FILE, { force: true });
  rmSync(`${FILE}-wal`, { force: true });
  const db = new Database(FILE);
  db.pragma('journal_mode = WAL');
  db.exec(JOBS);
  db.exec(`CREATE TABLE "Task" ("id" TEXT PRIMARY KEY, "title" TEXT, "size" INTEGER, "createdAt" TEXT, "updatedAt" TEXT, "createdBy" TEXT)`);
  if (body) db.exec(`CREATE TRIGGER t AFTER INSERT ON "Task" FOR EACH ROW BEGIN ${body}; END`);
  const ins = db.prepare(`INSERT INTO "Task" VALUES (?, ?, ?, ?, ?, ?)`);
  const n = 20000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++)
    ins.run(`0190f0f0-0000-7000-8000-${String(i).padStart(12, '0')}`, `task ${i}`, i, '2026-11-28T00:00:00.000Z', '2026-11-28T00:00:00.000Z', null);
  console.log(name, (((performance.now() - t0) * 1000) / n).toFixed(1), 'µs/insert');
  db.close();
}
