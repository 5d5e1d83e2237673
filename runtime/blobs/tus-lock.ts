/**
 * @module The lock of a resumable upload shared by every instance (issue 24 §3 "Blobs across
 * instances"): a tus `Locker` on Redis, used instead of tus's per-process `MemoryLocker` when the app
 * has Redis, so two requests of one upload on two instances never write it at once.
 *
 * - A lock is the key `svc:<api>:tus-lock:<upload>` set with `SET NX PX` to a random token; its holder
 *   renews it every `ttlMs / 3` and deletes it with a compare-and-delete script, so only the holder
 *   ever removes its own lock.
 * - A request that finds the upload locked asks the holder to let go (tus's "request release": the
 *   holder's request ends after tus's drain time, keeping what it wrote) with a `release` message on
 *   the channel `svc:<api>:tus-lock`, again every second, and retries every `POLL_MS` or as soon as an
 *   `unlocked` message for that upload arrives. It gives up after `acquireTimeoutMs` with 409, which
 *   tus clients answer with a HEAD and a resume.
 * - A holder that dies stops renewing: its lock expires at most `ttlMs` (`LOCK_TTL_MS`, 6 s) after
 *   its last renewal. A holder that finds its lock gone (or cannot renew it for `ttlMs`) ends its
 *   request the same way as when asked to.
 * - Redis unreachable: taking a lock fails at once with 503 (the upload is not written unlocked);
 *   releasing one is logged and left to expire.
 * Messages on the channel are JSON `{ "t": "release" | "unlocked", "id": "<upload>" }`; anything else
 * is ignored.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Lock, Locker, RequestRelease } from '@tus/server';
import { answerError, HttpError } from '../errors.js';
import type { Logger } from '../log.js';

/** How long a lock lives without renewal, ms: the longest a dead holder blocks its upload. */
export const LOCK_TTL_MS = 6_000;
/** How long a request waits for a held lock before it answers 409, ms. */
export const ACQUIRE_TIMEOUT_MS = 15_000;
/** How often a waiting request tries again (sooner when the holder says it let go), ms. */
const POLL_MS = 100;
/** How often a waiting request repeats its request to release, ms. */
const ASK_AGAIN_MS = 1_000;

/** Deletes the key only when it still holds the caller's token. */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
/** Extends the key only when it still holds the caller's token. */
const RENEW_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

/** Options of `RedisLocker`. */
export interface RedisLockerOptions {
  /** Commands (the real-time bus's publishing connection: no offline queue, so an outage fails at once). */
  redis: Redis;
  /** Makes the connection for SUBSCRIBE (with an offline queue), on the first lock; the locker closes it. */
  subscriber: () => Redis;
  /** The app's name: instances of one app share locks, other apps do not. */
  apiName: string;
  logger: Logger;
  /** Default `LOCK_TTL_MS`. */
  ttlMs?: number;
  /** Default `ACQUIRE_TIMEOUT_MS`. */
  acquireTimeoutMs?: number;
}

/** A tus error answer (what `@tus/server` sends for a thrown `{ status_code, body }`), DESIGN §4 body. */
export function tusError(err: unknown): { status_code: number; body: string } {
  const { status, body } = answerError(err);
  return { status_code: status, body: JSON.stringify(body) };
}

/** A lock this instance holds: who to tell when another request wants it. */
interface Held {
  token: string;
  requestRelease: RequestRelease;
  renewer: NodeJS.Timeout;
  renewedAt: number;
}

/**
 * Upload locks on Redis for `@tus/server` (`locker` option). One per instance; `close()` stops the
 * renewals and the subscriber.
 */
export class RedisLocker implements Locker {
  readonly ttlMs: number;
  readonly acquireTimeoutMs: number;
  private readonly prefix: string;
  private readonly channel: string;
  private readonly held = new Map<string, Held>();
  /** Wake-ups of requests waiting for an upload, by upload id. */
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscribed?: Promise<void>;
  private subscriber?: Redis;

  constructor(private readonly options: RedisLockerOptions) {
    this.ttlMs = options.ttlMs ?? LOCK_TTL_MS;
    this.acquireTimeoutMs = options.acquireTimeoutMs ?? ACQUIRE_TIMEOUT_MS;
    this.prefix = `svc:${options.apiName}:tus-lock:`;
    this.channel = `svc:${options.apiName}:tus-lock`;
  }

  newLock(id: string): Lock {
    return new RedisLock(this, id);
  }

  /** The Redis key of an upload's lock. */
  keyOf(id: string): string {
    return this.prefix + id;
  }

  /** Subscribes once (on the first lock taken); the subscriber re-subscribes after reconnects. */
  private subscribe(): Promise<void> {
    return (this.subscribed ??= (async () => {
      if (!this.subscriber) {
        this.subscriber = this.options.subscriber();
        this.subscriber.on('message', (channel: string, text: string) => {
          if (channel === this.channel) this.onMessage(text);
        });
      }
      await this.subscriber.subscribe(this.channel);
    })().catch((err: unknown) => {
      this.subscribed = undefined;
      this.options.logger.warn({ err: (err as Error).message }, 'tus lock channel: SUBSCRIBE failed (waiting requests poll instead)');
    }));
  }

  /** A message on the channel: a release request for a lock held here, or news that one was let go. */
  private onMessage(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof message !== 'object' || message === null) return;
    const { t, id } = message as { t?: unknown; id?: unknown };
    if (typeof id !== 'string') return;
    if (t === 'release') this.askToRelease(id);
    else if (t === 'unlocked') for (const wake of this.waiting.get(id) ?? []) wake();
  }

  private askToRelease(id: string): void {
    const held = this.held.get(id);
    if (!held) return;
    Promise.resolve()
      .then(() => held.requestRelease())
      .catch(() => undefined);
  }

  private publish(t: 'release' | 'unlocked', id: string): void {
    this.options.redis.publish(this.channel, JSON.stringify({ t, id })).catch(() => undefined);
  }

  /**
   * Takes the lock of `id` for a request, waiting while another holds it (and asking that one to let go).
   * @throws a tus error answer: 409 CONFLICT after `acquireTimeoutMs` or when `signal` aborts (the
   *   request is gone), 503 SERVICE_UNAVAILABLE when Redis does not answer
   */
  async acquire(id: string, signal: AbortSignal, requestRelease: RequestRelease): Promise<string> {
    void this.subscribe();
    const key = this.keyOf(id);
    const token = randomBytes(16).toString('hex');
    const deadline = Date.now() + this.acquireTimeoutMs;
    let askedAt = 0;
    for (;;) {
      if (signal.aborted) throw tusError(new HttpError('CONFLICT', 'the request ended while it waited for the upload'));
      let taken: string | null;
      try {
        taken = await this.options.redis.set(key, token, 'PX', this.ttlMs, 'NX');
      } catch (err) {
        this.options.logger.warn({ err: (err as Error).message, upload: id }, 'tus lock: redis unavailable');
        throw tusError(new HttpError('SERVICE_UNAVAILABLE', 'uploads are unavailable for a moment (the lock service does not answer); retry'));
      }
      if (taken === 'OK') {
        this.hold(id, key, token, requestRelease);
        return token;
      }
      const now = Date.now();
      if (now >= deadline) throw tusError(new HttpError('CONFLICT', 'another request is writing this upload; ask for its offset (HEAD) and resume'));
      if (now - askedAt >= ASK_AGAIN_MS) {
        askedAt = now;
        this.publish('release', id);
      }
      await this.pause(id, Math.min(POLL_MS, deadline - now), signal);
    }
  }

  /** Waits `ms`, or less: until the holder of `id` says it let go, or `signal` aborts. */
  private pause(id: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((done) => {
      const wakes = this.waiting.get(id) ?? new Set<() => void>();
      this.waiting.set(id, wakes);
      const wake = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
        wakes.delete(wake);
        if (wakes.size === 0 && this.waiting.get(id) === wakes) this.waiting.delete(id);
        done();
      };
      const timer = setTimeout(wake, ms);
      wakes.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  /** Records a taken lock and renews it until released; a lock found lost ends its request. */
  private hold(id: string, key: string, token: string, requestRelease: RequestRelease): void {
    const held: Held = {
      token,
      requestRelease,
      renewedAt: Date.now(),
      renewer: setInterval(() => void renew(), Math.max(10, Math.floor(this.ttlMs / 3))),
    };
    held.renewer.unref();
    const renew = async () => {
      let kept: boolean;
      try {
        kept = Number(await this.options.redis.eval(RENEW_SCRIPT, 1, key, token, this.ttlMs)) === 1;
        if (kept) held.renewedAt = Date.now();
      } catch {
        // Redis away: the lock may expire meanwhile; past its lifetime it counts as lost.
        kept = Date.now() - held.renewedAt < this.ttlMs;
      }
      if (!kept && this.held.get(id) === held) {
        clearInterval(held.renewer);
        this.options.logger.warn({ upload: id }, 'tus lock lost (expired or taken over): ending its request');
        this.askToRelease(id);
      }
    };
    this.held.set(id, held);
  }

  /** Gives up the lock `token` of `id` and tells waiting requests; a failure is logged (the lock then expires). */
  async release(id: string, token: string): Promise<void> {
    const held = this.held.get(id);
    if (held?.token === token) {
      clearInterval(held.renewer);
      this.held.delete(id);
    }
    try {
      await this.options.redis.eval(RELEASE_SCRIPT, 1, this.keyOf(id), token);
      this.publish('unlocked', id);
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message, upload: id, expiresInMs: this.ttlMs }, 'tus lock: release failed; it expires by itself');
    }
  }

  /** Stops renewing (held locks then expire) and closes the subscriber. */
  close(): void {
    for (const held of this.held.values()) clearInterval(held.renewer);
    this.held.clear();
    this.subscriber?.disconnect();
  }
}

/** One request's lock of one upload (tus `Lock`). */
class RedisLock implements Lock {
  private token?: string;

  constructor(
    private readonly locker: RedisLocker,
    private readonly id: string,
  ) {}

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    this.token = await this.locker.acquire(this.id, signal, requestRelease);
  }

  async unlock(): Promise<void> {
    const token = this.token;
    this.token = undefined;
    if (token) await this.locker.release(this.id, token);
  }
}
