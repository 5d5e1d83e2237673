/**
 * @module The bus on Redis pub/sub (DESIGN §6; issue "real-time" § Many instances), with `ioredis`:
 * one connection publishes, one subscribes to `svc:<api-name>:rt:all` (broadcasts) and
 * `svc:<api-name>:rt:i:<instance>` (calls and replies for this instance). Payloads are JSON with the
 * sender's instance id, and an instance ignores its own broadcasts (the service delivers those locally).
 *
 * Redis going away is survived: publishing fails at once instead of queueing (`enableOfflineQueue:
 * false`), each message lost that way is logged with a running count, a call to another instance then
 * answers as if no instance held the connection, ioredis reconnects with a capped back-off and
 * re-subscribes, and the outage and the recovery are logged. Pub/sub delivers at most once: what was
 * published while Redis was down is gone (clients follow a change notification with a GET, and may
 * re-read after a reconnect).
 */
import { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { isBusMessage, newInstanceId, type BusMessage, type RealtimeBus } from './bus.js';
import type { ReplayGuard } from './tokens.js';
import { MemoryReplayGuard } from './tokens.js';

/** How long `start()` waits for the first connection to Redis, ms. */
const CONNECT_TIMEOUT_MS = 3000;

/** Redis connection options shared by the bus's connections and the stores that use Redis. */
export function redisClient(url: string, logger: Logger, role: string, options: { offlineQueue?: boolean } = {}): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: options.offlineQueue ?? false,
    // Queued commands (the subscriber's) wait for Redis however long it takes; others fail at once.
    maxRetriesPerRequest: options.offlineQueue ? null : 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let down = false;
  const lost = (reason: string) => {
    if (!down) logger.warn({ role, reason }, 'redis connection lost; reconnecting');
    down = true;
  };
  client.on('error', (err: Error) => lost(err.message));
  client.on('reconnecting', () => lost('connection closed'));
  client.on('ready', () => {
    if (down) logger.info({ role }, 'redis connection restored');
    down = false;
  });
  return client;
}

/** The prefix of app `apiName`'s real-time keys and channels in Redis. */
export const realtimePrefix = (apiName: string): string => `svc:${apiName}:rt`;

/** The Redis channel every instance of app `apiName` listens on (a broadcast). */
export const busChannel = (apiName: string): string => `${realtimePrefix(apiName)}:all`;

/**
 * Publishes one message to every instance of app `apiName` on the Redis at `url`, from a process that
 * is not an instance (a `svc user …` command), then disconnects. Never throws.
 * @param timeoutMs - how long to wait for Redis, ms
 * @returns true when Redis took the message (0 or more instances may have been listening)
 */
export async function publishOnce(url: string, apiName: string, message: BusMessage, timeoutMs = 2000): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    const sent = client.connect().then(() => client.publish(busChannel(apiName), JSON.stringify({ from: 'command', message })));
    return await Promise.race([sent.then(() => true), new Promise<false>((ok) => (timer = setTimeout(() => ok(false), timeoutMs)))]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

export class RedisBus implements RealtimeBus {
  readonly instanceId = newInstanceId();
  readonly counts = { published: 0, received: 0 };
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly all: string;
  private readonly prefix: string;
  private lost = 0;

  /** @param apiName - the app's name: instances of one app share channels, other apps do not */
  constructor(
    url: string,
    apiName: string,
    private readonly logger: Logger,
  ) {
    this.prefix = realtimePrefix(apiName);
    this.all = busChannel(apiName);
    this.pub = redisClient(url, logger, 'realtime publisher');
    // The subscriber keeps its subscriptions across reconnects (ioredis re-subscribes).
    this.sub = redisClient(url, logger, 'realtime subscriber', { offlineQueue: true });
  }

  /**
   * Subscribes. Waits at most `CONNECT_TIMEOUT_MS` for Redis: an instance whose Redis is down at start
   * still serves (its own connections only, and `/api/_ready` says so) and joins the bus once Redis answers.
   */
  async start(onMessage: (message: BusMessage) => void): Promise<void> {
    this.sub.on('message', (_channel: string, text: string) => {
      this.counts.received += 1;
      let envelope: unknown;
      try {
        envelope = JSON.parse(text);
      } catch {
        return;
      }
      // Anything else on the app's channels (a stray or corrupted publish) is dropped here.
      const { from, message } = (typeof envelope === 'object' && envelope !== null ? envelope : {}) as { from?: unknown; message?: unknown };
      if (from !== this.instanceId && isBusMessage(message)) onMessage(message);
    });
    // Sent once the subscriber is ready (a SUBSCRIBE ahead of ioredis's ready check would make the check
    // fail and drop it), and renewed by ioredis after every reconnect.
    const subscribe = () =>
      this.sub.subscribe(this.all, `${this.prefix}:i:${this.instanceId}`).then(
        () => true,
        (err: Error) => {
          this.logger.error({ err: err.message }, 'redis SUBSCRIBE failed: real-time messages stay on this instance');
          return false;
        },
      );
    const subscribed = this.sub.status === 'ready' ? subscribe() : new Promise<boolean>((ok) => this.sub.once('ready', () => void subscribe().then(ok)));
    const publisherReady = this.pub.status === 'ready' ? Promise.resolve(true) : new Promise<boolean>((ok) => this.pub.once('ready', () => ok(true)));
    const ready = Promise.all([subscribed, publisherReady]).then(([a, b]) => a && b);
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([ready, new Promise<false>((ok) => (timer = setTimeout(() => ok(false), CONNECT_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (!inTime) this.logger.warn('redis is not reachable: real-time messages stay on this instance until it is');
  }

  broadcast(message: BusMessage): void {
    this.counts.published += 1;
    this.pub.publish(this.all, this.encode(message)).catch((err: Error) => this.lose(message, err));
  }

  async sendTo(instanceId: string, message: BusMessage): Promise<boolean> {
    this.counts.published += 1;
    try {
      return (await this.pub.publish(`${this.prefix}:i:${instanceId}`, this.encode(message))) > 0;
    } catch (err) {
      this.lose(message, err as Error);
      return false;
    }
  }

  /** The publishing connection, for the other shared state kept in Redis (one-time tokens, sign-in limits). */
  get commands(): Redis {
    return this.pub;
  }

  /** Quits both connections (at most 1 s, then drops them: a Redis that is down would never answer QUIT). */
  async close(): Promise<void> {
    const quits = [this.sub, this.pub].map((c) => (c.status === 'ready' ? c.quit().catch(() => {}) : Promise.resolve()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(quits), new Promise((ok) => (timer = setTimeout(ok, 1000)))]);
    clearTimeout(timer);
    this.sub.disconnect();
    this.pub.disconnect();
  }

  private encode(message: BusMessage): string {
    return JSON.stringify({ from: this.instanceId, message });
  }

  private lose(message: BusMessage, err: Error): void {
    this.lost += 1;
    const what = message.t === 'group' ? { group: message.message.group } : message.t === 'change' ? { collection: message.change.collection } : {};
    this.logger.warn({ kind: message.t, ...what, lostMessages: this.lost, err: err.message }, 'real-time message lost: redis is unavailable');
  }
}

/**
 * Single-use token ids in Redis (`SET … NX PX`), so a one-time URL used on one instance is refused on
 * every other. While Redis is unavailable it falls back to this process's memory (logged).
 */
export class RedisReplayGuard implements ReplayGuard {
  private readonly fallback = new MemoryReplayGuard();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  async claim(id: string, ttlMs: number): Promise<boolean> {
    try {
      return (await this.redis.set(`${this.prefix}:${id}`, '1', 'PX', ttlMs, 'NX')) === 'OK';
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'redis unavailable: one-time tokens are checked in this process only');
      return this.fallback.claim(id, ttlMs);
    }
  }
}
