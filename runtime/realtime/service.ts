/**
 * @module The real-time service of one instance (SPEC §4.7, §6.1, §6.2; DESIGN §4 "Real-time details",
 * §6): the broker of its connections, the bus to other instances, and the operations every transport
 * shares — join, leave, listen, send — so that HTTP (`http.ts`), the Web PubSub socket (`wps.ts`), the
 * SignalR hub (`hub.ts`) and function code apply one set of rules (STYLE §10.15).
 *
 * It is the app's `ChangeSink`: each committed change set is delivered to this instance's subscribers
 * and broadcast once to the others. A join or listen for a connection held by another instance is a
 * call to that instance, answered only once it is in effect there (DESIGN §4: "in effect … before the
 * answer is sent").
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import type { AuthService } from '../auth/auth-service.js';
import type { Change, ChangeSink } from '../data/changes.js';
import type { Logger } from '../log.js';
import type { AppManifest } from '../manifest.js';
import { REALTIME_DEFAULTS } from '../contract/settings.js';
import { AddressLimiter, admitAddress, type RealtimeLimits } from './admission.js';
import { Broker, Connection, type BrokerStats, type GroupMessage } from './broker.js';
import { SLOW_READER_GRACE_MS } from './slow-reader.js';
import { instanceOf, type Actor, type BusMessage, type ConnectionOp, type OpResult, type RealtimeBus } from './bus.js';
import type { ChannelRules } from './channels.js';
import type { ReplayGuard } from './tokens.js';
import { ConnectionHomes } from './homes.js';
import { contain, refuseUpgrade, upgradeRequestId, upgradeUrl } from './guard.js';
import type { ReplayStore } from './wps-store.js';

/** How long a call to another instance may take before it is answered 503, ms. */
const CALL_TIMEOUT_MS = 5000;
/** The `rpc` topic of connection operations (join, leave, listen) sent to the holding instance. */
const CONNECTION_TOPIC = 'connection';

/**
 * Takes a WebSocket upgrade for one path (`wps.ts`, `hub.ts`). A throw or rejection before the socket
 * is upgraded answers 400 (`handleUpgrade`); after, the handler's own guard closes the socket 1011.
 */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void | Promise<void>;

export interface RealtimeServiceOptions {
  manifest: AppManifest;
  auth: AuthService;
  logger: Logger;
  bus: RealtimeBus;
  /** Where used one-time token ids are remembered (Redis with several instances). */
  guard: ReplayGuard;
  /** Reliable Web PubSub state and group logs in Redis (`wps-store.ts`); absent without Redis. */
  replayStore?: ReplayStore;
}

/** The actor of function code: any connection, private channels allowed. */
export const FUNCTION_ACTOR: Actor = { userId: null, privileged: true };

/** The actor of an HTTP or socket caller. */
export const actorOf = (caller: Caller): Actor => ({ userId: caller.id, privileged: caller.admin });

export class RealtimeService implements ChangeSink {
  readonly broker: Broker;
  readonly rules: ChannelRules;
  readonly limits: RealtimeLimits;
  /** Sockets open per client address (`maxConnectionsPerAddress`). */
  readonly addresses: AddressLimiter;
  /** The app model in force (`svc dev` replaces it: `useManifest`). */
  manifest: AppManifest;
  readonly auth: AuthService;
  readonly logger: Logger;
  readonly guard: ReplayGuard;
  /** Hub connections made here whose socket opened on another instance (`homes.ts`). */
  readonly homes: ConnectionHomes;
  /** Reliable Web PubSub state and group logs in Redis; null without Redis. */
  readonly replayStore: ReplayStore | null;
  readonly bus: RealtimeBus;
  /** Numbers the channel messages sent here (their `logId`). */
  private logged = 0;
  private readonly upgrades = new Map<string, UpgradeHandler>();
  private readonly closers: (() => void)[] = [];
  private readonly taps: ((message: GroupMessage) => void)[] = [];
  private readonly rpcHandlers = new Map<string, (payload: unknown) => Promise<unknown>>();
  private readonly rpcWaits = new Map<string, { done: (r: RpcResult) => void; timer: NodeJS.Timeout }>();
  private closed = false;
  /** Channel messages sent on this instance (clients, functions, the agent), since start. */
  private messagesIn = 0;

  constructor(options: RealtimeServiceOptions) {
    this.manifest = options.manifest;
    this.auth = options.auth;
    this.logger = options.logger.child({ component: 'realtime' });
    this.guard = options.guard;
    this.bus = options.bus;
    this.replayStore = options.replayStore ?? null;
    this.onRpc(CONNECTION_TOPIC, async (op) => this.applyHeld(op as ConnectionOp));
    this.homes = new ConnectionHomes(this);
    this.limits = { ...REALTIME_DEFAULTS, ...withoutUndefined(options.manifest.settings.realtime) };
    this.addresses = new AddressLimiter(this.limits.maxConnectionsPerAddress);
    this.rules = { apiName: options.manifest.name, collections: new Set(options.manifest.collections.map((c) => c.name)) };
    this.broker = new Broker(
      this.rules.apiName,
      // Room for a few full frames one sender may send at once (issue 20 §2).
      { sendBufferBytes: this.limits.sendBufferBytes, burstBytes: 4 * this.limits.maxFrameBytes, graceMs: SLOW_READER_GRACE_MS },
      (c) => this.logger.warn({ connectionId: c.id, slowDropped: this.broker.stats().slowDropped }, 'connection dropped: it stopped reading'),
      (c, err) => this.logger.error({ err, connectionId: c.id }, 'writing to a connection failed: it is closed'),
    );
  }

  /**
   * Serves a new version of the app model (`svc dev`, DESIGN §10): LISTEN rules and the collections
   * that have change feeds follow it; open connections, their groups and the limits stay.
   */
  useManifest(manifest: AppManifest): void {
    this.manifest = manifest;
    this.rules.collections = new Set(manifest.collections.map((c) => c.name));
  }

  /** Starts the bus. */
  async start(): Promise<void> {
    await this.bus.start((m) =>
      contain(
        () => this.onBus(m),
        (err) => this.logger.error({ err, bus: m.t }, 'a message from another instance could not be handled'),
      ),
    );
  }

  /** This instance's id (the prefix of its connection ids). */
  get instanceId(): string {
    return this.bus.instanceId;
  }

  /** A new connection id held by this instance: `<instance>.<22 random URL-safe characters>`. */
  newConnectionId(): string {
    return `${this.bus.instanceId}.${randomBytes(16).toString('base64url')}`;
  }

  /** Registers the upgrade handler of one path (under `/api/_rt/`). */
  onUpgrade(path: string, handler: UpgradeHandler): void {
    this.upgrades.set(path, handler);
  }

  /**
   * Sees every channel message sent on any instance (the agent takes the client frames of its session
   * channels here). A listener must not throw and must return quickly.
   */
  onGroupMessage(listener: (message: GroupMessage) => void): void {
    this.taps.push(listener);
  }

  /** Answers calls of `topic` from other instances (`rpc`); the handler's result is sent back. */
  onRpc(topic: string, handler: (payload: unknown) => Promise<unknown>): void {
    this.rpcHandlers.set(topic, handler);
  }

  /**
   * Calls `topic` on another instance and waits for its answer.
   * @returns `delivered: false` when no instance of that id listens (it is gone, or there is no bus);
   *   `timedOut: true` when it did not answer within `timeoutMs`
   */
  rpc(instanceId: string, topic: string, payload: unknown, timeoutMs: number): Promise<RpcResult> {
    const callId = randomUUID();
    return new Promise<RpcResult>((resolve) => {
      const timer = setTimeout(() => {
        this.rpcWaits.delete(callId);
        resolve({ delivered: true, timedOut: true });
      }, timeoutMs);
      this.rpcWaits.set(callId, { timer, done: resolve });
      this.bus.sendTo(instanceId, { t: 'call', callId, from: this.bus.instanceId, topic, payload }).then(
        (delivered) => {
          if (delivered) return;
          clearTimeout(timer);
          this.rpcWaits.delete(callId);
          resolve({ delivered: false });
        },
        () => {},
      );
    });
  }

  /** Registers work to do when the service closes (stopping timers). */
  onClose(closer: () => void): void {
    this.closers.push(closer);
  }

  /**
   * Takes an HTTP upgrade request: true when a real-time path answered it (the socket is then the
   * handler's), false for any other path (the caller answers 404 and destroys the socket). A path that
   * is not a URL answers 400; an address over `maxConnectionsPerAddress` answers 429 `RATE_LIMITED`.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = upgradeUrl(req);
    if (!url) {
      refuseUpgrade(socket, new HttpError('INVALID_PARAMETER', 'the request path is not a valid URL'));
      return true;
    }
    const handler = this.upgrades.get(url.pathname);
    if (!handler) return false;
    if (!admitAddress(this.addresses, this.auth.clientAddress(req) ?? 'unknown', socket)) return true; // svc.json trustedProxies
    // Errors after the socket became a WebSocket are the handler's (1011); before, they answer 400.
    contain(
      () => handler(req, socket, head, url),
      (err) => {
        this.logger.error({ err, reqId: upgradeRequestId(req, this.auth.trustedPeer), path: url.pathname }, 'real-time upgrade failed');
        refuseUpgrade(socket, new HttpError('INVALID_PARAMETER', 'the upgrade request could not be handled'));
      },
    );
    return true;
  }

  /** Counters of this instance for the metrics (docs/operations.md): the broker's, messages sent here, the bus's. */
  stats(): BrokerStats & { messagesIn: number; bus?: { published: number; received: number } } {
    return { ...this.broker.stats(), messagesIn: this.messagesIn, bus: this.bus.counts };
  }

  // ---- ChangeSink --------------------------------------------------------------------------------

  /** Delivers committed changes here and broadcasts them to the other instances (SPEC §6.1). */
  publish(changes: Change[]): void {
    for (const change of changes) {
      this.broker.deliverChange(change);
      this.bus.broadcast({ t: 'change', change });
    }
  }

  // ---- operations shared by every transport ------------------------------------------------------

  /**
   * Sends a channel message to every member on every instance (SPEC §6.2).
   * @throws HttpError INVALID_PARAMETER (400) for data nested deeper than `MAX_DATA_DEPTH`
   */
  send(message: GroupMessage): void {
    requireShallow(message.data);
    this.messagesIn += 1;
    if (this.replayStore) {
      // Logged before the bus publishes it (one Redis connection, in order): a recovering connection finds it.
      message.logId = `${this.bus.instanceId}:${++this.logged}`;
      this.replayStore.append(message);
    }
    this.broker.deliverGroup(message);
    this.bus.broadcast({ t: 'group', message });
    this.tap(message);
  }

  private tap(message: GroupMessage): void {
    for (const listener of this.taps) {
      try {
        listener(message);
      } catch (err) {
        this.logger.error({ err, group: message.group }, 'a channel message listener failed');
      }
    }
  }

  /**
   * Runs a join, leave or listen where the connection lives and resolves once it is in effect.
   * @throws HttpError NOT_FOUND (404) for a connection no instance holds; FORBIDDEN (403) for a client
   *   acting on another identity's connection; INVALID_PARAMETER (400) for a `type` that is not the
   *   connection's, past `MAX_GROUPS_PER_CONNECTION` channels or `MAX_LISTEN_IDS` listened ids;
   *   SERVICE_UNAVAILABLE (503) when the holding instance does not answer in time
   */
  async apply(op: ConnectionOp): Promise<void> {
    const instance = this.broker.get(op.connectionId) ? this.bus.instanceId : (this.homes.holderOf(op.connectionId) ?? instanceOf(op.connectionId));
    let result: OpResult;
    if (instance === null) result = unknownConnection(op.connectionId);
    else if (instance === this.bus.instanceId) result = this.applyLocal(op);
    else result = await this.call(instance, op);
    if (!result.ok) throw new HttpError(result.code, result.message);
  }

  /** Detaches a closed connection. */
  drop(connection: Connection): void {
    this.broker.remove(connection);
  }

  /** Closes every connection with 1001 and stops the bus (after HTTP has drained). */
  async close(): Promise<void> {
    for (const closer of this.closers) closer();
    for (const connection of this.broker.all()) {
      this.broker.remove(connection);
      connection.transport.close(1001, 'server shutting down');
    }
    this.closed = true;
    for (const { timer, done } of this.rpcWaits.values()) {
      clearTimeout(timer);
      done({ delivered: true, timedOut: true });
    }
    await this.bus.close();
  }

  /** A call from another instance: run here, or passed on once to the instance a hub connection made here moved to (`homes.ts`). */
  private async applyHeld(op: ConnectionOp): Promise<OpResult> {
    const holder = this.broker.get(op.connectionId) ? undefined : this.homes.holderOf(op.connectionId);
    return holder === undefined ? this.applyLocal(op) : this.call(holder, op);
  }

  private applyLocal(op: ConnectionOp): OpResult {
    const connection = this.broker.get(op.connectionId);
    if (!connection) return unknownConnection(op.connectionId);
    if (!op.actor.privileged && connection.caller.id !== op.actor.userId) {
      return { ok: false, code: 'FORBIDDEN', message: `connection ${op.connectionId} belongs to another identity: a caller may join only its own connections` };
    }
    if (op.op === 'listen' && connection.kind !== op.type) {
      return { ok: false, code: 'INVALID_PARAMETER', message: `connection ${op.connectionId} is a ${connection.kind} connection, not ${op.type}` };
    }
    try {
      switch (op.op) {
        case 'join': {
          const member = connection.groups.has(op.group);
          this.broker.join(connection, op.group, op.readOnly || (op.sticky === true && connection.groups.get(op.group)?.readOnly === true));
          if (!member && typeof op.welcome === 'string') this.broker.deliverOne(connection, serverMessage(op.group, op.welcome));
          break;
        }
        case 'leave':
          this.broker.leave(connection, op.group);
          break;
        case 'listen':
          this.broker.listen(connection, op.collection, { id: op.id, lookupIds: op.lookupIds });
          break;
      }
    } catch (err) {
      // The broker's refusals (too many channels or ids) travel back as results, across instances too.
      if (err instanceof HttpError) return { ok: false, code: err.code, message: err.message };
      throw err;
    }
    return { ok: true };
  }

  /** A connection operation run by the instance that holds the connection (`rpc` topic `connection`). */
  private async call(instance: string, op: ConnectionOp): Promise<OpResult> {
    const answer = await this.rpc(instance, CONNECTION_TOPIC, op, CALL_TIMEOUT_MS);
    if (!answer.delivered) return unknownConnection(op.connectionId);
    if (answer.timedOut) {
      const message = this.closed ? 'the server is shutting down' : `the instance holding connection ${op.connectionId} did not answer`;
      return { ok: false, code: 'SERVICE_UNAVAILABLE', message };
    }
    return answer.reply as OpResult;
  }

  private onBus(m: BusMessage): void {
    switch (m.t) {
      case 'group':
        this.broker.deliverGroup(m.message);
        this.tap(m.message);
        break;
      case 'change':
        this.broker.deliverChange(m.change);
        break;
      case 'identity':
        this.auth.identities.changed(m.kind, m.id, 'bus');
        break;
      case 'call': {
        const handler = this.rpcHandlers.get(m.topic);
        if (!handler) return;
        handler(m.payload).then(
          (payload) => void this.bus.sendTo(m.from, { t: 'reply', callId: m.callId, payload }),
          (err: unknown) => this.logger.error({ err, topic: m.topic }, 'a call from another instance failed'),
        );
        break;
      }
      case 'reply': {
        const waiting = this.rpcWaits.get(m.callId);
        if (!waiting) return;
        clearTimeout(waiting.timer);
        this.rpcWaits.delete(m.callId);
        waiting.done({ delivered: true, reply: m.payload });
        break;
      }
    }
  }
}

/** The outcome of `RealtimeService.rpc`. */
export type RpcResult = { delivered: false } | { delivered: true; timedOut: true } | { delivered: true; reply: unknown; timedOut?: undefined };

/** A JSON channel message from the server (no sending connection or identity). */
const serverMessage = (group: string, data: string): GroupMessage => ({
  group,
  dataType: 'json',
  data,
  fromConnectionId: null,
  fromUserId: null,
  noEcho: false,
});

const unknownConnection = (id: string): OpResult => ({ ok: false, code: 'NOT_FOUND', message: `no connection ${JSON.stringify(id)} is open` });

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Deepest nesting of arrays and objects in a channel message's data (deeper cannot be re-serialized safely). */
export const MAX_DATA_DEPTH = 64;

/** True when `data` nests arrays and objects deeper than `MAX_DATA_DEPTH` (checked without recursion). */
export function nestedTooDeep(data: unknown): boolean {
  const stack: [unknown, number][] = [[data, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_DATA_DEPTH) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}

/** @throws HttpError INVALID_PARAMETER (400) when `data` nests deeper than `MAX_DATA_DEPTH` */
function requireShallow(data: unknown): void {
  if (nestedTooDeep(data)) throw new HttpError('INVALID_PARAMETER', `the message data is nested deeper than ${MAX_DATA_DEPTH} levels`);
}
