/**
 * @module One Web PubSub connection's server side (../shared/notes/realtime-protocols.md §1): its
 * socket (absent while a reliable connection waits for recovery), its acks (`Duplicate` for an id it
 * already completed), its flood allowance, and delivery of channel messages and change notifications —
 * as is on the plain protocol, numbered through a `ReplayQueue` on the reliable one. Message frames are
 * built once per message and shared by every recipient.
 */
import type { WebSocket } from 'ws';
import { FloodGate, type ChangeNotification, type Connection, type ConnectionTransport, type DataType, type GroupMessage } from './broker.js';
import type { ListenFilter } from './listen-filter.js';
import { closeReason } from './guard.js';
import { ReplayQueue } from './wps-replay.js';
import type { ReplayStore, StoredConnection, StoredGroup } from './wps-store.js';

/** Ack ids remembered per connection for `Duplicate` answers. */
const REMEMBERED_ACKS = 1024;

/** The frames of one message, built once and shared by every recipient. */
const frames = new WeakMap<object, string>();
/** The same frames as UTF-8 bytes (plain protocol: one encoding per message, not one per recipient). */
const encoded = new WeakMap<object, Buffer>();
/** `ws` send options of a text frame given as bytes. */
const TEXT_FRAME = { binary: false };

/** The last message encoded: a fan-out writes one message to every member in a row (no WeakMap lookup). */
let lastKey: object | null = null;
let lastBytes: Buffer | null = null;

function encodedFrame(key: object, frame: string): Buffer {
  if (key === lastKey) return lastBytes!;
  let bytes = encoded.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(frame);
    encoded.set(key, bytes);
  }
  lastKey = key;
  lastBytes = bytes;
  return bytes;
}

let lastFrameKey: object | null = null;
let lastFrame = '';

function messageFrame(key: object, group: string, dataType: DataType, data: unknown, fromUserId: string | null): string {
  if (key === lastFrameKey) return lastFrame;
  let frame = frames.get(key);
  if (frame === undefined) {
    frame = JSON.stringify({ type: 'message', from: 'group', group, dataType, data, fromUserId });
    frames.set(key, frame);
  }
  lastFrameKey = key;
  lastFrame = frame;
  return frame;
}

/** Web PubSub error names of an ack (notes §1.3). */
export type AckError = 'Forbidden' | 'BadRequest' | 'Duplicate' | 'InternalServerError';

/** One Web PubSub connection: its socket (absent while a reliable connection waits for recovery) and state. */
export class WpsSession implements ConnectionTransport {
  socket: WebSocket | null;
  connection!: Connection;
  alive = true;
  /** Set once the connection is over for good (no recovery). */
  ended = false;
  /** The reliable protocol's queue of unacknowledged messages; null on the plain protocol. */
  private readonly replay: ReplayQueue | null;
  private readonly acks = new Set<number>();
  private readonly ackOrder: number[] = [];
  recoveryTimer: NodeJS.Timeout | undefined;
  readonly flood: FloodGate;
  /** With Redis on the reliable protocol: the state mirrored there, and each group's position. */
  private readonly store: ReplayStore | null;
  private positions: Map<string, StoredGroup> | undefined;
  /** While a recovered connection catches up from the group logs: the live messages held back. */
  private held: GroupMessage[] | null = null;

  constructor(
    socket: WebSocket,
    readonly reliable: boolean,
    readonly reconnectionToken: string | undefined,
    ratePerSecond: number,
    /** Most bytes of unacknowledged messages kept for replay (svc.json `realtime.sendBufferBytes`). */
    replayLimit: number,
    store: ReplayStore | null = null,
  ) {
    this.socket = socket;
    this.flood = new FloodGate(ratePerSecond);
    this.replay = reliable ? new ReplayQueue(replayLimit) : null;
    this.store = reliable ? store : null;
    if (this.store) this.positions = new Map();
  }

  sendGroupMessage(m: GroupMessage): void {
    if (this.held) this.held.push(m);
    else this.deliver(m, messageFrame(m, m.group, m.dataType, m.data, m.fromUserId), m);
  }

  joined(group: string, readOnly: boolean): void {
    if (!this.store || !this.positions) return;
    const state = { r: readOnly, l: this.positions.get(group)?.l ?? null, t: this.positions.get(group)?.t ?? Date.now() };
    this.positions.set(group, state);
    this.store.joined(this.connection.id, group, state);
  }

  left(group: string): void {
    if (!this.store || !this.positions) return;
    this.positions.delete(group);
    this.store.left(this.connection.id, group);
  }

  /** Mirrors a widened change-feed subscription to Redis, for a recovery on another instance (`wps-listens.ts`). */
  listened(collection: string, filter: ListenFilter): void {
    this.store?.listened(this.connection.id, collection, filter);
  }

  unlistened(collection: string): void {
    this.store?.unlistened(this.connection.id, collection);
  }

  /**
   * Takes over a connection from its stored state (another instance held it): continues its
   * sequence, sends its unacknowledged frames, and holds live group messages back until `caughtUp`.
   */
  resume(state: StoredConnection): void {
    if (!this.replay || !this.socket) return;
    this.replay.restore(state.seq, state.pending);
    this.positions = new Map(state.groups);
    this.held = [];
    for (const p of state.pending) this.socket.send(p.frame);
  }

  /**
   * Ends the catch-up of `resume`: `missed` (from the group logs, oldest first) are delivered, then
   * the live messages held back meanwhile that were not among them.
   */
  caughtUp(missed: GroupMessage[]): void {
    const held = this.held ?? [];
    this.held = null;
    const seen = new Set<string>();
    for (const m of missed) {
      if (m.logId) seen.add(m.logId);
      if (!(m.noEcho && m.fromConnectionId === this.connection.id)) this.sendGroupMessage(m);
    }
    for (const m of held) if (!m.logId || !seen.has(m.logId)) this.sendGroupMessage(m);
  }

  sendChange(group: string, n: ChangeNotification): void {
    this.deliver(n, messageFrame(n, group, 'json', n, null));
  }

  bufferedBytes(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  close(code: number, reason: string): void {
    this.ended = true;
    const socket = this.socket;
    // Without a socket, the recovery timer still ends (and forgets) the connection.
    if (!socket) return;
    clearTimeout(this.recoveryTimer);
    if (code !== 1008) this.write(JSON.stringify({ type: 'system', event: 'disconnected', message: reason }));
    socket.close(code, closeReason(reason));
    // A client that does not read will not answer the close either.
    setTimeout(() => socket.terminate(), 1000).unref();
  }

  /** Sends a text frame, given as a string or as its UTF-8 bytes. */
  write(frame: string | Buffer): void {
    if (this.socket?.readyState === 1) this.socket.send(frame, TEXT_FRAME);
  }

  /** Acknowledges `ackId` once; a repeat of a completed id answers `Duplicate`. */
  ack(ackId: number | undefined, error?: { name: AckError; message: string }): void {
    if (ackId === undefined) return;
    if (!error) this.remember(ackId);
    this.write(JSON.stringify(error ? { type: 'ack', ackId, success: false, error } : { type: 'ack', ackId, success: true }));
  }

  /** True when `ackId` was already completed by this connection. */
  isDuplicate(ackId: number | undefined): boolean {
    return ackId !== undefined && this.acks.has(ackId);
  }

  /** The client's `sequenceAck`: drops what it acknowledged (cumulative). */
  acknowledged(sequenceId: unknown): void {
    this.replay?.acknowledged(sequenceId);
    if (this.store && typeof sequenceId === 'number' && Number.isSafeInteger(sequenceId) && sequenceId > 0 && sequenceId <= this.replay!.last) {
      this.store.acked(this.connection.id, sequenceId);
    }
  }

  /**
   * Attaches a recovering socket and replays what the client has not acknowledged. A socket still
   * attached is half-open (its client gave up on it without the server seeing a close): it is dropped.
   * @returns false when the connection is over or lost messages (the client must start afresh)
   */
  recover(socket: WebSocket): boolean {
    if (this.ended || !this.replay?.recoverable) return false;
    clearTimeout(this.recoveryTimer);
    const stale = this.socket;
    this.socket = socket;
    stale?.terminate();
    this.alive = true;
    for (const frame of this.replay.pending()) socket.send(frame);
    return true;
  }

  private remember(ackId: number): void {
    this.acks.add(ackId);
    this.ackOrder.push(ackId);
    if (this.ackOrder.length > REMEMBERED_ACKS) this.acks.delete(this.ackOrder.shift()!);
  }

  /** Sends a data message: as is on the plain protocol, numbered and kept for replay on the reliable one. */
  private deliver(key: object, frame: string, message?: GroupMessage): void {
    if (!this.replay) return this.write(encodedFrame(key, frame));
    const numbered = this.replay.push(frame);
    // Stored before it is written: whatever the client got, another instance can continue from.
    if (this.store) this.store.sent(this.connection.id, this.replay.last, numbered, message && this.position(message));
    this.write(numbered);
  }

  /** Moves `message`'s group position on to it. */
  private position(message: GroupMessage): { name: string; state: StoredGroup } | undefined {
    const state = this.positions?.get(message.group);
    if (!state || !message.logId) return undefined;
    state.l = message.logId;
    state.t = Date.now();
    return { name: message.group, state };
  }
}
