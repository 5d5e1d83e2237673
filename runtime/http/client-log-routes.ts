/**
 * @module The client log (SPEC §4.9, §2 "Client log event"): `POST /api/_log` takes a JSON array of
 * `{ message, severity? }` events from an authenticated caller (401 anonymous, 400 for a body that is
 * not valid JSON or not an array of valid events, 200 `{ "data": <count> }`). Each event becomes one
 * structured log line (pino level from the severity: 0 fatal … 5 trace, default 3 info) carrying the
 * caller, and a row of the `_log` table, and an entry of the log store (DESIGN §9, kind `client`). `GET /api/_log` lets admin service accounts read the rows back
 * with the list parameters of SPEC §4.2 (oldest first; `filter`, `sortBy`, `pageNo`, `pageSize`,
 * `lastKey`, `count`), with the user's id in `createdBy`.
 *
 * SPEC §8 ("no sampling, no rate limiting"): by default every post is admitted whole. An operator may
 * opt in to per-identity limits with svc.json `logs.clientLog` (`ClientLogLimiter`: posts, events and
 * message characters per minute; past them 429 `RATE_LIMITED` with `Retry-After`, nothing stored).
 * Either way client lines never push request lines out of the log store (each kind has its own
 * buffer), and `_log` is pruned by the log store (`logs.clientLog.retentionDays`,
 * `maxRows`). Messages are stored as `storableText` makes them (lone surrogates and NUL → U+FFFD).
 */
import { Router } from 'express';
import { Ajv, type ValidateFunction } from 'ajv';
import { v7 as uuidv7 } from 'uuid';
import type { AppManifest, Collection } from '../manifest.js';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { HttpError, type ErrorDetail } from '../errors.js';
import { listItems } from '../data/read.js';
import { parseListParams } from '../query/list-params.js';
import { callerOf } from '../auth/caller.js';
import { TABLE } from '../auth/store.js';
import { join, sql } from '../query/sql.js';
import { storableText, type LogStore } from '../logs/log-store.js';
import { ClientLogLimiter, limitsClientLog, type ClientLogLimits } from '../logs/client-log-limit.js';
import { CLIENT_LOG_DEFAULTS } from '../contract/settings.js';

/** Events accepted per request, and characters per message. */
const MAX_EVENTS = 1000;
const MAX_MESSAGE = 10_000;
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

let compiled: ValidateFunction | undefined;
/** The `_log` body check, compiled on the first `_log` post (not at start-up). */
const validate = (body: unknown): boolean => (compiled ??= new Ajv({ allErrors: true }).compile(LOG_BODY))(body);
const LOG_BODY = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_EVENTS,
  items: {
    type: 'object',
    required: ['message'],
    properties: { message: { type: 'string', maxLength: MAX_MESSAGE }, severity: { type: 'integer', minimum: 0, maximum: 5 } },
  },
};

/** The `_log` table seen as a collection, so the list machinery of SPEC §4.2 reads it. */
const LOG_COLLECTION: Collection = {
  name: '_log',
  search: false,
  access: [],
  policies: [],
  children: [],
  properties: [
    { name: 'message', type: 'text', required: true },
    { name: 'severity', type: 'integer', required: true },
    { name: 'username', type: 'string', required: false },
    { name: 'reqId', type: 'string', required: false },
  ],
};

/** The limiter of `logs.clientLog`, or none when no limit is set (the default, SPEC §8). */
const clientLogLimiter = (settings: ClientLogLimits): ClientLogLimiter | undefined => (limitsClientLog(settings) ? new ClientLogLimiter(settings) : undefined);

/**
 * The `_log` router (mounted under `/api`).
 * Source: SPEC §4.9, §5.6 (`_log` always requires authentication), §8 (no sampling); limits per
 * identity: svc.json `logs.clientLog` (docs/console.md).
 * @param limiter - the per-identity limits (default: from `logs.clientLog` of the log store, else of the manifest)
 */
export function clientLogRouter(
  db: Database,
  logger: Logger,
  manifest: AppManifest,
  logs?: LogStore,
  limiter: ClientLogLimiter | undefined = clientLogLimiter(logs?.clientLog ?? { ...CLIENT_LOG_DEFAULTS, ...manifest.settings.logs?.clientLog }),
): Router {
  const router = Router();
  const logManifest: AppManifest = { ...manifest, collections: [LOG_COLLECTION] };
  router.post('/_log', async (req, res) => {
    const caller = callerOf(res);
    if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', '_log requires authentication');
    if (req.body === undefined) throw new HttpError('VALIDATION_FAILED', 'the body must be a JSON array of log events (Content-Type: application/json)');
    if (!validate(req.body)) {
      const details: ErrorDetail[] = (compiled?.errors ?? []).map((e) => ({
        path: e.instancePath || '/',
        message: `${e.instancePath || 'body'} ${e.message ?? 'is invalid'}`,
      }));
      throw new HttpError('VALIDATION_FAILED', `invalid log events: ${details.map((d) => d.message).join('; ')}`, { details });
    }
    const events = req.body as { message: string; severity?: number }[];
    let characters = 0;
    for (const e of events) characters += e.message.length;
    const wait = limiter?.take(`${caller.kind}:${caller.id ?? caller.username}`, { events: events.length, characters });
    if (wait) {
      throw new HttpError('RATE_LIMITED', `too many client log events from this identity; try again in ${wait} s (svc.json logs.clientLog)`, {
        headers: { 'retry-after': String(wait) },
      });
    }
    const rows = events.map((e) => ({
      id: uuidv7(),
      message: storableText(e.message),
      severity: e.severity ?? 3,
      username: caller.username,
      reqId: res.locals.reqId as string,
      createdBy: caller.id,
    }));
    const now = new Date();
    const values = rows.map((r) => sql`(${r.id}, ${r.message}, ${r.severity}, ${r.username}, ${r.reqId}, ${now}, ${now}, ${r.createdBy})`);
    await db.query(
      sql`INSERT INTO ${TABLE.log} ("id", "message", "severity", "username", "reqId", "createdAt", "updatedAt", "createdBy") VALUES ${join(values, ', ')}`,
    );
    for (const row of rows) {
      logs?.record({
        kind: 'client',
        reqId: row.reqId,
        identityId: caller.id,
        identityKind: caller.kind,
        severity: row.severity,
        message: row.message,
      });
      logger[LEVELS[row.severity]](
        {
          reqId: row.reqId,
          source: 'client',
          severity: row.severity,
          user: { id: caller.id, username: caller.username, kind: caller.kind },
          clientMessage: row.message,
        },
        'client log',
      );
    }
    res.json({ data: rows.length });
  });
  router.get('/_log', async (req, res) => {
    const caller = callerOf(res);
    if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'reading _log requires authentication');
    if (!caller.admin) throw new HttpError('FORBIDDEN', 'only admin service accounts may read _log');
    const params = parseListParams(req.query as Record<string, unknown>, LOG_COLLECTION, [LOG_COLLECTION]);
    const { data, count } = await listItems({ manifest: logManifest, db, collection: LOG_COLLECTION }, params);
    if (params.count === 'none') return res.json({ data });
    if (params.count === 'only') return res.json({ data: [], meta: { count } });
    res.json({ data, items: data, meta: { count } });
  });
  router.all('/_log', (req) => {
    throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
  });
  return router;
}
