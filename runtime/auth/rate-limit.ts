/**
 * @module Limits failed sign-ins and token requests per (client id or username, remote address):
 * after `maxFailures` failures within `windowMs` of the first, further attempts are refused until the
 * window ends, whatever the credentials (429 with `Retry-After`). State is in the process's memory:
 * each `svc serve` instance counts on its own, and a restart forgets.
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

  /** Forgets the failures of `key` (after a success). */
  reset(key: string): void {
    this.entries.delete(key);
  }
}

/** The limiter key of an attempt: what was tried (`client:<id>` or `user:<name>`) and from where. */
export const attemptKey = (subject: string, remoteAddress: string | undefined): string => `${subject}|${remoteAddress ?? ''}`;
