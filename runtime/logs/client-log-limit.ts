/**
 * @module The limits of the client log `POST /api/_log` per identity (svc.json `logs.clientLog`,
 * docs/console.md): posts, events and message characters per minute. Each identity has one token
 * bucket per measure, holding at most its per-minute amount and refilled evenly over a minute. A
 * post is admitted when every bucket holds what it needs (or, for a post needing more than a
 * bucket's whole amount, when that bucket is full); the buckets are then debited, possibly below
 * zero. Otherwise the answer is 429 with `Retry-After`: the seconds until the buckets hold enough.
 * Counted in this process's memory (each instance counts for itself).
 */
import type { ClientLogSettings } from '../contract/settings.js';

/** What a post needs: 1 post, its event count, the sum of its message lengths. */
export interface ClientLogCost {
  events: number;
  characters: number;
}

/** The buckets of one identity: tokens left per measure, and when they were last refilled (ms). */
interface Buckets {
  requests: number;
  events: number;
  characters: number;
  at: number;
}

/** Identities kept before full buckets (nothing owed) are forgotten. */
const MAX_TRACKED = 10_000;

/** The per-minute limits of `logs.clientLog`; an absent one does not limit. */
export type ClientLogLimits = Pick<ClientLogSettings, 'requestsPerMinute' | 'eventsPerMinute' | 'charactersPerMinute'>;

/** Whether `settings` limit `POST /api/_log` at all (SPEC §8: by default they do not; an operator opts in). */
export const limitsClientLog = (settings: ClientLogLimits): boolean =>
  settings.requestsPerMinute !== undefined || settings.eventsPerMinute !== undefined || settings.charactersPerMinute !== undefined;

/** The buckets of `POST /api/_log` per identity (see the module note); one per app version's Express application. */
export class ClientLogLimiter {
  private readonly buckets = new Map<string, Buckets>();
  /** The per-minute amounts, an absent limit as `Infinity` (a bucket that is always full). */
  private readonly settings: Required<ClientLogLimits>;

  /**
   * @param settings - `logs.clientLog` with its defaults (`LogStore.clientLog`); an absent measure is not limited
   * @param now - the clock, epoch ms (default `Date.now`)
   */
  constructor(
    settings: ClientLogLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.settings = {
      requestsPerMinute: settings.requestsPerMinute ?? Infinity,
      eventsPerMinute: settings.eventsPerMinute ?? Infinity,
      charactersPerMinute: settings.charactersPerMinute ?? Infinity,
    };
  }

  /**
   * Admits one post of `identity` costing `cost`, debiting its buckets.
   * @returns 0 when admitted, else the whole seconds (at least 1) to wait before the post fits (`Retry-After`); nothing is debited then
   */
  take(identity: string, cost: ClientLogCost): number {
    const t = this.now();
    const s = this.settings;
    let b = this.buckets.get(identity);
    if (!b) {
      if (this.buckets.size >= MAX_TRACKED) this.forgetFull(t);
      b = { requests: s.requestsPerMinute, events: s.eventsPerMinute, characters: s.charactersPerMinute, at: t };
      this.buckets.set(identity, b);
    } else this.refill(b, t);
    const waits = [
      waitFor(b.requests, 1, s.requestsPerMinute),
      waitFor(b.events, cost.events, s.eventsPerMinute),
      waitFor(b.characters, cost.characters, s.charactersPerMinute),
    ];
    const wait = Math.max(...waits);
    if (wait > 0) return Math.max(1, Math.ceil(wait / 1000));
    b.requests -= 1;
    b.events -= cost.events;
    b.characters -= cost.characters;
    return 0;
  }

  /** Identities tracked now (for tests). */
  get size(): number {
    return this.buckets.size;
  }

  private refill(b: Buckets, t: number): void {
    const elapsed = Math.max(0, t - b.at);
    b.at = t;
    const s = this.settings;
    b.requests = refilled(b.requests, elapsed, s.requestsPerMinute);
    b.events = refilled(b.events, elapsed, s.eventsPerMinute);
    b.characters = refilled(b.characters, elapsed, s.charactersPerMinute);
  }

  /** Forgets identities whose buckets are full again (they owe nothing, a fresh entry is the same). */
  private forgetFull(t: number): void {
    const s = this.settings;
    for (const [id, b] of this.buckets) {
      this.refill(b, t);
      if (b.requests >= s.requestsPerMinute && b.events >= s.eventsPerMinute && b.characters >= s.charactersPerMinute) this.buckets.delete(id);
    }
  }
}

/** A bucket holding `tokens` (of `perMinute` at most) after `elapsedMs` of refill; an unlimited one stays full. */
const refilled = (tokens: number, elapsedMs: number, perMinute: number): number =>
  perMinute === Infinity ? Infinity : Math.min(perMinute, tokens + (elapsedMs * perMinute) / 60_000);

/**
 * Milliseconds until a bucket holding `tokens` (of `perMinute` at most) can pay `need`: a need above
 * the whole amount waits for a full bucket.
 */
function waitFor(tokens: number, need: number, perMinute: number): number {
  const target = Math.min(need, perMinute);
  return tokens >= target ? 0 : ((target - tokens) * 60_000) / perMinute;
}
