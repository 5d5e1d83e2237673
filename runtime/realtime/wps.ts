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
 * - With Redis (`wps-store.ts`) the reliable state is mirrored there, so the recovery may come to
 *   another instance: it checks the token against the stored hash, has the holder (if alive) let go
 *   (`rpc` topic `wps-release`), continues the sequence, resends the stored unacknowledged frames,
 *   rejoins the groups, re-creates the change feeds still allowed (`wps-listens.ts`) and delivers from
 *   the group logs what the groups got while no instance held the connection — each message once, in
 *   order. A state with a gap or none at all, or an identity deleted or disabled since, closes 1008.
 * - A socket silent for two liveness checks is dropped; a frame over the caller's frame limit closes
 *   with 1009 (by `ws`).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { WebSocket, RawData } from 'ws';
import { HttpError } from '../errors.js';
import type { Caller } from '../auth/caller.js';
import { Connection } from './broker.js';
import { verifyRealtimeToken } from './tokens.js';
import type { RealtimeService } from './service.js';
import { connectionLimits, SocketServers } from './admission.js';
import { closeInternal, contain, guardListener, ignoreSocketError, refuseUpgrade } from './guard.js';
import { onFrame } from './wps-frames.js';
import { WpsSession } from './wps-session.js';
import { tokenHash, type ReplayStore } from './wps-store.js';
import { identityNow, restoreListens } from './wps-listens.js';

/** The subprotocols accepted: Azure's two names, and `json[.reliable].webpubsub.<vendor>.v1` of SPEC §4.12. */
const SUBPROTOCOL = /^json\.(reliable\.)?webpubsub\.[a-z0-9-]+\.v1$/i;

/** How long a dropped reliable connection waits for its client to recover it (the client tries for 30 s), ms. */
export const RECOVERY_GRACE_MS = 30_000;

/** Interval of the server's WebSocket-level liveness check; a socket silent for two of them is dropped, ms. */
const LIVENESS_INTERVAL_MS = 30_000;

/** Interval at which the Redis state of open reliable connections is kept from expiring, ms. */
export const STATE_REFRESH_MS = 10_000;

/** The `rpc` topic asking the instance holding a reliable connection to let go of it (a recovery elsewhere). */
const RELEASE_TOPIC = 'wps-release';
/** How long a recovery waits for the holder to let go, ms. */
const RELEASE_TIMEOUT_MS = 2000;

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
  const store = service.replayStore;
  const refresh = setInterval(() => store?.refresh(reliableIds(sessions)), STATE_REFRESH_MS);
  refresh.unref();
  service.onClose(() => {
    clearInterval(sweep);
    clearInterval(refresh);
    servers.close();
  });

  /** The connection is over: forget it everywhere (`handedOver`: another instance holds it now). */
  const end = (session: WpsSession, handedOver = false) => {
    session.ended = true;
    clearTimeout(session.recoveryTimer);
    const { id } = session.connection;
    if (sessions.get(id) === session) sessions.delete(id);
    service.drop(session.connection);
    if (handedOver) return;
    if (session.reliable) store?.forget(id);
    service.homes.release(id);
  };

  service.onRpc(RELEASE_TOPIC, async (payload) => {
    const session = sessions.get((payload as { connectionId: string }).connectionId);
    if (!session) return false;
    const socket = session.socket;
    session.socket = null;
    socket?.terminate();
    end(session, true);
    return true;
  });

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
    socket.on('error', ignoreSocketError);
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
    socket.on('error', ignoreSocketError);
    const recoverId = url.searchParams.get('awps_connection_id');
    if (recoverId && store && !sessions.has(recoverId))
      return recoverElsewhere(recoverId, url.searchParams.get('awps_reconnection_token'), store, req, socket, head);
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
          const session = new WpsSession(ws, reliable, reconnectionToken, ratePerSecond, limits.sendBufferBytes, store);
          const connection = new Connection(service.newConnectionId(), 'ws', caller, session);
          session.connection = connection;
          if (reliable && store) store.open(connection.id, reconnectionToken!, caller, service.instanceId);
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

  /** A recovery of a connection this instance does not hold, from its state in Redis (module notes). */
  async function recoverElsewhere(id: string, token: string | null, store: ReplayStore, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    let state = await store.load(id);
    const valid = state !== null && token !== null && sameSecret(tokenHash(token), state.tokenHash);
    let caller: Caller | null = null;
    if (valid) {
      const [answer, now] = await Promise.all([
        state!.holder === service.instanceId ? null : service.rpc(state!.holder, RELEASE_TOPIC, { connectionId: id }, RELEASE_TIMEOUT_MS),
        identityNow(service, state!.caller, logger),
      ]);
      caller = now; // the identity as it is now (wps-listens.ts); null refuses the recovery
      // The holder's last writes went to Redis before its answer: read the state again.
      if (answer?.delivered && !answer.timedOut && answer.reply === true) state = await store.load(id);
    }
    servers.for(caller ?? undefined).handleUpgrade(
      req,
      socket,
      head,
      upgraded({ connectionId: id }, (ws) => {
        if (!valid || !state || sessions.has(id)) return ws.close(1008, 'the connection cannot be recovered');
        if (!state.complete || !caller) {
          // Messages lost, or an identity deleted, disabled or not looked up: the client starts afresh.
          store.forget(id);
          return ws.close(1008, 'the connection cannot be recovered');
        }
        const { ratePerSecond } = connectionLimits(limits, caller);
        const session = new WpsSession(ws, true, token!, ratePerSecond, limits.sendBufferBytes, store);
        const connection = new Connection(id, 'ws', caller, session);
        session.connection = connection;
        sessions.set(id, session);
        service.broker.add(connection);
        session.resume(state);
        for (const [group, g] of state.groups) service.broker.join(connection, group, g.r);
        restoreListens(service, connection, state.listens, store);
        attach(session, ws);
        store.moved(id, service.instanceId, caller);
        void service.homes.adopt(id);
        void Promise.all([...state.groups].map(([group, g]) => store.since(group, g.l, g.t))).then(
          (logs) =>
            contain(
              () => session.caughtUp(logs.flat()),
              () => session.close(1011, 'internal server error'),
            ),
          (err: Error) => {
            logger.warn({ err: err.message, connectionId: id }, 'the group logs could not be read: the connection starts afresh');
            session.close(1008, 'the connection cannot be recovered');
          },
        );
        logger.debug({ connectionId: id, from: state.holder }, 'connection recovered from another instance');
      }),
    );
  }
}

/** The ids of the reliable connections in `sessions`. */
function* reliableIds(sessions: Map<string, WpsSession>): Iterable<string> {
  for (const [id, s] of sessions) if (s.reliable) yield id;
}

/** Compares a presented secret with the expected one in constant time (by bytes: `é` is two). */
function sameSecret(presented: string | null, expected: string): boolean {
  if (presented === null) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
