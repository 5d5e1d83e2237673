#!/usr/bin/env node
/**
 * What one log store line costs PostgreSQL, by how a batch is written (bench/README.md "Issue 35"):
 * the INSERT … SELECT over one `json` parameter svc used, the same over `jsonb`, `unnest` of one array
 * per column, and COPY (text format, through `pg-copy-streams` when it is installed; skipped
 * otherwise), each into a logged and an UNLOGGED table shaped like `_svc_logs`, with its three
 * indexes (id, time, reqId), the primary key only, or none. 200-line batches, 100 timed batches after
 * 10 warm-up ones; PostgreSQL's CPU (all its processes, bench/load.mjs) ÷ lines. Then what svc does
 * now (runtime/logs/log-batches.ts): one row per batch, its lines as one JSON text, in a table shaped
 * like `_svc_log_batches` (primary key and the `last` index), the text compressed (`MAIN`) or not
 * (`EXTERNAL`), the column `text` or `jsonb`, batches of 200 and 1,000 lines. Run on a quiet machine:
 *   node bench/log-store-sql.mjs            (SVC_BENCH_PG_URL: admin database, as bench/run.mjs)
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createDatabase } from './database.mjs';
import { postgresCpuMicros } from './load.mjs';
import { cleanup } from './processes.mjs';

const N = 200;
const ROUNDS = 100;
const COLUMNS =
  '("id", "time", "instance", "kind", "reqId", "method", "path", "status", "durationMs", "identityId", "identityKind", "severity", "source", "message")';
const TABLE = `("id" text NOT NULL, "time" timestamp(3) with time zone NOT NULL, "instance" text NOT NULL, "kind" text NOT NULL,
  "reqId" text, "method" text, "path" text, "status" integer, "durationMs" double precision, "identityId" text,
  "identityKind" text, "severity" integer, "source" text, "message" text)`;
/** One request line as the store keeps it, without `instance` (13 values). */
const line = () => [
  randomUUID(),
  new Date().toISOString(),
  'request',
  randomUUID(),
  'GET',
  '/api/Order/01a2225e-e8d0-7594-ad8d-3daa534463f1',
  200,
  3.2,
  null,
  'anonymous',
  null,
  null,
  null,
];
const selectOf = (fn, cast) =>
  `INSERT INTO t ${COLUMNS} SELECT r->>0, (r->>1)::timestamptz, 'i', r->>2, r->>3, r->>4, r->>5, (r->>6)::int, (r->>7)::float8, r->>8, r->>9, (r->>10)::int, r->>11, r->>12 FROM ${fn}($1::${cast}) AS r`;
const WAYS = {
  json: (rows) => [selectOf('json_array_elements', 'json'), [JSON.stringify(rows)]],
  jsonb: (rows) => [selectOf('jsonb_array_elements', 'jsonb'), [JSON.stringify(rows)]],
  unnest: (rows) => [
    `INSERT INTO t ${COLUMNS} SELECT a, b, 'i', c, d, e, f, g, h, i, j, k, l, m FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::float8[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[]) AS u(a, b, c, d, e, f, g, h, i, j, k, l, m)`,
    Array.from({ length: 13 }, (_, k) => rows.map((r) => r[k])),
  ],
};
const copyFrom = await import('pg-copy-streams').then(
  (m) => m.from,
  () => null,
);
const esc = (v) => (v === null ? '\\N' : String(v).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t'));

async function copy(client, rows) {
  const { pipeline } = await import('node:stream/promises');
  const { Readable } = await import('node:stream');
  const text = `${rows.map((r) => [r[0], r[1], 'i', ...r.slice(2)].map(esc).join('\t')).join('\n')}\n`;
  await pipeline(Readable.from([text]), client.query(copyFrom(`COPY t ${COLUMNS} FROM STDIN`)));
}

try {
  const db = await createDatabase(process.env.SVC_BENCH_PG_URL || 'postgres://root@127.0.0.1:5432/postgres');
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const out = [];
  for (const persistence of ['', 'UNLOGGED']) {
    for (const indexes of ['3 indexes', 'primary key', 'none']) {
      for (const way of [...Object.keys(WAYS), ...(copyFrom ? ['copy'] : [])]) {
        await client.query('DROP TABLE IF EXISTS t');
        await client.query(`CREATE ${persistence} TABLE t ${TABLE}`);
        if (indexes !== 'none') await client.query('ALTER TABLE t ADD PRIMARY KEY ("id")');
        if (indexes === '3 indexes') await client.query('CREATE INDEX ON t ("time"); CREATE INDEX ON t ("reqId")');
        const once = async () => {
          const rows = Array.from({ length: N }, line);
          if (way === 'copy') await copy(client, rows);
          else await client.query(...WAYS[way](rows));
        };
        for (let i = 0; i < 10; i++) await once();
        const before = postgresCpuMicros();
        for (let i = 0; i < ROUNDS; i++) await once();
        const perLine = (postgresCpuMicros() - before) / (N * ROUNDS);
        out.push(`| ${persistence || 'logged'} | ${indexes} | ${way} | ${perLine.toFixed(1)} |`);
        process.stderr.write(`${out.at(-1)}\n`);
      }
    }
  }
  for (const persistence of ['', 'UNLOGGED']) {
    for (const type of ['text', 'jsonb']) {
      for (const storage of ['EXTERNAL', 'MAIN']) {
        for (const size of [200, 1000]) {
          await client.query('DROP TABLE IF EXISTS b');
          await client.query(`CREATE ${persistence} TABLE b ("id" text PRIMARY KEY, "firstId" text NOT NULL, "first" timestamptz(3) NOT NULL,
            "last" timestamptz(3) NOT NULL, "instance" text NOT NULL, "count" integer NOT NULL, "entries" ${type} NOT NULL)`);
          await client.query('CREATE INDEX ON b ("last")');
          await client.query(`ALTER TABLE b ALTER COLUMN "entries" SET STORAGE ${storage}`);
          const once = async () => {
            const rows = Array.from({ length: size }, line);
            await client.query(`INSERT INTO b VALUES ($1, $2, $3, $4, 'i', $5, $6::${type})`, [
              rows.at(-1)[0],
              rows[0][0],
              rows[0][1],
              rows.at(-1)[1],
              size,
              JSON.stringify(rows),
            ]);
          };
          for (let i = 0; i < 10; i++) await once();
          const rounds = Math.round((N * ROUNDS) / size);
          const before = postgresCpuMicros();
          for (let i = 0; i < rounds; i++) await once();
          const perLine = (postgresCpuMicros() - before) / (size * rounds);
          out.push(`| ${persistence || 'logged'} | primary key, last | one row per ${size} lines, ${type} ${storage} | ${perLine.toFixed(1)} |`);
          process.stderr.write(`${out.at(-1)}\n`);
        }
      }
    }
  }
  await client.end();
  process.stdout.write(['| table | indexes | batch written by | PostgreSQL CPU µs per line |', '|---|---|---|--:|', ...out].join('\n') + '\n');
} finally {
  await cleanup();
}
