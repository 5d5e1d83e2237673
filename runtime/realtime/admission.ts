/**
 * @module What one client may take (issue 20 §2; svc.json `realtime`, DESIGN §6): at most
 * `maxConnectionsPerAddress` sockets open at once from one address (the next upgrade answers 429
 * `RATE_LIMITED`), and lower frame-size and frame-rate limits for anonymous connections
 * (`anonymousMaxFrameBytes`, `anonymousMaxMessagesPerSecond`) than for signed-in ones, so that one
 * address cannot take more than a small share of a core. An anonymous client may not join or send
 * (SPEC §4.7): it needs only pings and acknowledgements.
 */
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { HttpError } from '../errors.js';
import { refuseUpgrade } from './guard.js';
import type { Caller } from '../auth/caller.js';
import type { RealtimeSettings } from '../contract/settings.js';

/** The real-time limits in force (svc.json `realtime` over `REALTIME_DEFAULTS`). */
export type RealtimeLimits = Required<Omit<RealtimeSettings, 'redis'>>;

/** The limits of one connection, by who opened it. */
export interface ConnectionLimits {
  /** Largest frame, bytes (also the bound of a hub record waiting for its separator). */
  maxFrameBytes: number;
  /** Frames per second (bursts of twice that). */
  ratePerSecond: number;
}

/** The limits of a connection opened by `caller`: signed-in ones get the general limits. */
export function connectionLimits(limits: RealtimeLimits, caller: Caller): ConnectionLimits {
  if (caller.kind !== 'anonymous') return { maxFrameBytes: limits.maxFrameBytes, ratePerSecond: limits.maxMessagesPerSecond };
  return {
    maxFrameBytes: Math.min(limits.anonymousMaxFrameBytes, limits.maxFrameBytes),
    ratePerSecond: Math.min(limits.anonymousMaxMessagesPerSecond, limits.maxMessagesPerSecond),
  };
}

/**
 * Two `ws` servers of one endpoint, one per frame-size limit (`ws` checks `maxPayload` while it reads a
 * frame, so an oversized anonymous frame is refused before it is buffered).
 */
export class SocketServers {
  private readonly signedIn: WebSocketServer;
  private readonly anonymous: WebSocketServer;

  constructor(limits: RealtimeLimits, handleProtocols: (offered: Set<string>) => string | false) {
    this.signedIn = new WebSocketServer({ noServer: true, maxPayload: limits.maxFrameBytes, handleProtocols });
    this.anonymous = new WebSocketServer({ noServer: true, maxPayload: Math.min(limits.anonymousMaxFrameBytes, limits.maxFrameBytes), handleProtocols });
  }

  /** The server whose frame limit fits `caller` (anonymous when unknown). */
  for(caller: Caller | undefined): WebSocketServer {
    return caller && caller.kind !== 'anonymous' ? this.signedIn : this.anonymous;
  }

  close(): void {
    this.signedIn.close();
    this.anonymous.close();
  }
}

/** Counts the sockets open from each address. */
export class AddressLimiter {
  private readonly open = new Map<string, number>();

  constructor(
    /** Most sockets one address may hold. */
    readonly max: number,
  ) {}

  /**
   * Takes a slot for one socket of `address`.
   * @returns its release (idempotent), or null when the address already holds `max` sockets
   */
  reserve(address: string): (() => void) | null {
    const count = this.open.get(address) ?? 0;
    if (count >= this.max) return null;
    this.open.set(address, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    };
  }

  /** Sockets open from `address`. */
  count(address: string): number {
    return this.open.get(address) ?? 0;
  }
}

/**
 * Counts the upgrade on `socket` against its address until the socket closes (refused, or the
 * WebSocket ended).
 * @returns false when the address is at its limit: the upgrade was answered 429 `RATE_LIMITED`
 */
export function admitAddress(limiter: AddressLimiter, address: string, socket: Duplex): boolean {
  const release = limiter.reserve(address);
  if (!release) {
    refuseUpgrade(socket, new HttpError('RATE_LIMITED', `too many real-time connections from this address (at most ${limiter.max}): close some first`));
    return false;
  }
  socket.once('close', release);
  if (socket.destroyed) release();
  return true;
}
