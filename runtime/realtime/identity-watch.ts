/**
 * @module Open connections follow their identity (issue 20 §4; docs/realtime.md "Identities that
 * change"). `svc user delete|disable|set-roles` and `svc service-account delete|disable` write the
 * database from another process, perhaps on another machine, so a running instance learns of them
 * from the database, as it does for access tokens. Every `IDENTITY_WATCH_MS` each instance looks up
 * the identities of the connections it holds, in one query per 500 connected identities of a kind
 * (`loadCallers`), whatever their number of sockets:
 *
 * - an identity that is gone or disabled: its connections are closed with 1008 (a reliable Web
 *   PubSub connection too, so its recovery is refused and the client's fresh reconnect meets a
 *   refused token);
 * - new roles or admin flag: the connections carry the new caller, and change feeds whose LISTEN rule
 *   the identity no longer satisfies stop.
 *
 * Each instance checks its own connections against the shared database, so the same holds for one
 * SQLite instance and for many on PostgreSQL and Redis: a change reaches every socket within one
 * period (2 s) plus the look-up. What it finds is also dropped from the access-token cache
 * (`auth.identities`), so HTTP calls agree at once. A change made through an instance (the admin
 * endpoints, `DELETE /api/_me`) or by `svc user …` on an app with Redis is also announced on the bus
 * (`{ t: 'identity' }`): every instance drops it from its cache and looks its sockets up at once.
 */
import type { Caller } from '../auth/caller.js';
import type { IdentityKind } from '../auth/identity-cache.js';
import { mayListen } from './client-rules.js';
import { loadCallers } from '../auth/identities.js';
import type { Connection } from './broker.js';
import type { RealtimeService } from './service.js';

/** How often the identities of open connections are looked up, ms. */
export const IDENTITY_WATCH_MS = 2000;

/** The close reason of a connection whose identity was deleted or disabled. */
export const REVOKED_REASON = 'the identity was deleted or disabled';

/** True when two callers of one identity grant the same: admin flag and custom roles. */
function sameGrants(a: Caller, b: Caller): boolean {
  return a.admin === b.admin && a.roles.length === b.roles.length && [...a.roles].sort().join('\n') === [...b.roles].sort().join('\n');
}

/**
 * Starts watching the identities of `service`'s connections (stopped when the service closes).
 * @param periodMs - the look-up period, ms (default `IDENTITY_WATCH_MS`)
 */
export function watchIdentities(service: RealtimeService, periodMs = IDENTITY_WATCH_MS): void {
  let running = false;
  // What the next round looks up: every identity, or only those announced as changed ("kind:id" keys).
  let pending: 'all' | Map<string, IdentityKey> | undefined;
  const round = (want: 'all' | IdentityKey): void => {
    if (want === 'all') pending = 'all';
    else if (pending !== 'all') {
      pending ??= new Map();
      pending.set(`${want.kind}:${want.id}`, want);
    }
    if (running) return; // looked up by the next round, after this one (never with stale grants in between)
    running = true;
    void (async () => {
      while (pending) {
        const next = pending;
        pending = undefined;
        await checkIdentities(service, next === 'all' ? undefined : [...next.values()]);
      }
    })().finally(() => (running = false));
  };
  const timer = setInterval(() => round('all'), periodMs);
  timer.unref();
  // A change made on this instance (the admin endpoints, `DELETE /api/_me`) goes to the other instances
  // at once; one announced on the bus (another instance, `svc user …` with Redis) is checked here at
  // once, for the sockets of that identity only.
  const stop = service.auth.identities.onChange((kind, id, origin) => {
    if (origin === 'here') service.bus.broadcast({ t: 'identity', kind, id });
    round({ kind, id });
  });
  service.onClose(() => {
    clearInterval(timer);
    stop();
  });
}

/** One identity that can hold connections. */
interface IdentityKey {
  kind: IdentityKind;
  id: string;
}

/**
 * One round: every signed-in identity with a connection here (or only those of `only`), looked up in
 * batches; none with a connection here, no query. Never throws.
 */
async function checkIdentities(service: RealtimeService, only?: IdentityKey[]): Promise<void> {
  const wanted = only && new Set(only.map((o) => `${o.kind}:${o.id}`));
  const byIdentity = new Map<string, Connection[]>();
  for (const connection of service.broker.all()) {
    const { kind, id } = connection.caller;
    if (kind === 'anonymous' || id === null) continue;
    const key = `${kind}:${id}`;
    if (wanted && !wanted.has(key)) continue;
    const list = byIdentity.get(key);
    if (list) list.push(connection);
    else byIdentity.set(key, [connection]);
  }
  for (const kind of ['user', 'serviceAccount'] as const) {
    const groups = [...byIdentity.values()].filter((connections) => connections[0].caller.kind === kind);
    if (groups.length === 0) continue;
    let current: Map<string, Caller | null>;
    try {
      current = await loadCallers(
        service.auth.db,
        kind,
        groups.map((connections) => connections[0].caller.id!),
      );
    } catch (err) {
      service.logger.warn({ err: (err as Error).message, identities: groups.length }, 'identity look-up of open connections failed; tried again shortly');
      continue;
    }
    for (const connections of groups) {
      const id = connections[0].caller.id!;
      const now = current.get(id) ?? null;
      if (now === null || connections.some((c) => !sameGrants(c.caller, now))) service.auth.identities.forget(kind, id);
      for (const connection of connections) {
        if (now === null) revoke(service, connection);
        else if (!sameGrants(connection.caller, now)) regrant(service, connection, now);
      }
    }
  }
}

function revoke(service: RealtimeService, connection: Connection): void {
  if (service.broker.get(connection.id) !== connection) return;
  service.broker.remove(connection);
  connection.transport.close(1008, REVOKED_REASON);
  service.logger.info({ connectionId: connection.id, identity: connection.caller.id }, 'connection closed: its identity was deleted or disabled');
}

/** Gives `connection` its identity's new grants and ends the change feeds they no longer allow. */
function regrant(service: RealtimeService, connection: Connection, caller: Caller): void {
  connection.caller = caller;
  for (const name of [...connection.listening]) {
    if (!mayListen(service, caller, name)) service.broker.unlisten(connection, name); // the check of a new _listen
  }
  service.logger.info({ connectionId: connection.id, identity: caller.id, roles: caller.roles }, 'connection follows its identity’s new roles');
}
