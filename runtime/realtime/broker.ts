/**
 * @module The broker of one instance (STYLE §10.16): the connections this process holds, their channel
 * memberships and change-feed subscriptions, and delivery to them. Each connection's outgoing queue is
 * bounded by its transport: a connection that stops reading (`slow-reader.ts`: over `sendBufferBytes`
 * for longer than a grace, or past the room for a burst) is dropped and counted, never buffered for
 * ever; a write that throws drops that one connection with 1011. Delivery across instances is the
 * bus's job (`service.ts`); the broker only knows its own connections.
 */
import type { Caller } from '../auth/caller.js';
import type { Change } from '../data/changes.js';
import { HttpError } from '../errors.js';
import { SlowReaderRule, type SlowReaderOptions } from './slow-reader.js';
import { filterOf, matches, requireWithinBound, widens, type ListenFilter } from './listen-filter.js';

/** Most groups one connection may be a member of (entity feeds not counted). */
export const MAX_GROUPS_PER_CONNECTION = 1000;

/** How a message's `data` is typed on the Web PubSub wire (binary = base64 text). */
export type DataType = 'json' | 'text' | 'binary';

/** A message to the members of one group (a channel, SPEC §6.2). */
export interface GroupMessage {
  /** Wire name, `<api-name>:<channel>`. */
  group: string;
  dataType: DataType;
  /** json: any JSON value; text: a string; binary: a base64 string. */
  data: unknown;
  /** The sending connection (for `noEcho`); null when sent over HTTP or by a function. */
  fromConnectionId: string | null;
  /** The sender's identity id; null for anonymous senders, functions and the server. */
  fromUserId: string | null;
  /** Skip the sending connection. */
  noEcho: boolean;
  /** Its id in the group's log in Redis (`wps-store.ts`), `<instance>:<n>`; absent without Redis. */
  logId?: string;
}

/** The entity change notification of SPEC §2 / §6.1 (no field values). */
export interface ChangeNotification {
  action: string;
  /** `<api-name>/<collection>`. */
  path: string;
  ids: string[];
}

/** The wire side of a connection: a Web PubSub socket or a SignalR hub socket. */
export interface ConnectionTransport {
  /** Writes a channel message. */
  sendGroupMessage(message: GroupMessage): void;
  /** Writes an entity change notification that arrived for `group` (`<api-name>:<collection>`). */
  sendChange(group: string, notification: ChangeNotification): void;
  /** Bytes written but not yet taken by the client (the socket's send buffer). */
  bufferedBytes(): number;
  /** Closes the connection with a WebSocket close code and a reason (≤ 123 bytes). */
  close(code: number, reason: string): void;
  /** Told after the connection joined `group` (or changed its `readOnly`); optional. */
  joined?(group: string, readOnly: boolean): void;
  /** Told after the connection left `group`; optional. */
  left?(group: string): void;
  /** Told after a `_listen` widened the connection's subscription to `collection`, with the merged filter; optional. */
  listened?(collection: string, filter: ListenFilter): void;
  /** Told after the connection's subscription to `collection` ended (its LISTEN right is gone); optional. */
  unlistened?(collection: string): void;
}

/**
 * The flood allowance of one connection: a token bucket of `ratePerSecond` frames per second holding
 * at most two seconds' worth (svc.json `realtime.maxMessagesPerSecond`).
 */
export class FloodGate {
  private tokens: number;
  private refilledAt = Date.now();

  constructor(private readonly ratePerSecond: number) {
    this.tokens = ratePerSecond * 2;
  }

  /** Takes one frame from the allowance; false when the connection is over its rate. */
  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.ratePerSecond * 2, this.tokens + ((now - this.refilledAt) / 1000) * this.ratePerSecond);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** A change-feed subscription of one connection to one collection, merged over its `_listen` calls. */
interface Subscription extends ListenFilter {
  connection: Connection;
  ids: Set<string>;
  lookupIds: Set<string>;
}

/** A connection held by this instance. Its id carries the instance id (`<instance>.<random>`). */
export class Connection {
  /** Groups joined (wire names) and whether the membership is receive-only. */
  readonly groups = new Map<string, { readOnly: boolean }>();
  /** Collections listened to. */
  readonly listening = new Set<string>();

  constructor(
    readonly id: string,
    readonly kind: 'ws' | 'hub',
    /** Replaced when the identity's roles change (`identity-watch.ts`). */
    public caller: Caller,
    readonly transport: ConnectionTransport,
  ) {}
}

/** Counters of one broker. */
export interface BrokerStats {
  connections: number;
  groups: number;
  /** Connections dropped because they stopped reading (send buffer over its bound), since start. */
  slowDropped: number;
  /** Frames written to connections, since start. */
  framesOut: number;
}

/**
 * The connections of one instance and what they receive.
 * `sendBufferBytes` bounds each connection's queue (see the module notes).
 */
export class Broker {
  private readonly connections = new Map<string, Connection>();
  private readonly groups = new Map<string, Set<Connection>>();
  private readonly feeds = new Map<string, Map<string, Subscription>>();
  private slowDropped = 0;
  private framesOut = 0;
  private readonly slow: SlowReaderRule;

  constructor(
    private readonly apiName: string,
    /** The send-buffer bound in bytes, or the whole slow-reader rule (burst room and grace). */
    sendBuffer: number | SlowReaderOptions,
    private readonly onSlowDrop: (connection: Connection) => void = () => {},
    /** Told when writing to a connection threw: that connection (only) was dropped with 1011. */
    private readonly onDeliveryFailure: (connection: Connection, err: unknown) => void = () => {},
  ) {
    this.slow = new SlowReaderRule(typeof sendBuffer === 'number' ? { sendBufferBytes: sendBuffer } : sendBuffer);
  }

  add(connection: Connection): void {
    this.connections.set(connection.id, connection);
  }

  get(connectionId: string): Connection | undefined {
    return this.connections.get(connectionId);
  }

  /** Every connection held (for shutdown). */
  all(): Connection[] {
    return [...this.connections.values()];
  }

  /** Forgets a connection, its memberships and its subscriptions. */
  remove(connection: Connection): void {
    if (this.connections.get(connection.id) !== connection) return;
    this.connections.delete(connection.id);
    // Not `leave`: the transport is not told (a connection handed to another instance keeps its groups).
    for (const group of connection.groups.keys()) this.forgetMember(connection, group);
    connection.groups.clear();
    for (const collection of connection.listening) this.feeds.get(collection)?.delete(connection.id);
    connection.listening.clear();
  }

  /**
   * Adds `connection` to `group`; joining again updates `readOnly`.
   * @throws HttpError INVALID_PARAMETER (400) past `MAX_GROUPS_PER_CONNECTION` groups
   */
  join(connection: Connection, group: string, readOnly: boolean): void {
    if (!connection.groups.has(group) && connection.groups.size >= MAX_GROUPS_PER_CONNECTION) {
      throw new HttpError('INVALID_PARAMETER', `a connection may be in at most ${MAX_GROUPS_PER_CONNECTION} channels`);
    }
    connection.groups.set(group, { readOnly });
    let members = this.groups.get(group);
    if (!members) this.groups.set(group, (members = new Set()));
    members.add(connection);
    connection.transport.joined?.(group, readOnly);
  }

  leave(connection: Connection, group: string): void {
    if (connection.groups.delete(group)) connection.transport.left?.(group);
    this.forgetMember(connection, group);
  }

  private forgetMember(connection: Connection, group: string): void {
    const members = this.groups.get(group);
    if (!members) return;
    members.delete(connection);
    if (members.size === 0) this.groups.delete(group);
  }

  /**
   * Subscribes `connection` to the change feed of `collection`; `id` and `lookupIds` narrow it (SPEC
   * §4.7 rule 2). A second `_listen` widens the subscription; each notification is delivered once. The
   * transport is told (`listened`) when the subscription changed.
   * @throws HttpError INVALID_PARAMETER (400) when the merged filter would hold more than `MAX_LISTEN_IDS` ids
   */
  listen(connection: Connection, collection: string, filter: { id?: string; lookupIds?: string[] }): void {
    const wanted = filterOf(filter);
    const current = this.feeds.get(collection)?.get(connection.id);
    if (current && !widens(current, wanted)) return;
    requireWithinBound(current, wanted);
    const sub = this.subscribe(connection, collection, wanted);
    connection.transport.listened?.(collection, sub);
  }

  /**
   * Gives `connection` a subscription carried over from another instance (a recovered connection,
   * `wps-listens.ts`), merged into what it has; the transport is not told (the filter came from its store).
   */
  restoreListen(connection: Connection, collection: string, filter: ListenFilter): void {
    this.subscribe(connection, collection, filter);
  }

  private subscribe(connection: Connection, collection: string, filter: ListenFilter): Subscription {
    let subs = this.feeds.get(collection);
    if (!subs) this.feeds.set(collection, (subs = new Map()));
    let sub = subs.get(connection.id);
    if (!sub) subs.set(connection.id, (sub = { connection, all: false, ids: new Set(), lookupIds: new Set() }));
    connection.listening.add(collection);
    if (filter.all) sub.all = true;
    for (const id of filter.ids) sub.ids.add(id);
    for (const id of filter.lookupIds) sub.lookupIds.add(id);
    return sub;
  }

  /** Ends the change feed of `collection` for `connection` (the transport is told: `unlistened`). */
  unlisten(connection: Connection, collection: string): void {
    const listened = connection.listening.delete(collection);
    this.feeds.get(collection)?.delete(connection.id);
    if (listened) connection.transport.unlistened?.(collection);
  }

  /** Delivers a channel message to this instance's members of its group (not the sender under `noEcho`). */
  deliverGroup(message: GroupMessage): void {
    const members = this.groups.get(message.group);
    if (!members) return;
    for (const connection of members) {
      if (message.noEcho && connection.id === message.fromConnectionId) continue;
      if (!this.admit(connection)) continue;
      // Inline, not through `write`: no closure per recipient on the fan-out path.
      try {
        connection.transport.sendGroupMessage(message);
      } catch (err) {
        this.failed(connection, err);
      }
    }
  }

  /** Delivers a channel message to one connection alone (a welcome after a join, `service.ts`). */
  deliverOne(connection: Connection, message: GroupMessage): void {
    if (this.admit(connection)) this.write(connection, () => connection.transport.sendGroupMessage(message));
  }

  /** Delivers one committed change to this instance's subscribers whose filter it matches. */
  deliverChange(change: Change): void {
    const subs = this.feeds.get(change.collection);
    if (!subs || subs.size === 0) return;
    const group = `${this.apiName}:${change.collection}`;
    const notification: ChangeNotification = { action: change.action, path: `${this.apiName}/${change.collection}`, ids: change.ids };
    for (const sub of subs.values()) {
      if (!matches(sub, change)) continue;
      if (this.admit(sub.connection)) this.write(sub.connection, () => sub.connection.transport.sendChange(group, notification));
    }
  }

  stats(): BrokerStats {
    return { connections: this.connections.size, groups: this.groups.size, slowDropped: this.slowDropped, framesOut: this.framesOut };
  }

  /** Runs one write to `connection`; a throw drops that connection (1011), never the others or the sender. */
  private write(connection: Connection, send: () => void): void {
    this.framesOut += 1;
    try {
      send();
    } catch (err) {
      this.failed(connection, err);
    }
  }

  /** Writing to `connection` threw: it (only) is dropped with 1011. */
  private failed(connection: Connection, err: unknown): void {
    this.remove(connection);
    try {
      connection.transport.close(1011, 'internal server error');
    } catch {
      // The transport is broken beyond closing: it is forgotten all the same.
    }
    this.onDeliveryFailure(connection, err);
  }

  /** False (and the connection dropped) when it does not read (`slow-reader.ts`). */
  private admit(connection: Connection): boolean {
    if (this.slow.admits(connection, connection.transport.bufferedBytes())) return true;
    this.slowDropped += 1;
    this.remove(connection);
    connection.transport.close(1008, 'send buffer full: the client is not reading');
    this.onSlowDrop(connection);
    return false;
  }
}
