/**
 * @module Who is a slow reader (issue 20 §2; svc.json `realtime.sendBufferBytes`): a connection whose
 * send buffer is over `sendBufferBytes` is dropped only when it does not read — when its buffer stays over
 * the bound for `graceMs`, or grows past the bound plus `burstBytes` (room for a few messages of
 * `maxFrameBytes` that one sender may send at once). A reader whose buffer another sender filled drains
 * it within the grace and keeps its connection; one that stopped reading is dropped, and what is queued
 * for it never exceeds the bound plus the burst plus one message.
 */

/** How long a send buffer may stay over its bound while its client reads, ms. */
export const SLOW_READER_GRACE_MS = 2000;

/** The rule, with its bounds. */
export interface SlowReaderOptions {
  /** The bound, bytes. */
  sendBufferBytes: number;
  /** Room over the bound for a burst (default 0: any excess is slow at once). */
  burstBytes?: number;
  /** How long the buffer may stay over the bound (default 0). */
  graceMs?: number;
  /** The clock, ms (tests). */
  now?: () => number;
}

/** Decides, per connection and at each delivery, whether it is still reading. */
export class SlowReaderRule {
  private readonly overSince = new WeakMap<object, number>();
  /** Entries ever put in `overSince` and not deleted (a dropped connection's may stay): while 0, none to look up. */
  private overCount = 0;
  private readonly bound: number;
  private readonly cap: number;
  private readonly graceMs: number;
  private readonly now: () => number;

  constructor(options: SlowReaderOptions) {
    this.bound = options.sendBufferBytes;
    this.cap = options.sendBufferBytes + (options.burstBytes ?? 0);
    this.graceMs = options.graceMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  /**
   * @param connection - the key of the connection's state
   * @param buffered - bytes in its send buffer now
   * @returns true when a message may be queued for it; false when it is a slow reader (drop it)
   */
  admits(connection: object, buffered: number): boolean {
    if (buffered <= this.bound) {
      // The common case of a fan-out: no lookup while no connection is over its bound.
      if (this.overCount > 0 && this.overSince.delete(connection)) this.overCount -= 1;
      return true;
    }
    if (buffered > this.cap) return false;
    const since = this.overSince.get(connection);
    if (since === undefined) {
      this.overSince.set(connection, this.now());
      this.overCount += 1;
      return true;
    }
    return this.now() - since < this.graceMs;
  }
}
