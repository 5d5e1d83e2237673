/**
 * @module `GET /api/_admin/logs` and `GET /api/_admin/logs/stats` (DESIGN §9): the log store
 * (batches of entries, see logs/log-batches.ts) searched newest first, and requests and errors (status ≥ 500;
 * `clientErrors` counts 4xx) per time step. Entries reach the store at most about 1 s after they
 * happen.
 */
import { Router, type Request, type Response } from 'express';
import type { Database } from '../../data/database.js';
import { HttpError } from '../../errors.js';
import { raw, sql, type Sql } from '../../query/sql.js';
import { toDate, type Raw } from '../../auth/store.js';
import { LOG_KINDS } from '../../logs/log-store.js';
import { logEntries, newestEntries } from '../../logs/log-batches.js';
import { invalidParameter } from '../../query/list-params.js';
import { enumParam, intParam, isKey, pageOf, pageParams, requireAdmin, textParam, timeParam } from './params.js';

/** One entry as `GET /api/_admin/logs` answers it (absent fields are null). */
export interface AdminLogEntry {
  id: string;
  time: string;
  instance: string;
  kind: string;
  reqId: string | null;
  method: string | null;
  path: string | null;
  status: number | null;
  durationMs: number | null;
  identityId: string | null;
  identityKind: string | null;
  severity: number | null;
  source: string | null;
  message: string | null;
}

const orNull = <T>(v: unknown, f: (x: unknown) => T): T | null => (v === null || v === undefined ? null : f(v));

function decode(r: Raw): AdminLogEntry {
  return {
    id: String(r.id),
    time: toDate(r.time).toISOString(),
    instance: String(r.instance),
    kind: String(r.kind),
    reqId: orNull(r.reqId, String),
    method: orNull(r.method, String),
    path: orNull(r.path, String),
    status: orNull(r.status, Number),
    durationMs: orNull(r.durationMs, Number),
    identityId: orNull(r.identityId, String),
    identityKind: orNull(r.identityKind, String),
    severity: orNull(r.severity, Number),
    source: orNull(r.source, String),
    message: orNull(r.message, String),
  };
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** `status`: `404`, or a class `4xx` / `5xx`. */
function statusFilter(query: Record<string, unknown>): Sql | undefined {
  const v = textParam(query, 'status', 10);
  if (v === undefined) return undefined;
  if (/^[1-5]xx$/i.test(v)) {
    const low = Number(v[0]) * 100;
    return sql`"status" >= ${low} AND "status" < ${low + 100}`;
  }
  if (/^[1-5]\d\d$/.test(v)) return sql`"status" = ${Number(v)}`;
  throw invalidParameter('status', 'must be a status such as 404, or a class such as 4xx or 5xx');
}

/**
 * The time range of `from`/`to` (either may be absent): conditions on entries (`where`) and on the
 * batches that may hold them (`batches`, log-batches.ts).
 * @throws HttpError INVALID_PARAMETER when `from` is after `to`
 */
function range(query: Record<string, unknown>): { where: Sql[]; batches: Sql[] } {
  const from = timeParam(query, 'from');
  const to = timeParam(query, 'to');
  if (from && to && from > to) throw invalidParameter('from', 'must not be after to');
  return { where: timeBounds(from, to, sql`"time"`), batches: batchBounds(from, to) };
}

const timeBounds = (from: Date | undefined, to: Date | undefined, column: Sql): Sql[] => [
  ...(from ? [sql`${column} >= ${from}`] : []),
  ...(to ? [sql`${column} < ${to}`] : []),
];

/** Batches holding an entry in [from, to): their newest is not before `from`, their oldest before `to`. */
const batchBounds = (from: Date | undefined, to: Date | undefined): Sql[] => [
  ...(from ? [sql`b."last" >= ${from}`] : []),
  ...(to ? [sql`b."first" < ${to}`] : []),
];

/** Most steps one stats answer may hold. */
const MAX_STEPS = 2000;

/** The step's start, in epoch ms, as SQL for the provider (`stepMs` is a checked whole number, written inline). */
function bucketOf(provider: Database['provider'], stepMs: number): Sql {
  const step = raw(String(Math.trunc(stepMs)));
  return provider === 'sqlite'
    ? sql`(CAST(ROUND((julianday("time") - 2440587.5) * 86400000) AS INTEGER) / ${step}) * ${step}`
    : sql`(FLOOR(EXTRACT(EPOCH FROM "time") * 1000 / ${step}) * ${step})::bigint`;
}

/** The router; mount it under `/api/_admin`. Source: DESIGN §9 (logs, log store). */
export function logsRouter(db: Database): Router {
  const router = Router();

  router.get('/logs', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const page = pageParams(query, isKey);
    const { where, batches } = range(query);
    const status = statusFilter(query);
    if (status) where.push(status);
    const method = enumParam(query, 'method', METHODS);
    if (method) where.push(sql`"method" = ${method}`);
    const path = textParam(query, 'path', 500);
    if (path) where.push(sql`"path" LIKE ${`${path.replace(/[\\%_]/g, (c) => `\\${c}`)}%`} ESCAPE '\\'`);
    const holds: string[] = [];
    const identity = textParam(query, 'identity', 200);
    if (identity) {
      where.push(sql`"identityId" = ${identity}`);
      holds.push(identity);
    }
    const reqId = textParam(query, 'reqId', 200);
    if (reqId) {
      where.push(sql`"reqId" = ${reqId}`);
      holds.push(reqId);
    }
    const kind = enumParam(query, 'kind', LOG_KINDS);
    if (kind) where.push(sql`"kind" = ${kind}`);
    if (page.after) {
      where.push(sql`"id" < ${page.after}`);
      batches.push(sql`b."firstId" < ${page.after}`);
    }
    const rows = await newestEntries(db, { where, batches, holds, limit: page.pageSize + 1 });
    res.json(pageOf(rows.map(decode), page.pageSize, (e) => e.id));
  });

  router.get('/logs/stats', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const stepSeconds = intParam(query, 'step', 1, 31 * 86_400) ?? 60;
    const stepMs = stepSeconds * 1000;
    const to = timeParam(query, 'to') ?? new Date();
    const from = timeParam(query, 'from') ?? new Date(to.getTime() - 3_600_000);
    if (from > to) throw invalidParameter('from', 'must not be after to');
    if ((to.getTime() - from.getTime()) / stepMs > MAX_STEPS)
      throw invalidParameter('step', `gives more than ${MAX_STEPS} steps between from and to: choose a longer step`);
    const bucket = bucketOf(db.provider, stepMs);
    const rows = await db.query<Raw>(
      sql`SELECT ${bucket} AS "t", COUNT(*) AS "requests",
          SUM(CASE WHEN "status" >= 500 THEN 1 ELSE 0 END) AS "errors",
          SUM(CASE WHEN "status" >= 400 AND "status" < 500 THEN 1 ELSE 0 END) AS "clientErrors"
        FROM (${logEntries(db.provider, batchBounds(from, to))}) AS "l" WHERE "kind" = ${'request'} AND "time" >= ${from} AND "time" < ${to} GROUP BY 1 ORDER BY 1`,
    );
    const counted = new Map(rows.map((r) => [Number(r.t), r]));
    const steps: { time: string; requests: number; errors: number; clientErrors: number }[] = [];
    for (let t = Math.floor(from.getTime() / stepMs) * stepMs; t < to.getTime(); t += stepMs) {
      const r = counted.get(t);
      steps.push({
        time: new Date(t).toISOString(),
        requests: Number(r?.requests ?? 0),
        errors: Number(r?.errors ?? 0),
        clientErrors: Number(r?.clientErrors ?? 0),
      });
    }
    res.json({ from: from.toISOString(), to: to.toISOString(), step: stepSeconds, data: steps });
  });

  router.all(['/logs', '/logs/stats'], (req) => {
    throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on /api/_admin${req.path} (GET)`);
  });
  return router;
}
