/**
 * @module Real-time (SPEC §4.7, §6.1, §6.2; DESIGN §4 "Real-time details", §6): one service per
 * instance with the Web PubSub endpoint, the SignalR hub and the HTTP endpoints, on a bus that is
 * in-process by default and Redis pub/sub when a Redis URL is configured.
 */
import type { Redis } from 'ioredis';
import type { AuthService } from '../auth/auth-service.js';
import type { IdentityKind } from '../auth/identity-cache.js';
import type { Logger } from '../log.js';
import type { AppManifest } from '../manifest.js';
import { LocalBus, type RealtimeBus } from './bus.js';
import { RealtimeService } from './service.js';
import { MemoryReplayGuard, type ReplayGuard } from './tokens.js';
import { serveWebPubSub, RECOVERY_GRACE_MS, STATE_REFRESH_MS } from './wps.js';
import type { ReplayStore } from './wps-store.js';
import { serveHub } from './hub.js';
import { watchIdentities } from './identity-watch.js';
import { reportOpenFilesLimit } from './fd-limit.js';

export { RealtimeService, FUNCTION_ACTOR } from './service.js';
export { realtimeHttpHandler } from './http.js';
export { groupOfChannel } from './channels.js';
export { functionRealtime } from './functions.js';

/** The bus between instances and the stores shared through it. */
export interface RealtimeBackplane {
  bus: RealtimeBus;
  /** Where used one-time token ids are remembered. */
  guard: ReplayGuard;
  /** The Redis connection for other shared state (the sign-in limiter); absent without Redis. */
  redis?: Redis;
  /** Opens another connection to that Redis for a subscriber of its own (`role` names it in logs); absent without Redis. */
  newSubscriber?: (role: string) => Redis;
  /** Reliable Web PubSub state and group logs (`wps-store.ts`); absent without Redis. */
  replayStore?: ReplayStore;
}

/**
 * The bus of an instance: Redis pub/sub when `redisUrl` is set (env `REDIS_URL` or svc.json
 * `realtime.redis`), else in-process. Nothing connects until `startRealtime`; the Redis client is
 * loaded only when Redis is configured.
 */
export async function realtimeBackplane(apiName: string, logger: Logger, redisUrl: string | undefined): Promise<RealtimeBackplane> {
  if (!redisUrl) return { bus: new LocalBus(), guard: new MemoryReplayGuard() };
  const { RedisBus, RedisReplayGuard, redisClient } = await import('./redis-bus.js');
  const { ReplayStore } = await import('./wps-store.js');
  const bus = new RedisBus(redisUrl, apiName, logger);
  const replayStore = new ReplayStore(bus.commands, apiName, logger, RECOVERY_GRACE_MS + STATE_REFRESH_MS);
  return {
    bus,
    guard: new RedisReplayGuard(bus.commands, `svc:${apiName}:rt-jti`, logger),
    redis: bus.commands,
    newSubscriber: (role) => redisClient(redisUrl, logger, role, { offlineQueue: true }),
    replayStore,
  };
}

/**
 * Tells the running instances of app `apiName` that identity `kind`/`id` changed, over Redis when
 * `redisUrl` is set, so they drop it from their caches and re-check its sockets at once rather than
 * within the identity cache's TTL (what `svc user …` commands run after their write). Never throws.
 * @returns true when the message reached Redis; false without Redis or when Redis did not answer
 */
export async function announceIdentityChange(apiName: string, redisUrl: string | undefined, kind: IdentityKind, id: string): Promise<boolean> {
  if (!redisUrl) return false;
  const { publishOnce } = await import('./redis-bus.js');
  return publishOnce(redisUrl, apiName, { t: 'identity', kind, id });
}

/**
 * Builds the real-time service of an instance, serves its endpoints, starts the bus and the watch
 * of its connections' identities (`identity-watch.ts`); logs a low file-descriptor limit (`fd-limit.ts`).
 * @throws Error when Redis is configured but cannot be reached
 */
export async function startRealtime(options: {
  manifest: AppManifest;
  auth: AuthService;
  logger: Logger;
  backplane: RealtimeBackplane;
}): Promise<RealtimeService> {
  const { bus, guard, replayStore } = options.backplane;
  const service = new RealtimeService({ manifest: options.manifest, auth: options.auth, logger: options.logger, bus, guard, replayStore });
  reportOpenFilesLimit(service.logger);
  serveWebPubSub(service);
  serveHub(service);
  await service.start();
  watchIdentities(service);
  return service;
}
