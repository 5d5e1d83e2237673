/**
 * @module `GET /api/_admin/schema`, `GET /api/_admin/status` and `GET /api/_admin/realtime` (DESIGN
 * §9): the manifest as the console shows it (no secret values: a value under a key named like a
 * secret is kept only when it is a `${secrets.NAME}` or `${env.NAME}` reference, URLs lose their
 * password and query string), the readiness detail of `/api/_ready` with the applied and pending
 * migrations, the svc version, the instances seen on the bus and the log store's counters, and the
 * real-time connections and channels of every instance seen (presence.ts).
 */
import { readFileSync } from 'node:fs';
import { Router, type Request, type Response } from 'express';
import type { AppManifest } from '../../manifest.js';
import type { Database } from '../../data/database.js';
import { appliedThrough, pendingMigrations } from '../../data/migration-state.js';
import { readiness, type HealthDeps } from '../health.js';
import type { LogStore } from '../../logs/log-store.js';
import type { Presence } from './presence.js';
import { requireAdmin } from './params.js';

/**
 * Keys whose string values are secrets unless they are references: names of secrets, an API key,
 * and `value` (an external collection's apiKey connection). A bare `key` is not one: a child
 * relation's `key` names its `include` key, which the console needs.
 */
const SECRET_KEY = /secret|password|token|api[-_]?key|private[-_]?key|^value$|credential|authorization/i;
/** Keys whose values are URLs that may carry a password. */
const URL_KEY = /url|database|redis|smtp|endpoint/i;
/** A value that is only `${secrets.NAME}` / `${env.NAME}` references (and text around them). */
const REFERENCE = /^[^$]*(\$\{(secrets|env)\.[A-Za-z0-9_]+\}[^$]*)+$/;

/** A URL without its password and query string; text that is not a URL is returned as is. */
function withoutPassword(value: string): string {
  if (REFERENCE.test(value)) return value;
  const cut = value.search(/[?#]/);
  const kept = (cut < 0 ? value : value.slice(0, cut)).replace(/^([a-z][\w+.-]*:\/\/[^/:@]*):[^/@]*@/i, '$1:[hidden]@');
  return cut < 0 ? kept : `${kept}?[hidden]`;
}

/**
 * A deep copy of `value` fit to show an admin: secret values hidden (see the module notes).
 * @example hideSecrets({ apiKey: 'abc', key: '${secrets.K}' }) → { apiKey: '[hidden]', key: '${secrets.K}' }
 */
export function hideSecrets(value: unknown, key = ''): unknown {
  if (typeof value === 'string') {
    if (URL_KEY.test(key)) return withoutPassword(value);
    if (SECRET_KEY.test(key)) return REFERENCE.test(value) ? value : '[hidden]';
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => hideSecrets(v, key));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hideSecrets(v, k)]));
  }
  return value;
}

let version: string | undefined;
/** The svc package's version (package.json beside `dist/`). */
export function svcVersion(): string {
  if (version === undefined) {
    try {
      version = String((JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version ?? 'unknown');
    } catch {
      version = 'unknown';
    }
  }
  return version;
}

/** What these endpoints read. */
export interface SystemDeps {
  manifest: () => AppManifest;
  db: Database;
  health: HealthDeps;
  /** The app's `migrations/<provider>/` folder. */
  migrationsDir: string;
  presence: Presence;
  logs?: LogStore;
}

/** The router; mount it under `/api/_admin`. Source: DESIGN §9 (schema, status, realtime). */
export function systemRouter(deps: SystemDeps): Router {
  const router = Router();

  router.get('/schema', (_req: Request, res: Response) => {
    requireAdmin(res);
    res.json(hideSecrets(deps.manifest()));
  });

  router.get('/status', async (_req: Request, res: Response) => {
    requireAdmin(res);
    const [ready, applied, pending] = await Promise.all([
      readiness(deps.health),
      appliedThrough(deps.db)().then(
        (rows) => rows.map((r) => r.migration_name).sort(),
        () => null,
      ),
      pendingMigrations(appliedThrough(deps.db), deps.migrationsDir).catch(() => null),
    ]);
    const instances = deps.presence.instances().map(({ instance, seenAt, self }) => ({ instance, seenAt, self }));
    res.json({
      ready: { httpStatus: ready.status, ...ready.body },
      migrations: { applied, pending },
      version: svcVersion(),
      app: deps.manifest().name,
      provider: deps.manifest().provider,
      instances,
      logStore: deps.logs
        ? {
            dropped: deps.logs.dropped,
            droppedByKind: { ...deps.logs.droppedByKind },
            rejected: deps.logs.rejected,
            retentionDays: deps.logs.settings.retentionDays,
            maxRows: deps.logs.settings.maxRows,
            clientLog: { ...deps.logs.clientLog },
          }
        : null,
    });
  });

  router.get('/realtime', (_req: Request, res: Response) => {
    requireAdmin(res);
    const instances = deps.presence.instances();
    const channels = new Map<string, number>();
    for (const i of instances) for (const c of i.channels) channels.set(c.name, (channels.get(c.name) ?? 0) + c.members);
    res.json({
      connections: instances.reduce((n, i) => n + i.connections, 0),
      instances: instances.map((i) => ({ instance: i.instance, self: i.self, seenAt: i.seenAt, connections: i.connections, channels: i.channels.length })),
      channels: [...channels].map(([name, members]) => ({ name, members })).sort((a, b) => b.members - a.members || a.name.localeCompare(b.name)),
    });
  });

  return router;
}
