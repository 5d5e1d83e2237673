/**
 * @module Limits failed sign-ins and token requests per (client id or username, remote address):
 * after `maxFailures` failures within `windowMs` of the first, further attempts are refused until the
 * window ends, whatever the credentials (429 with `Retry-After`). DESIGN §4 "Auth details": the state
 * is in the process's memory (`FailureLimiter`: each instance counts on its own, a restart forgets),
 * or in Redis when Redis is configured (`RedisFailureLimiter`: every instance shares one count).
 *
 * An attempt is counted BEFORE its credentials are checked (`reserve`, one atomic step: a JavaScript
 * turn in memory, a Lua script in Redis), so concurrent attempts cannot all pass a count read before
 * any of them was written; a right credential then clears the count (`reset`) or gives its
 * reservation back (`release`).
 */

export interface RateLimitOptions {
  /** Failures allowed per window; default 10. */
  maxFailures?: number;
  /** Window length from the first failure, ms; default 15 minutes. */
  windowMs?: number;
}

interface Entry {
  failures: number;
  resetAt: number;
}

/** Entries above this count trigger a sweep of expired ones. */
const SWEEP_ABOVE = 10_000;

export class FailureLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly maxFailures: number;
  private readonly windowMs: number;

  constructor(options: RateLimitOptions = {}) {
    this.maxFailures = options.maxFailures ?? 10;
    this.windowMs = options.windowMs ?? 15 * 60_000;
  }

  /** Seconds until `key` may try again; 0 when it may try now. */
  retryAfterSeconds(key: string, now = Date.now()): number {
    const e = this.entries.get(key);
    if (!e || e.resetAt <= now) return 0;
    return e.failures >= this.maxFailures ? Math.ceil((e.resetAt - now) / 1000) : 0;
  }

  /** Counts one failure of `key`. */
  fail(key: string, now = Date.now()): void {
    if (this.entries.size > SWEEP_ABOVE) {
      for (const [k, e] of this.entries) if (e.resetAt <= now) this.entries.delete(k);
    }
    const e = this.entries.get(key);
    if (!e || e.resetAt <= now) this.entries.set(key, { failures: 1, resetAt: now + this.windowMs });
    else e.failures += 1;
  }

  /**
   * Counts one attempt of `key` unless `key` already has `max` (default `maxFailures`) in its window:
   * the check and the count are one step, so of concurrent attempts at most `max` are counted.
   * @returns 0 when the attempt was counted (it may go on), else the seconds until `key` may try again
   */
  reserve(key: string, max = this.maxFailures, now = Date.now()): number {
    const e = this.entries.get(key);
    if (e && e.resetAt > now && e.failures >= max) return Math.ceil((e.resetAt - now) / 1000);
    this.fail(key, now);
    return 0;
  }

  /** Takes back one counted attempt of `key` (one that turned out not to be a failure). */
  release(key: string, now = Date.now()): void {
    const e = this.entries.get(key);
    if (!e || e.resetAt <= now) return;
    if (e.failures <= 1) this.entries.delete(key);
    else e.failures -= 1;
  }

  /** Forgets the failures of `key` (after a success). */
  reset(key: string): void {
    this.entries.delete(key);
  }
}

/** The limiter key of an attempt: what was tried (`client:<id>` or `user:<name>`) and from where. */
export const attemptKey = (subject: string, remoteAddress: string | undefined): string => `${subject}|${remoteAddress ?? ''}`;

/** The limiter key of every credential check from one address, whatever was tried (`addressKey`). */
export const addressKey = (remoteAddress: string | undefined): string => attemptKey('address', remoteAddress);

/**
 * Failed credential checks allowed from one address in one window, whatever the username or client
 * id (DESIGN §4 "Auth details", docs/auth.md "Limits"): 100 per 15 minutes.
 */
export const MAX_FAILURES_PER_ADDRESS = 100;

/** The limiter the auth service uses: in memory or in Redis. */
export interface AttemptLimiter {
  /** Seconds until `key` may try again; 0 when it may try now. */
  retryAfterSeconds(key: string): Promise<number>;
  /** Counts one failure of `key`. */
  fail(key: string): Promise<void>;
  /**
   * Counts one attempt of `key` atomically unless it has `max` (default: the limiter's `maxFailures`)
   * in its window. @returns 0 when counted, else the seconds until `key` may try again
   */
  reserve(key: string, max?: number): Promise<number>;
  /** Takes back one counted attempt of `key`. */
  release(key: string): Promise<void>;
  /** Forgets the failures of `key` (after a success). */
  reset(key: string): Promise<void>;
}

/** A `FailureLimiter` behind the `AttemptLimiter` interface. */
export function memoryLimiter(limiter: FailureLimiter): AttemptLimiter {
  return {
    retryAfterSeconds: async (key) => limiter.retryAfterSeconds(key),
    fail: async (key) => limiter.fail(key),
    reserve: async (key, max) => limiter.reserve(key, max),
    release: async (key) => limiter.release(key),
    reset: async (key) => limiter.reset(key),
  };
}

/** The Redis commands the shared limiter needs (ioredis's `Redis` has them). */
export interface RedisCommands {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
}

/** Atomically counts a failure and starts the window at the first one: returns the count. */
const FAIL_SCRIPT = "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n";
/**
 * Atomically counts an attempt unless the key has ARGV[2] in its window: returns 0 when counted, else
 * the milliseconds left in the window. A count without expiry (never written by these scripts) gets one.
 */
const RESERVE_SCRIPT = `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[2]) then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then return left end
  redis.call('PEXPIRE', KEYS[1], ARGV[1]) return tonumber(ARGV[1])
end
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 0`;
/** Takes back one counted attempt (the key disappears at 0; its expiry is kept). */
const RELEASE_SCRIPT =
  "local n = tonumber(redis.call('GET', KEYS[1]) or '0') if n <= 1 then redis.call('DEL', KEYS[1]) else redis.call('DECR', KEYS[1]) end return n";
/** The count and the milliseconds left in the window (-2 when there is none). */
const READ_SCRIPT = "return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}";

/**
 * The limiter shared by every instance through Redis (keys `<prefix>:<attempt key>`, expiring with the
 * window). While Redis is unavailable it counts in this process (`fallback`) and logs.
 */
export class RedisFailureLimiter implements AttemptLimiter {
  private readonly maxFailures: number;
  private readonly windowMs: number;

  constructor(
    private readonly redis: RedisCommands,
    private readonly prefix: string,
    private readonly fallback: FailureLimiter,
    private readonly onUnavailable: (err: Error) => void,
    options: RateLimitOptions = {},
  ) {
    this.maxFailures = options.maxFailures ?? 10;
    this.windowMs = options.windowMs ?? 15 * 60_000;
  }

  async retryAfterSeconds(key: string): Promise<number> {
    try {
      const [failures, leftMs] = (await this.redis.eval(READ_SCRIPT, 1, `${this.prefix}:${key}`)) as [number, number];
      return failures >= this.maxFailures && leftMs > 0 ? Math.ceil(leftMs / 1000) : 0;
    } catch (err) {
      this.onUnavailable(err as Error);
      return this.fallback.retryAfterSeconds(key);
    }
  }

  async fail(key: string): Promise<void> {
    try {
      await this.redis.eval(FAIL_SCRIPT, 1, `${this.prefix}:${key}`, this.windowMs);
    } catch (err) {
      this.onUnavailable(err as Error);
      this.fallback.fail(key);
    }
  }

  async reserve(key: string, max = this.maxFailures): Promise<number> {
    try {
      const leftMs = Number(await this.redis.eval(RESERVE_SCRIPT, 1, `${this.prefix}:${key}`, this.windowMs, max));
      return leftMs > 0 ? Math.ceil(leftMs / 1000) : 0;
    } catch (err) {
      this.onUnavailable(err as Error);
      return this.fallback.reserve(key, max);
    }
  }

  async release(key: string): Promise<void> {
    this.fallback.release(key);
    try {
      await this.redis.eval(RELEASE_SCRIPT, 1, `${this.prefix}:${key}`);
    } catch (err) {
      this.onUnavailable(err as Error);
    }
  }

  async reset(key: string): Promise<void> {
    this.fallback.reset(key);
    try {
      await this.redis.del(`${this.prefix}:${key}`);
    } catch (err) {
      this.onUnavailable(err as Error);
    }
  }
}
