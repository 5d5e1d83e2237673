/**
 * @module The bus between `svc serve` instances (DESIGN §6, issue "real-time" § Many instances): group
 * messages and committed changes are broadcast to every other instance, and a join, leave or listen for a
 * connection held elsewhere is a call to the holding instance, answered by a reply. In-process by
 * default (`LocalBus`: there is no other instance); Redis pub/sub when configured (`redis-bus.ts`).
 *
 * A connection id starts with the id of the instance that made it (`<instance>.<random>`), so a call
 * goes straight to that instance, with no shared registry to keep; a hub connection whose socket opened
 * elsewhere is passed on from there (`homes.ts`).
 */
import { randomBytes } from 'node:crypto';
import type { Change } from '../data/changes.js';
import type { IdentityKind } from '../auth/identity-cache.js';
import type { ErrorCode } from '../contract/errors.js';
import type { GroupMessage } from './broker.js';

/** Who asks for a remote operation: ownership of the connection is checked where it lives. */
export interface Actor {
  /** The asking identity's id (null: anonymous or a function without a caller). */
  userId: string | null;
  /** Admins and function code may act on any connection; clients only on their own. */
  privileged: boolean;
}

/** An operation on a connection, run by the instance that holds it. */
export type ConnectionOp =
  /**
   * `sticky`: a receive-only membership stays receive-only (a client cannot lift what a function set).
   * `welcome`: JSON text sent to this connection alone, as a message of `group`, right after it joined
   * — only when it was not a member already (the agent's `history` of a running turn, DESIGN §7a).
   */
  | { op: 'join'; connectionId: string; group: string; readOnly: boolean; sticky?: boolean; welcome?: string; actor: Actor }
  | { op: 'leave'; connectionId: string; group: string; actor: Actor }
  | { op: 'listen'; connectionId: string; type: 'ws' | 'hub'; collection: string; id?: string; lookupIds?: string[]; actor: Actor };

/** The result of a `ConnectionOp`: done, or the error to answer (404 unknown connection, 403 not yours…). */
export type OpResult = { ok: true } | { ok: false; code: ErrorCode; message: string };

/** What travels on the bus. */
export type BusMessage =
  | { t: 'group'; message: GroupMessage }
  | { t: 'change'; change: Change }
  /** An identity was deleted, disabled or given new grants: forget it, re-check its sockets (identity-watch.ts). */
  | { t: 'identity'; kind: IdentityKind; id: string }
  /** A call to the instance that holds what it asks for: `topic` `connection` (a `ConnectionOp`), `agent`, … */
  | { t: 'call'; callId: string; from: string; topic: string; payload: unknown }
  | { t: 'reply'; callId: string; payload: unknown };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

/**
 * True when `value` has the shape of a `BusMessage` (what another instance or a `svc` command
 * publishes): the fields each kind needs, with their types. What fails is dropped by the receiver,
 * so a stray or corrupted publish on the app's Redis channels never reaches the handlers.
 */
export function isBusMessage(value: unknown): value is BusMessage {
  if (!isObject(value)) return false;
  switch (value.t) {
    case 'group': {
      const m = value.message;
      return (
        isObject(m) &&
        isString(m.group) &&
        (m.dataType === 'json' || m.dataType === 'text' || m.dataType === 'binary') &&
        (m.fromConnectionId === null || isString(m.fromConnectionId)) &&
        (m.fromUserId === null || isString(m.fromUserId)) &&
        typeof m.noEcho === 'boolean' &&
        (m.logId === undefined || isString(m.logId))
      );
    }
    case 'change': {
      const c = value.change;
      return isObject(c) && isString(c.collection) && isString(c.action) && isStrings(c.ids) && isStrings(c.lookupIds);
    }
    case 'identity':
      return (value.kind === 'user' || value.kind === 'serviceAccount') && isString(value.id);
    case 'call':
      return isString(value.callId) && isString(value.from) && isString(value.topic);
    case 'reply':
      return isString(value.callId);
    default:
      return false;
  }
}

/** The transport between instances. */
export interface RealtimeBus {
  /** This instance's id: the prefix of its connection ids (URL-safe, no `.`). */
  readonly instanceId: string;
  /** Starts receiving: `onMessage` gets what other instances broadcast or send here. */
  start(onMessage: (message: BusMessage) => void): Promise<void>;
  /** Sends to every other instance; a message that cannot be sent is logged as lost, never thrown. */
  broadcast(message: BusMessage): void;
  /** Sends to one instance; false when no instance of that id is listening (or the bus is down). */
  sendTo(instanceId: string, message: BusMessage): Promise<boolean>;
  close(): Promise<void>;
  /** Messages published and received since start (Redis: the metrics of docs/operations.md). */
  readonly counts?: { published: number; received: number };
}

/** A new instance id: 12 URL-safe characters. */
export const newInstanceId = (): string => randomBytes(9).toString('base64url');

/** The id of the instance holding `connectionId`, or null for a malformed id. */
export function instanceOf(connectionId: string): string | null {
  const dot = connectionId.indexOf('.');
  return dot > 0 ? connectionId.slice(0, dot) : null;
}

/** The bus of a single instance: nothing to broadcast to, no other instance to call. */
export class LocalBus implements RealtimeBus {
  readonly instanceId = newInstanceId();
  async start(): Promise<void> {}
  broadcast(): void {}
  async sendTo(): Promise<boolean> {
    return false;
  }
  async close(): Promise<void> {}
}
