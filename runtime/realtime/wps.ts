/**
 * @module The WebSocket service on the Azure Web PubSub JSON subprotocols (`json.webpubsub.azure.v1`
 * and the default of `@azure/web-pubsub-client`, `json.reliable.webpubsub.azure.v1`), at
 * `/api/_rt/client?access_token=<one-time token>` (SPEC §4.7, §4.12; ../shared/notes/realtime-protocols.md §1).
 *
 * - Upgrade: the one-time token names the caller; the offered subprotocol is echoed; the first frame is
 *   the `connected` system event (`connectionId`, `userId`, and on the reliable protocol a
 *   `reconnectionToken`).
 * - Client frames: `joinGroup`, `leaveGroup`, `sendToGroup` (`noEcho`; `dataType` json, text or
 *   binary), `event`, `ping` (→ `pong`), `sequenceAck`. Every `ackId` gets exactly one ack: success, an
 *   error (`Forbidden`, `BadRequest`), or `Duplicate` for an id this connection already completed.
 * - Reliable protocol: each data message carries a per-connection `sequenceId` (1, 2, …) and stays in a
 *   bounded replay queue until the client's `sequenceAck` covers it. A dropped socket keeps its
 *   connection (groups, subscriptions, queued messages) for `RECOVERY_GRACE_MS`; the client's recovery
 *   upgrade (`awps_connection_id`, `awps_reconnection_token`) re-attaches it and replays what was not
 *   acknowledged; a socket the connection still holds is half-open and is dropped. A recovery that
 *   cannot be honoured (unknown connection, wrong token, messages lost from a full replay queue) is
 *   accepted and closed with 1008, which makes the client reconnect afresh at once; a wrong token
 *   leaves the connection waiting for its own client.
 * - Bad input never crashes: a binary frame closes with 1003, invalid JSON or an unknown frame type
 *   without `ackId` with 1007, a frame over `maxFrameBytes` with 1009 (by `ws`), a flood over
 *   `maxMessagesPerSecond` with 1008.
 */
import type { IncomingMessage } from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import { Connection, FloodGate, type ChangeNotification, type ConnectionTransport, type DataType, type GroupMessage } from './broker.js';
import { channelOfClientGroup } from './channels.js';
import { verifyRealtimeToken } from './tokens.js';
import type { RealtimeService } from './service.js';
import { closeInternal, closeReason, contain, describe, guardListener, refuseUpgrade } from './guard.js';

/** The subprotocols accepted: Azure's two names, and `json[.reliable].webpubsub.<vendor>.v1` of SPEC §4.12. */
const SUBPROTOCOL = /^json\.(reliable\.)?webpubsub\.[a-z0-9-]+\.v1$/i;

/** How long a dropped reliable connection waits for its client to recover it (the client tries for 30 s), ms. */
export const RECOVERY_GRACE_MS = 30_000;

/** Ack ids remembered per connection for `Duplicate` answers. */
const REMEMBERED_ACKS = 1024;

/** Interval of the server's WebSocket-level liveness check; a socket silent for two of them is dropped, ms. */
const LIVENESS_INTERVAL_MS = 30_000;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The frames of one message, built once and shared by every recipient. */
const frames = new WeakMap<object, string>();
/** The same frames as UTF-8 bytes (plain protocol: one encoding per message, not one per recipient). */
const encoded = new WeakMap<object, Buffer>();
/** `ws` send options of a text frame given as bytes. */
const TEXT_FRAME = { binary: false };

function encodedFrame(key: object, frame: string): Buffer {
  let bytes = encoded.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(frame);
    encoded.set(key, bytes);
  }
  return bytes;
}

function messageFrame(key: object, group: string, dataType: DataType, data: unknown, fromUserId: string | null): string {
  let frame = frames.get(key);
  if (frame === undefined) {
    frame = JSON.stringify({ type: 'message', from: 'group', group, dataType, data, fromUserId });
    frames.set(key, frame);
  }
  return frame;
}

/** Web PubSub error names of an ack (notes §1.3). */
type AckError = 'Forbidden' | 'BadRequest' | 'Duplicate' | 'InternalServerError';

/** One Web PubSub connection: its socket (absent while a reliable connection waits for recovery) and state. */
class WpsSession implements ConnectionTransport {
  socket: WebSocket | null;
  connection!: Connection;
  alive = true;
  /** Set once the connection is over for good (no recovery). */
  ended = false;
  private sequence = 0;
  private readonly replay: { seq: number; frame: string }[] = [];
  private replayBytes = 0;
  /** A message was dropped from a full replay queue before it was acknowledged: recovery is impossible. */
  private replayGap = false;
  private readonly acks = new Set<number>();
  private readonly ackOrder: number[] = [];
  recoveryTimer: NodeJS.Timeout | undefined;
  readonly flood: FloodGate;

  constructor(
    socket: WebSocket,
    readonly reliable: boolean,
    readonly reconnectionToken: string | undefined,
    ratePerSecond: number,
    /** Most bytes of unacknowledged messages kept for replay (svc.json `realtime.sendBufferBytes`). */
    private readonly replayLimit: number,
  ) {
    this.socket = socket;
    this.flood = new FloodGate(ratePerSecond);
  }

  sendGroupMessage(m: GroupMessage): void {
    this.deliver(m, messageFrame(m, m.group, m.dataType, m.data, m.fromUserId));
  }

  sendChange(group: string, n: ChangeNotification): void {
    this.deliver(n, messageFrame(n, group, 'json', n, null));
  }

  bufferedBytes(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  close(code: number, reason: string): void {
    this.ended = true;
    clearTimeout(this.recoveryTimer);
    const socket = this.socket;
    if (!socket) return;
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

  /** Drops replay entries the client acknowledged (cumulative). */
  acknowledged(sequenceId: number): void {
    while (this.replay.length > 0 && this.replay[0].seq <= sequenceId) this.replayBytes -= this.replay.shift()!.frame.length;
  }

  /**
   * Attaches a recovering socket and replays what the client has not acknowledged. A socket still
   * attached is half-open (its client gave up on it without the server seeing a close): it is dropped.
   */
  recover(socket: WebSocket): boolean {
    if (this.ended || this.replayGap) return false;
    clearTimeout(this.recoveryTimer);
    const stale = this.socket;
    this.socket = socket;
    stale?.terminate();
    this.alive = true;
    for (const entry of this.replay) socket.send(entry.frame);
    return true;
  }

  private remember(ackId: number): void {
    this.acks.add(ackId);
    this.ackOrder.push(ackId);
    if (this.ackOrder.length > REMEMBERED_ACKS) this.acks.delete(this.ackOrder.shift()!);
  }

  /** Sends a data message: as is on the plain protocol, numbered and kept for replay on the reliable one. */
  private deliver(key: object, frame: string): void {
    if (!this.reliable) {
      this.write(encodedFrame(key, frame));
      return;
    }
    const seq = ++this.sequence;
    const numbered = `${frame.slice(0, -1)},"sequenceId":${seq}}`;
    this.replay.push({ seq, frame: numbered });
    this.replayBytes += numbered.length;
    while (this.replayBytes > this.replayLimit && this.replay.length > 1) {
      this.replayBytes -= this.replay.shift()!.frame.length;
      this.replayGap = true;
    }
    this.write(numbered);
  }
}

function offeredProtocol(req: IncomingMessage): string | undefined {
  return String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .find((p) => SUBPROTOCOL.test(p));
}

/**
 * Serves the Web PubSub endpoint `/api/_rt/client` for `service` (registers its upgrade handler and a
 * liveness sweep stopped when the service closes).
 */
export function serveWebPubSub(service: RealtimeService): void {
  const { limits, logger } = service;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxFrameBytes,
    handleProtocols: (offered) => [...offered].find((p) => SUBPROTOCOL.test(p)) ?? false,
  });
  const sessions = new Map<string, WpsSession>();

  const sweep = setInterval(() => {
    for (const session of sessions.values()) {
      const socket = session.socket;
      if (!socket) continue;
      if (!session.alive) socket.terminate();
      else {
        session.alive = false;
        contain(
          () => socket.ping(),
          () => socket.terminate(),
        );
      }
    }
  }, LIVENESS_INTERVAL_MS);
  sweep.unref();
  service.onClose(() => {
    clearInterval(sweep);
    wss.close();
  });

  /** The connection is over: forget it everywhere. */
  const end = (session: WpsSession) => {
    session.ended = true;
    clearTimeout(session.recoveryTimer);
    sessions.delete(session.connection.id);
    service.drop(session.connection);
  };

  const attach = (session: WpsSession, socket: WebSocket) => {
    const guarded = <A extends unknown[]>(listener: (...args: A) => unknown) =>
      guardListener(
        logger,
        socket,
        () => ({ connectionId: session.connection.id }),
        () => session.close(1011, 'internal server error'),
        listener,
      );
    socket.on('pong', () => (session.alive = true));
    socket.on(
      'message',
      guarded((data: RawData, isBinary: boolean) => onFrame(service, session, data, isBinary)),
    );
    socket.on('error', () => {});
    socket.on(
      'close',
      guarded(() => {
        if (session.socket !== socket) return;
        session.socket = null;
        if (!session.reliable || session.ended) return end(session);
        // Reliable: keep the connection for its client's recovery.
        session.recoveryTimer = setTimeout(
          () =>
            contain(
              () => end(session),
              (err) => logger.error({ err, connectionId: session.connection.id }, 'ending a connection failed'),
            ),
          RECOVERY_GRACE_MS,
        );
        session.recoveryTimer.unref();
      }),
    );
  };
  /** A `handleUpgrade` callback whose unexpected exception closes the new socket with 1011. */
  const upgraded =
    (context: Record<string, unknown>, callback: (ws: WebSocket) => void) =>
    (ws: WebSocket): void =>
      contain(
        () => callback(ws),
        (err) => {
          logger.error({ err, ...context }, 'real-time upgrade failed: the socket is closed');
          closeInternal(ws);
        },
      );

  service.onUpgrade('/api/_rt/client', (req, socket, head, url) => {
    socket.on('error', () => {});
    const recoverId = url.searchParams.get('awps_connection_id');
    if (recoverId) {
      // Recovery (notes §1.5): never refused at the HTTP level; a session that cannot resume closes 1008.
      wss.handleUpgrade(
        req,
        socket,
        head,
        upgraded({ connectionId: recoverId }, (ws) => {
          const session = sessions.get(recoverId);
          const token = url.searchParams.get('awps_reconnection_token');
          if (!session || !session.reconnectionToken || !sameSecret(token, session.reconnectionToken)) {
            // Not the connection's client: refused, and the session is left for its own client.
            ws.close(1008, 'the connection cannot be recovered');
            return;
          }
          if (!session.recover(ws)) {
            // Its client, but messages were lost: the connection is over, and the client starts afresh.
            if (session.socket) session.close(1008, 'the connection cannot be recovered');
            else end(session);
            ws.close(1008, 'the connection cannot be recovered');
            return;
          }
          attach(session, ws);
          logger.debug({ connectionId: recoverId }, 'connection recovered');
        }),
      );
      return;
    }
    const protocol = offeredProtocol(req);
    const token = url.searchParams.get('access_token');
    return (async () => {
      let caller: Caller;
      try {
        if (!protocol) throw new HttpError('INVALID_PARAMETER', 'offer the subprotocol json.webpubsub.azure.v1 or json.reliable.webpubsub.azure.v1');
        if (!token) throw new HttpError('UNAUTHORIZED', 'the URL carries no access_token: get one from GET /api/_rt/ws');
        caller = (await verifyRealtimeToken(service.auth, service.guard, token, 'ws')).caller;
      } catch (err) {
        refuseUpgrade(socket, err);
        return;
      }
      wss.handleUpgrade(
        req,
        socket,
        head,
        upgraded({}, (ws) => {
          const reliable = /^json\.reliable\./i.test(ws.protocol);
          const reconnectionToken = reliable ? randomBytes(24).toString('base64url') : undefined;
          const session = new WpsSession(ws, reliable, reconnectionToken, limits.maxMessagesPerSecond, limits.sendBufferBytes);
          const connection = new Connection(service.newConnectionId(), 'ws', caller, session);
          session.connection = connection;
          sessions.set(connection.id, session);
          service.broker.add(connection);
          attach(session, ws);
          session.write(
            JSON.stringify({ type: 'system', event: 'connected', connectionId: connection.id, userId: caller.id, ...(reliable ? { reconnectionToken } : {}) }),
          );
        }),
      );
    })();
  });
}

/** Reads an optional `ackId`: an unsigned integer, or undefined. @throws Error for another value */
function ackIdOf(frame: Record<string, unknown>): number | undefined {
  const ackId = frame.ackId;
  if (ackId === undefined || ackId === null) return undefined;
  if (typeof ackId !== 'number' || !Number.isSafeInteger(ackId) || ackId < 0) throw new Error('ackId must be an unsigned integer');
  return ackId;
}

/** Handles one client frame (see the module notes). */
function onFrame(service: RealtimeService, session: WpsSession, data: RawData, isBinary: boolean): void {
  session.alive = true;
  const socket = session.socket;
  if (!socket) return;
  if (!session.flood.take()) {
    service.logger.warn({ connectionId: session.connection.id }, 'connection closed: message flood');
    return session.close(1008, 'too many messages: slow down');
  }
  if (isBinary) return session.close(1003, 'binary frames are not supported: send JSON text frames');
  let frame: Record<string, unknown>;
  let ackId: number | undefined;
  try {
    const parsed: unknown = JSON.parse(data.toString());
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a frame must be a JSON object');
    frame = parsed as Record<string, unknown>;
    ackId = ackIdOf(frame);
  } catch (err) {
    return session.close(1007, err instanceof SyntaxError ? 'invalid JSON' : (err as Error).message);
  }
  const { connection } = session;
  const refuse = (name: AckError, message: string) => (ackId === undefined ? undefined : session.ack(ackId, { name, message }));
  if (session.isDuplicate(ackId)) return refuse('Duplicate', `Message with ack-id: ${ackId} has been processed`);
  try {
    switch (frame.type) {
      case 'ping':
        return session.write('{"type":"pong"}');
      case 'sequenceAck':
        if (typeof frame.sequenceId === 'number') session.acknowledged(frame.sequenceId);
        return;
      case 'joinGroup': {
        requireSignedIn(connection.caller);
        channelOfClientGroup(service.rules, frame.group);
        const group = frame.group as string;
        // A receive-only membership given by a function stays receive-only.
        service.broker.join(connection, group, connection.groups.get(group)?.readOnly ?? false);
        return session.ack(ackId);
      }
      case 'leaveGroup':
        if (typeof frame.group !== 'string') return refuse('BadRequest', 'group must be a string');
        service.broker.leave(connection, frame.group);
        return session.ack(ackId);
      case 'sendToGroup': {
        requireSignedIn(connection.caller);
        const member = typeof frame.group === 'string' ? connection.groups.get(frame.group) : undefined;
        // A private channel is open to a client only once a function joined it read-write (the agent's channel).
        if (!member) channelOfClientGroup(service.rules, frame.group);
        const group = frame.group as string;
        if (member?.readOnly) return refuse('Forbidden', `${group} was joined receive-only`);
        const dataType = (frame.dataType ?? 'json') as DataType;
        const problem = dataProblem(dataType, frame.data);
        if (problem) return refuse('BadRequest', problem);
        service.send({ group, dataType, data: frame.data, fromConnectionId: connection.id, fromUserId: connection.caller.id, noEcho: frame.noEcho === true });
        return session.ack(ackId);
      }
      case 'event':
        if (typeof frame.event !== 'string') return refuse('BadRequest', 'event must be a string');
        return session.ack(ackId);
      default:
        if (ackId === undefined) return session.close(1007, `unknown message type ${describe(frame.type)}`);
        return refuse('BadRequest', `unknown message type ${describe(frame.type)}`);
    }
  } catch (err) {
    if (err instanceof HttpError)
      return refuse(err.status === 400 || err.status === 401 || err.status === 403 ? 'Forbidden' : 'InternalServerError', err.message);
    service.logger.error({ err, connectionId: connection.id }, 'real-time frame failed');
    return refuse('InternalServerError', 'internal error');
  }
}

function requireSignedIn(caller: Caller): void {
  if (caller.kind === 'anonymous') throw new HttpError('FORBIDDEN', 'sign in to join or send to channels');
}

/** Why `data` does not fit `dataType`, or null. */
function dataProblem(dataType: unknown, data: unknown): string | null {
  switch (dataType) {
    case 'json':
      return data === undefined || data === null ? 'data is required' : null;
    case 'text':
      return typeof data === 'string' ? null : 'data must be a string when dataType is text';
    case 'binary':
      return typeof data === 'string' && BASE64.test(data) ? null : 'data must be base64 text when dataType is binary';
    default:
      return 'dataType must be json, text or binary';
  }
}

/** Compares a presented secret with the expected one in constant time (by bytes: `é` is two). */
function sameSecret(presented: string | null, expected: string): boolean {
  if (presented === null) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
