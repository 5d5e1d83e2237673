/**
 * @module The hub: the SignalR JSON hub protocol over WebSockets, so that `@microsoft/signalr` connects
 * unchanged (SPEC §4.7, §6.1, §6.2; DESIGN §4 "Real-time details"; ../shared/notes/realtime-protocols.md §2).
 *
 * - `GET /api/_rt/hub` (http.ts) → `{ url: <origin>/api/_rt/signalr, accessToken }`: the client negotiates
 *   at `url` with the token as a bearer token.
 * - `POST /api/_rt/signalr/negotiate?negotiateVersion=1` → `{ negotiateVersion: 1, connectionId,
 *   connectionToken, availableTransports: [WebSockets/Text] }`. The connection token is a signed,
 *   single-use JWT naming the connection id, so any instance accepts the socket (no sticky sessions).
 * - `ws(s)://…/api/_rt/signalr?id=<connectionToken>`: no subprotocol; the handshake
 *   `{"protocol":"json","version":1}` is answered `{}`; messages end with 0x1E and a frame may carry
 *   several. Without `id` (`skipNegotiation`) the hub access token (bearer header or `access_token`)
 *   opens a fresh connection.
 * - Server → client: `change` (an entity change notification) and `message` (`{ channel, data,
 *   dataType, fromUserId }`, a channel message), as invocations without an id; a ping every
 *   `keepAliveSeconds` whatever else is sent (the client times out after 30 s of silence); Close
 *   (`{"type":7,"error"}`) on shutdown (`allowReconnect`), a flood or bad input.
 * - Client → server invocations (names compared without regard to case): `join(channel)`,
 *   `leave(channel)`, `send(channel, body)`, answered with a Completion when they carry an id.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket, RawData } from 'ws';
import { answerError, HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import { Connection, FloodGate, type ChangeNotification, type ConnectionTransport, type GroupMessage } from './broker.js';
import { signRealtimeToken, verifyRealtimeToken } from './tokens.js';
import type { RealtimeService } from './service.js';
import { connectionLimits, SocketServers } from './admission.js';
import { joinChannel, leaveChannel, sendToChannel } from './client-rules.js';
import { closeInternal, closeReason, contain, describe, guardListener, ignoreSocketError, refuseUpgrade } from './guard.js';

const RS = '\u001e';

/** The server drops a hub connection that sent nothing for this long (SignalR's client timeout is 30 s), ms. */
const CLIENT_TIMEOUT_MS = 60_000;

/** Frames built (and encoded) once per message and shared by every recipient. */
const frames = new WeakMap<object, Buffer>();
/** `ws` send options of a text frame given as bytes. */
const TEXT_FRAME = { binary: false };

function invocationFrame(key: object, target: string, argument: unknown): Buffer {
  let frame = frames.get(key);
  if (frame === undefined) {
    frame = Buffer.from(JSON.stringify({ type: 1, target, arguments: [argument] }) + RS);
    frames.set(key, frame);
  }
  return frame;
}

/** The bearer token of a request (`Authorization: Bearer` or, from browsers, `access_token`). */
function bearerOf(req: IncomingMessage, url: URL): string | null {
  const header = req.headers.authorization;
  const match = header ? /^bearer +(\S+)$/i.exec(header) : null;
  return match?.[1] ?? url.searchParams.get('access_token');
}

/**
 * `POST /api/_rt/signalr/negotiate?negotiateVersion=1` with the hub access token as a bearer token.
 * @returns the negotiate v1 body (WebSockets only, text transfer)
 * @throws HttpError UNAUTHORIZED (401) without a valid hub access token
 */
export async function hubNegotiate(service: RealtimeService, req: IncomingMessage): Promise<unknown> {
  const token = bearerOf(req, new URL(req.url ?? '/', 'http://localhost'));
  if (!token) throw new HttpError('UNAUTHORIZED', 'negotiate needs the accessToken of GET /api/_rt/hub as a bearer token');
  const { caller } = await verifyRealtimeToken(service.auth, service.guard, token, 'hub');
  const connectionId = service.newConnectionId();
  return {
    negotiateVersion: 1,
    connectionId,
    connectionToken: await signRealtimeToken(service.auth, 'hubconn', caller, { connectionId }),
    availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text'] }],
  };
}

/** One hub connection's socket and state. */
class HubSession implements ConnectionTransport {
  connection!: Connection;
  /** The SignalR handshake was answered. */
  open = false;
  lastSeen = Date.now();
  private partial = '';
  readonly flood: FloodGate;

  constructor(
    readonly socket: WebSocket,
    ratePerSecond: number,
    /** Most bytes of an unfinished message waiting for its 0x1E (svc.json `realtime.maxFrameBytes`). */
    readonly maxMessageBytes: number,
  ) {
    this.flood = new FloodGate(ratePerSecond);
  }

  sendGroupMessage(m: GroupMessage): void {
    const channel = m.group.slice(m.group.indexOf(':') + 1);
    this.write(invocationFrame(m, 'message', { channel, data: m.data, dataType: m.dataType, fromUserId: m.fromUserId }));
  }

  sendChange(_group: string, n: ChangeNotification): void {
    this.write(invocationFrame(n, 'change', n));
  }

  bufferedBytes(): number {
    return this.socket.bufferedAmount;
  }

  close(code: number, reason: string): void {
    this.write(JSON.stringify(code === 1001 ? { type: 7, error: reason, allowReconnect: true } : { type: 7, error: reason }) + RS);
    this.socket.close(code, closeReason(reason));
    setTimeout(() => this.socket.terminate(), 1000).unref();
  }

  /** Sends a text frame, given as a string or as its UTF-8 bytes. */
  write(frame: string | Buffer): void {
    if (this.socket.readyState === 1) this.socket.send(frame, TEXT_FRAME);
  }

  /**
   * The complete messages of a text frame; an incomplete tail waits for the next frame.
   * @returns null when the tail is over `maxMessageBytes` (the connection must close 1009)
   */
  messages(text: string): string[] | null {
    const parts = (this.partial + text).split(RS);
    const tail = parts.pop() ?? '';
    // A tail holds at most 3 bytes per UTF-16 unit: only a long one needs counting.
    if (tail.length * 3 > this.maxMessageBytes && Buffer.byteLength(tail) > this.maxMessageBytes) {
      this.partial = '';
      return null;
    }
    this.partial = tail;
    return parts;
  }
}

/** Serves the hub's WebSocket endpoint `/api/_rt/signalr` for `service` (keep-alive pings and a silence sweep included). */
export function serveHub(service: RealtimeService): void {
  const { limits, logger } = service;
  const servers = new SocketServers(limits, () => false);
  const sessions = new Set<HubSession>();
  const ping = JSON.stringify({ type: 6 }) + RS;
  const pinger = setInterval(
    () => {
      const now = Date.now();
      for (const s of sessions) {
        contain(
          () => {
            if (now - s.lastSeen > Math.max(CLIENT_TIMEOUT_MS, limits.keepAliveSeconds * 4000)) s.close(1000, 'client timeout: nothing received');
            else if (s.open) s.write(ping);
          },
          () => s.socket.terminate(),
        );
      }
    },
    Math.max(10, limits.keepAliveSeconds * 1000),
  );
  pinger.unref();
  service.onClose(() => {
    clearInterval(pinger);
    servers.close();
  });

  service.onUpgrade('/api/_rt/signalr', (req, socket, head, url) => {
    socket.on('error', ignoreSocketError);
    return (async () => {
      let caller: Caller;
      let connectionId: string;
      try {
        const id = url.searchParams.get('id');
        if (id) {
          const claims = await verifyRealtimeToken(service.auth, service.guard, id, 'hubconn');
          caller = claims.caller;
          connectionId = claims.connectionId ?? service.newConnectionId();
          await service.homes.adopt(connectionId);
        } else {
          const token = bearerOf(req, url);
          if (!token) throw new HttpError('UNAUTHORIZED', 'connect with the id from negotiate, or the accessToken of GET /api/_rt/hub');
          caller = (await verifyRealtimeToken(service.auth, service.guard, token, 'hub')).caller;
          connectionId = service.newConnectionId();
        }
      } catch (err) {
        refuseUpgrade(socket, err);
        return;
      }
      servers.for(caller).handleUpgrade(req, socket, head, (ws) => open(ws, caller, connectionId));
    })();
  });

  /**
   * A hub socket that passed its checks: its session and listeners. Outside the upgrade handler, so
   * that the listeners do not keep the upgrade request alive (see `ignoreSocketError`).
   */
  function open(ws: WebSocket, caller: Caller, connectionId: string): void {
    contain(
      () => {
        const { ratePerSecond, maxFrameBytes } = connectionLimits(limits, caller);
        const session = new HubSession(ws, ratePerSecond, maxFrameBytes);
        session.connection = new Connection(connectionId, 'hub', caller, session);
        sessions.add(session);
        const guarded = <A extends unknown[]>(listener: (...args: A) => unknown) =>
          guardListener(
            logger,
            ws,
            () => ({ connectionId }),
            () => session.close(1011, 'internal server error'),
            listener,
          );
        ws.on(
          'message',
          guarded((data: RawData, isBinary: boolean) => onFrame(service, session, data, isBinary)),
        );
        ws.on('error', ignoreSocketError);
        ws.on(
          'close',
          guarded(() => {
            sessions.delete(session);
            service.drop(session.connection);
            service.homes.release(connectionId);
          }),
        );
      },
      (err) => {
        logger.error({ err, connectionId }, 'real-time upgrade failed: the socket is closed');
        closeInternal(ws);
      },
    );
  }
}

/** Handles one WebSocket frame of a hub connection (see the module notes). */
function onFrame(service: RealtimeService, session: HubSession, data: RawData, isBinary: boolean): void {
  session.lastSeen = Date.now();
  if (!session.flood.take()) return session.close(1008, 'too many messages: slow down');
  if (isBinary) return session.close(1003, 'binary frames are not supported by the JSON hub protocol');
  const messages = session.messages(data.toString());
  if (messages === null) return session.close(1009, `a message is over ${session.maxMessageBytes} bytes without its 0x1E separator`);
  for (const text of messages) {
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error();
      message = parsed as Record<string, unknown>;
    } catch {
      return session.close(1007, 'invalid JSON: each message must be a JSON object followed by 0x1E');
    }
    if (!session.open) {
      if (message.protocol !== 'json' || message.version !== 1) {
        session.write(JSON.stringify({ error: `Requested protocol ${describe(message.protocol)} is not available.` }) + RS);
        return session.close(1002, 'unsupported hub protocol');
      }
      session.open = true;
      service.broker.add(session.connection);
      session.write('{}' + RS);
      continue;
    }
    switch (message.type) {
      case 1:
        // Runs in order; its completion may follow the next message's (the client matches ids).
        contain(
          () => invoke(service, session, message),
          (err) => {
            service.logger.error({ err, connectionId: session.connection.id }, 'hub invocation failed: the socket is closed');
            session.close(1011, 'internal server error');
          },
        );
        break;
      case 4:
        if (typeof message.invocationId === 'string') complete(session, message.invocationId, { error: 'streaming is not supported' });
        break;
      case 5:
      case 6:
        break;
      case 7:
        session.socket.close(1000);
        return;
      default:
        return session.close(1007, `unknown message type ${describe(message.type)}`);
    }
  }
}

function complete(session: HubSession, invocationId: string, outcome: { result: unknown } | { error: string }): void {
  session.write(JSON.stringify({ type: 3, invocationId, ...outcome }) + RS);
}

/**
 * Runs a hub method invocation — `join(channel)`, `leave(channel)`, `send(channel, body)` — under the
 * channel rules every transport shares (`client-rules.ts`); the Completion carries the refusal's message.
 */
async function invoke(service: RealtimeService, session: HubSession, message: Record<string, unknown>): Promise<void> {
  const invocationId = typeof message.invocationId === 'string' ? message.invocationId : undefined;
  const args = Array.isArray(message.arguments) ? message.arguments : [];
  const { connection } = session;
  try {
    const target = typeof message.target === 'string' ? message.target.toLowerCase() : '';
    if (target === 'join') await joinChannel(service, connection.caller, connection.id, args[0]);
    else if (target === 'leave') await leaveChannel(service, connection.caller, connection.id, args[0]);
    else if (target === 'send') {
      if (args[1] === undefined) throw new HttpError('INVALID_PARAMETER', 'send(channel, body) needs a body');
      sendToChannel(service, connection.caller, args[0], args[1], { from: connection });
    } else throw new HttpError('INVALID_PARAMETER', `Unknown hub method ${describe(message.target)}`);
    if (invocationId !== undefined) complete(session, invocationId, { result: null });
  } catch (err) {
    const { status, body } = answerError(err);
    if (status >= 500) service.logger.error({ err, connectionId: connection.id }, 'hub invocation failed');
    if (invocationId !== undefined) complete(session, invocationId, { error: body.code === 'INTERNAL' ? 'internal error' : body.error });
  }
}
