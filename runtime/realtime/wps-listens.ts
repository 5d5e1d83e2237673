/**
 * @module The change feeds of a reliable Web PubSub connection carried over by a recovery on another
 * instance (issue 24 §3; docs/realtime.md "Several instances"). The holder mirrors each connection's
 * `_listen` subscriptions to Redis (`wps-store.ts`, field `l:<collection>`) as they widen or end; the
 * instance that takes the connection over re-creates them before the socket is attached, each one
 * re-checked against the identity as it is now — the check of a new `_listen` (`authorizeListen`),
 * with the identity read as a new `_listen` reads it (the identity cache, at most
 * `IDENTITY_CACHE_TTL_MS` old; `identity-watch.ts` re-reads it from the database within
 * `IDENTITY_WATCH_MS` after that). A subscription that is not a valid entry, names no collection of
 * the app, has another transport type, or that the identity may no longer have, is dropped (from Redis
 * too) and logged; the client is not told, as after a role change on an open connection.
 */
import { ANONYMOUS, type Caller } from '../auth/caller.js';
import type { Logger } from '../log.js';
import type { Connection } from './broker.js';
import { mayListen } from './client-rules.js';
import type { RealtimeService } from './service.js';
import type { ReplayStore, StoredListen } from './wps-store.js';

/** Collection names quoted in one log line at most. */
const LOGGED_NAMES = 10;

/**
 * The identity of a stored connection as it is now (roles and admin flag re-read through the identity
 * cache); an anonymous one is `ANONYMOUS` whatever else was stored.
 * @returns null when the identity was deleted or is disabled, names no identity kind, or cannot be looked
 *   up (the database is unavailable: logged); the recovery is then refused (1008)
 */
export async function identityNow(service: RealtimeService, stored: Caller, logger: Logger): Promise<Caller | null> {
  if (stored.kind === 'anonymous') return ANONYMOUS;
  if ((stored.kind !== 'user' && stored.kind !== 'serviceAccount') || typeof stored.id !== 'string') return null;
  try {
    return await service.auth.identities.get(stored.kind, stored.id);
  } catch (err) {
    logger.warn({ err: (err as Error).message, identity: stored.id }, 'the identity of a recovering connection could not be looked up: it starts afresh');
    return null;
  }
}

/**
 * Re-creates on `connection` (just taken over, its caller the identity as it is now) the change-feed
 * subscriptions stored for it, dropping (and logging) those it may no longer have (module notes).
 */
export function restoreListens(service: RealtimeService, connection: Connection, listens: ReadonlyMap<string, StoredListen | null>, store: ReplayStore): void {
  const dropped: string[] = [];
  for (const [name, stored] of listens) {
    if (stored && stored.t === connection.kind && mayListen(service, connection.caller, name)) {
      service.broker.restoreListen(connection, name, { all: stored.a, ids: new Set(stored.i), lookupIds: new Set(stored.k) });
    } else dropped.push(name);
  }
  if (dropped.length > 0) {
    store.unlistened(connection.id, ...dropped);
    service.logger.info(
      { connectionId: connection.id, identity: connection.caller.id, dropped: dropped.length, collections: dropped.slice(0, LOGGED_NAMES) },
      'change feeds not carried over by the recovery: invalid, or no longer allowed',
    );
  }
}
