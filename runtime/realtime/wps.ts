/**
 * @module The Web PubSub endpoint's upgrades and recoveries: the WebSocket service on the Azure Web
 * PubSub JSON subprotocols (`json.webpubsub.azure.v1` and the default of `@azure/web-pubsub-client`,
 * `json.reliable.webpubsub.azure.v1`) at `/api/_rt/client?access_token=<one-time token>` (SPEC §4.7,
 * §4.12; ../shared/notes/realtime-protocols.md §1). Frames are `wps-frames.ts`'s job, a connection's
 * state and delivery `wps-session.ts`'s, the replay queue `wps-replay.ts`'s.
 *
 * - Upgrade: the one-time token names the caller; the offered subprotocol is echoed; the first frame is
 *   the `connected` system event (`connectionId`, `userId`, and on the reliable protocol a
 *   `reconnectionToken`). Anonymous connections get the lower frame limits of `admission.ts`.
 * - Reliable protocol: a dropped socket keeps its connection (groups, subscriptions, queued messages)
 *   for `RECOVERY_GRACE_MS`; the client's recovery upgrade (`awps_connection_id`,
 *   `awps_reconnection_token`) re-attaches it and replays what was not acknowledged; a socket the
 *   connection still holds is half-open and is dropped. A recovery that cannot be honoured (unknown
 *   connection, wrong token, messages lost from a full replay queue) is accepted and closed with 1008,
 *   which makes the client reconnect afresh at once; a wrong token leaves the connection waiting for
 *   its own client.
 * - A socket silent for two liveness checks is dropped; a frame over the caller's frame limit closes
 *   with 1009 (by `ws`).
 */
import type { IncomingMessage } from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { WebSocket, RawData } from 'ws';
import { HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import { Connection } from './broker.js';
import { verifyRealtimeToken } from './tokens.js';
import type { RealtimeService } from './service.js';
import { connectionLimits, SocketServers } from './admission.js';
import { closeInternal, contain, guardListener, refuseUpgrade } from './guard.js';
import { onFrame } from './wps-frames.js';
import { WpsSession } from './wps-session.js';

/** The subprotocols accepted: Azure's two names, and `json[.reliable].webpubsub.<vendor>.v1` of SPEC §4.12. */
const SUBPROTOCOL = /^json\.(reliable\.)?webpubsub\.[a-z0-9-]+\.v1$/i;

/** How long a dropped reliable connection waits for its client to recover it (the client tries for 30 s), ms. */
export const RECOVERY_GRACE_MS = 30_000;

/** Interval of the server's WebSocket-level liveness check; a socket silent for two of them is dropped, ms. */
const LIVENESS_INTERVAL_MS = 30_000;

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
  const servers = new SocketServers(limits, (offered) => [...offered].find((p) => SUBPROTOCOL.test(p)) ?? false);
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
    servers.close();
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
      servers.for(sessions.get(recoverId)?.connection.caller).handleUpgrade(
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
      servers.for(caller).handleUpgrade(
        req,
        socket,
        head,
        upgraded({}, (ws) => {
          const reliable = /^json\.reliable\./i.test(ws.protocol);
          const reconnectionToken = reliable ? randomBytes(24).toString('base64url') : undefined;
          const { ratePerSecond } = connectionLimits(limits, caller);
          const session = new WpsSession(ws, reliable, reconnectionToken, ratePerSecond, limits.sendBufferBytes);
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

/** Compares a presented secret with the expected one in constant time (by bytes: `é` is two). */
function sameSecret(presented: string | null, expected: string): boolean {
  if (presented === null) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
