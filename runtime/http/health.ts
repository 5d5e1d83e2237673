/**
 * @module Liveness and readiness for load balancers and orchestrators (README "Operations"):
 * `GET /api/_health` answers 200 as long as the process serves; `GET /api/_ready` answers 200 only when
 * the database answers, no migration is pending and (when configured) Redis answers, else 503 with the
 * DESIGN §4 error body plus one field per check. Framework-free: each endpoint is a function of its
 * dependencies returning `{ status, body }`; `healthRouter` mounts them on Express.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Router } from 'express';
import type { ErrorBody } from '../errors.js';

/** What readiness checks. */
export interface HealthDeps {
  /** Resolves when the database answers (e.g. `SqlDriver.ping`, a `SELECT 1`); rejects otherwise. */
  ping(): Promise<void>;
  /** Names of the migrations on disk not applied to the database (`pendingMigrations` in data/migration-state.ts). */
  pendingMigrations(): Promise<string[]>;
  /** `REDIS_URL`, else svc.json `realtime.redis`; absent when Redis is not used. */
  redisUrl?: string;
  /** True while the instance drains before it stops (SIGTERM with `svc serve --drain`): not ready. */
  draining?: () => boolean;
  /** Longest wait for each check, in ms (default 2000); a check slower than that is "down". */
  timeoutMs?: number;
}

export type CheckState = 'ok' | 'down' | 'pending' | 'unknown';

/** 200 `{ status: "ready", database: "ok", migrations: "ok", redis?: "ok" }`, or 503 with the checks. */
export interface ReadyBody {
  status: 'ready' | 'unavailable';
  database: CheckState;
  migrations: CheckState;
  redis?: CheckState;
  /** Present (true) while the instance drains before it stops: the other checks are not run. */
  draining?: true;
}

export interface HealthResult {
  status: number;
  body: object;
}

/** Seconds a client should wait before asking again after a 503 (`Retry-After`). */
export const READY_RETRY_AFTER_SECONDS = 5;

/**
 * Liveness: 200 `{ "status": "ok" }` whenever the process can answer; it checks nothing else, so an
 * orchestrator restarts only a process that no longer serves. Source: issue 10 (reliability).
 */
export async function liveness(): Promise<HealthResult> {
  return { status: 200, body: { status: 'ok' } };
}

/** Rejects with `message` after `ms` unless `promise` settles first. */
function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Readiness: runs every check at once, each bounded by `deps.timeoutMs`.
 * @returns 200 `{ status: "ready", database: "ok", migrations: "ok" }` (plus `redis: "ok"` when
 *   configured); else 503 `{ error, code: "SERVICE_UNAVAILABLE", details: [{ path: "/database" |
 *   "/migrations" | "/redis", message }], status: "unavailable", database, migrations, redis? }` where each
 *   check is "ok", "down", "pending" (migrations not applied) or "unknown" (the database is down).
 *   Messages never carry addresses or driver errors (the endpoint is anonymous). While the instance
 *   drains (`deps.draining()`), 503 at once with `draining: true` and the path `/` (docs/deploy.md).
 */
export async function readiness(deps: HealthDeps): Promise<HealthResult> {
  if (deps.draining?.()) return { status: 503, body: drainingBody() };
  const ms = deps.timeoutMs ?? 2000;
  const secs = `${ms / 1000} s`;
  const details: { path: string; message: string }[] = [];
  const [database, migrations, redis] = await Promise.all([
    within(deps.ping(), ms, 'timeout').then(
      (): CheckState => 'ok',
      (): CheckState => {
        details.push({ path: '/database', message: `the database did not answer within ${secs}` });
        return 'down';
      },
    ),
    within(deps.pendingMigrations(), ms, 'timeout').then(
      (pending): CheckState => {
        if (pending.length === 0) return 'ok';
        details.push({ path: '/migrations', message: `${pending.length} migration(s) not applied: run svc migrate` });
        return 'pending';
      },
      (): CheckState => 'unknown',
    ),
    deps.redisUrl === undefined
      ? undefined
      : within(pingRedis(deps.redisUrl, ms), ms, 'timeout').then(
          (): CheckState => 'ok',
          (): CheckState => {
            details.push({ path: '/redis', message: `Redis did not answer PING within ${secs}` });
            return 'down';
          },
        ),
  ]);
  const checks: Omit<ReadyBody, 'status'> = { database, migrations, ...(redis ? { redis } : {}) };
  if (migrations === 'unknown' && database === 'ok') {
    details.push({ path: '/migrations', message: 'the applied migrations could not be read' });
  }
  if (details.length === 0) return { status: 200, body: { status: 'ready', ...checks } };
  const failing = details.map((d) => d.path.slice(1)).join(', ');
  const body: ErrorBody & ReadyBody = {
    error: `not ready: ${failing} not available`,
    code: 'SERVICE_UNAVAILABLE',
    details,
    status: 'unavailable',
    ...checks,
  };
  return { status: 503, body };
}

/** The 503 body of readiness while the instance drains before it stops (DESIGN §4 body). */
function drainingBody(): ErrorBody & ReadyBody {
  return {
    error: 'not ready: the server is shutting down',
    code: 'SERVICE_UNAVAILABLE',
    details: [{ path: '/', message: 'the server is shutting down' }],
    status: 'unavailable',
    database: 'unknown',
    migrations: 'unknown',
    draining: true,
  };
}

/**
 * Sends `PING` in RESP to the Redis server of `url` (`redis://[user:password@]host[:port][/db]`,
 * `rediss://` over TLS) and resolves on `+PONG`; `AUTH` is sent first when the URL has a password.
 * @throws Error on a refused connection, an error reply or no reply within `timeoutMs`
 */
export function pingRedis(url: string, timeoutMs = 2000): Promise<void> {
  const u = new URL(url);
  const port = Number(u.port || 6379);
  const host = u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  const command = (...args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
  const password = decodeURIComponent(u.password);
  const user = decodeURIComponent(u.username);
  const auth = password ? command('AUTH', ...(user ? [user] : []), password) : '';
  const expected = (auth ? ['+OK\r\n'] : []).concat('+PONG\r\n').join('');
  return new Promise((ok, fail) => {
    const socket: Socket = u.protocol === 'rediss:' ? tlsConnect({ host, port, servername: host }) : tcpConnect({ host, port });
    let reply = '';
    const done = (err?: Error) => {
      socket.destroy();
      if (err) fail(err);
      else ok();
    };
    socket.setTimeout(timeoutMs, () => done(new Error('Redis did not answer')));
    socket.on('error', (err) => done(err));
    socket.once(u.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => socket.write(auth + command('PING')));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.startsWith('-') || reply.includes('\r\n-')) done(new Error(`Redis refused: ${reply.split('\r\n').find((l) => l.startsWith('-'))}`));
      else if (reply.length >= expected.length) done(reply === expected ? undefined : new Error('unexpected Redis reply'));
    });
  });
}

/**
 * `GET /_health` and `GET /_ready`, answered without authentication and never cached; a 503 carries
 * `Retry-After`. Mount before authentication, under `/api`.
 */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  const answer = (check: () => Promise<HealthResult>) => async (_req: unknown, res: import('express').Response) => {
    const { status, body } = await check();
    res.setHeader('cache-control', 'no-store');
    if (status === 503) res.setHeader('retry-after', String(READY_RETRY_AFTER_SECONDS));
    res.status(status).json(body);
  };
  router.get('/_health', answer(liveness));
  router.get(
    '/_ready',
    answer(() => readiness(deps)),
  );
  return router;
}
