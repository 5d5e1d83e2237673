/**
 * @module The replay state of reliable Web PubSub connections in Redis (issue 24 §2; DESIGN §6), so
 * that a client whose instance died recovers on any other instance
 * (../shared/notes/realtime-protocols.md §1.5). Only with Redis; without it `wps-replay.ts` alone
 * keeps the state, in the process that holds the connection.
 *
 * Keys (`<p>` = `svc:<api-name>:rt`), each expiring `STATE_TTL_MS` after its last refresh:
 * - `<p>:wps:<connectionId>` (hash): `tok` (SHA-256 of the reconnection token, hex), `caller` (JSON),
 *   `at` (the instance holding it), `seq` (last sequence id sent), `ack` (last acknowledged),
 *   `g:<group>` (JSON `{ r: readOnly, l: log id of the last message delivered or null, t: ms }`),
 *   `l:<collection>` (JSON `{ t: "ws"|"hub", a: everything, i: ids, k: lookupIds }`: the connection's
 *   change-feed subscription to the collection, its `_listen` calls merged; `i` and `k` are empty when
 *   `a` is true).
 * - `<p>:wps:<connectionId>:q` (stream): the frames sent and not acknowledged, stream id `<seq>-0`,
 *   trimmed by the client's `sequenceAck` and bounded to about `MAX_QUEUED` entries.
 * - `<p>:g:<group>` (stream): the group's recent messages (about `GROUP_LOG_LENGTH`, for
 *   `GROUP_LOG_TTL_MS`), each with its log id, so a recovering connection gets what was sent to its
 *   groups while no instance held it.
 *
 * Writes are fire-and-forget on the publishing connection (ioredis pipelines them in order); a write
 * lost while Redis is down only makes a later recovery on another instance fail with 1008 (the client
 * then starts afresh), never a delivery.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Caller } from '../auth/caller.js';
import type { Logger } from '../log.js';
import { GUID_PATTERN } from '../contract/property-values.js';
import type { GroupMessage } from './broker.js';
import { MAX_LISTEN_IDS, type ListenFilter } from './listen-filter.js';
import { realtimePrefix } from './redis-bus.js';

/** Most unacknowledged frames kept per connection (MAXLEN ~). */
export const MAX_QUEUED = 4096;
/** Messages kept per group log (MAXLEN ~). */
export const GROUP_LOG_LENGTH = 1000;
/** How long a group log lives after its last message, ms. */
export const GROUP_LOG_TTL_MS = 60_000;

/** A group membership as stored: receive-only, last log id delivered, when (ms). */
export interface StoredGroup {
  r: boolean;
  l: string | null;
  t: number;
}

/**
 * A change-feed subscription as stored: the transport type of the `_listen` calls, everything or not,
 * ids, lookupIds (SPEC §4.7 rule 2).
 */
export interface StoredListen {
  t: 'ws' | 'hub';
  a: boolean;
  i: string[];
  k: string[];
}

/** The stored state of one reliable connection. */
export interface StoredConnection {
  tokenHash: string;
  caller: Caller;
  holder: string;
  seq: number;
  acked: number;
  groups: Map<string, StoredGroup>;
  /**
   * Change-feed subscriptions by collection name; null for an entry that is not a valid subscription
   * (bad JSON or shape, an id that is not a GUID, more than `MAX_LISTEN_IDS` ids): the recovery drops it.
   */
  listens: Map<string, StoredListen | null>;
  /** Frames with `seq > acked`, oldest first; `complete` false when some of them were trimmed away. */
  pending: { seq: number; frame: string }[];
  complete: boolean;
}

/** SHA-256 of a reconnection token, hex (the token itself is never stored). */
export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The replay state of reliable connections and the group logs, in Redis. */
export class ReplayStore {
  private readonly prefix: string;
  private lost = 0;

  constructor(
    private readonly redis: Redis,
    apiName: string,
    private readonly logger: Logger,
    /** How long the state outlives its last refresh: the recovery window plus a refresh interval, ms. */
    readonly ttlMs: number,
  ) {
    this.prefix = realtimePrefix(apiName);
  }

  /** Records a new reliable connection held by `holder`. */
  open(id: string, token: string, caller: Caller, holder: string): void {
    const key = this.key(id);
    this.run(
      this.redis
        .multi()
        .del(key, `${key}:q`)
        .hset(key, 'tok', tokenHash(token), 'caller', JSON.stringify(caller), 'at', holder, 'seq', 0, 'ack', 0)
        .pexpire(key, this.ttlMs),
    );
  }

  /** Records that `holder` holds the connection now (after a recovery there), and its identity as it is now. */
  moved(id: string, holder: string, caller: Caller): void {
    this.run(this.redis.hset(this.key(id), 'at', holder, 'caller', JSON.stringify(caller)));
  }

  /** Records a frame sent with `seq`; for a group message, the group's position too. */
  sent(id: string, seq: number, frame: string, group?: { name: string; state: StoredGroup }): void {
    const key = this.key(id);
    const m = this.redis.multi().xadd(`${key}:q`, 'MAXLEN', '~', MAX_QUEUED, `${seq}-0`, 'f', frame);
    if (group) m.hset(key, 'seq', seq, `g:${group.name}`, JSON.stringify(group.state));
    else m.hset(key, 'seq', seq);
    this.run(m);
  }

  /** The client acknowledged up to `seq`: its frames are dropped. */
  acked(id: string, seq: number): void {
    const key = this.key(id);
    this.run(
      this.redis
        .multi()
        .hset(key, 'ack', seq)
        .xtrim(`${key}:q`, 'MINID', `${seq + 1}-0`),
    );
  }

  joined(id: string, group: string, state: StoredGroup): void {
    this.run(this.redis.hset(this.key(id), `g:${group}`, JSON.stringify(state)));
  }

  left(id: string, group: string): void {
    this.run(this.redis.hdel(this.key(id), `g:${group}`));
  }

  /** Records the connection's subscription to `collection` as it now stands (after a widening `_listen`). */
  listened(id: string, collection: string, filter: ListenFilter): void {
    const stored: StoredListen = { t: 'ws', a: filter.all, i: filter.all ? [] : [...filter.ids], k: filter.all ? [] : [...filter.lookupIds] };
    this.run(this.redis.hset(this.key(id), `l:${collection}`, JSON.stringify(stored)));
  }

  /** The connection's subscriptions to `collections` ended (or were not carried over). */
  unlistened(id: string, ...collections: string[]): void {
    if (collections.length > 0) this.run(this.redis.hdel(this.key(id), ...collections.map((c) => `l:${c}`)));
  }

  /** Keeps the state of open connections for another `ttlMs`. */
  refresh(ids: Iterable<string>): void {
    const m = this.redis.pipeline();
    let n = 0;
    for (const id of ids) {
      const key = this.key(id);
      m.pexpire(key, this.ttlMs).pexpire(`${key}:q`, this.ttlMs);
      n += 1;
    }
    if (n > 0) this.run(m);
  }

  /** The connection is over for good: its state goes. */
  forget(id: string): void {
    const key = this.key(id);
    this.run(this.redis.del(key, `${key}:q`));
  }

  /** The stored state of `id`, or null when there is none (never stored, expired, or Redis down). */
  async load(id: string): Promise<StoredConnection | null> {
    const key = this.key(id);
    let hash: Record<string, string>;
    let entries: [string, string[]][];
    try {
      [hash, entries] = await Promise.all([this.redis.hgetall(key), this.redis.xrange(`${key}:q`, '-', '+')]);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, connectionId: id }, 'redis unavailable: the connection cannot be recovered here');
      return null;
    }
    if (!hash.tok || !hash.caller) return null;
    const seq = Number(hash.seq);
    const acked = Number(hash.ack);
    const groups = new Map<string, StoredGroup>();
    const listens = new Map<string, StoredListen | null>();
    let caller: Caller;
    try {
      caller = JSON.parse(hash.caller) as Caller;
      for (const [field, value] of Object.entries(hash)) {
        if (field.startsWith('g:')) groups.set(field.slice(2), JSON.parse(value) as StoredGroup);
        else if (field.startsWith('l:')) listens.set(field.slice(2), parseListen(value));
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, connectionId: id }, 'the stored state of a connection is corrupt: it cannot be recovered');
      return null;
    }
    const pending = entries.map(([sid, fields]) => ({ seq: Number(sid.split('-')[0]), frame: fields[1] })).filter((e) => e.seq > acked);
    const complete = pending.length === seq - acked && (pending.length === 0 || pending[0].seq === acked + 1);
    return { tokenHash: hash.tok, caller, holder: hash.at, seq, acked, groups, listens, pending, complete };
  }

  /** Appends a channel message (with its `logId`) to its group's log. Issued before the bus's PUBLISH of it. */
  append(message: GroupMessage): void {
    const key = `${this.prefix}:g:${message.group}`;
    this.run(this.redis.multi().xadd(key, 'MAXLEN', '~', GROUP_LOG_LENGTH, '*', 'm', JSON.stringify(message)).pexpire(key, GROUP_LOG_TTL_MS));
  }

  /**
   * The messages of `group`'s log after the one with log id `after` or, when that one is not in the
   * log (null, or trimmed), those logged after `sinceMs`; oldest first.
   */
  async since(group: string, after: string | null, sinceMs: number): Promise<GroupMessage[]> {
    const entries = await this.redis.xrange(`${this.prefix}:g:${group}`, '-', '+');
    const messages = entries.map(([sid, fields]) => ({ ms: Number(sid.split('-')[0]), m: JSON.parse(fields[1]) as GroupMessage }));
    const at = after === null ? -1 : messages.findIndex((e) => e.m.logId === after);
    return (at >= 0 ? messages.slice(at + 1) : messages.filter((e) => e.ms > sinceMs)).map((e) => e.m);
  }

  private key(id: string): string {
    return `${this.prefix}:wps:${id}`;
  }

  private run(command: { exec(): Promise<unknown> } | Promise<unknown>): void {
    const done = 'exec' in command ? command.exec() : command;
    done.catch((err: Error) => {
      this.lost += 1;
      if (this.lost === 1 || this.lost % 1000 === 0)
        this.logger.warn({ err: err.message, lostWrites: this.lost }, 'redis unavailable: replay state not stored');
    });
  }
}

/** A stored subscription read back, or null when `text` is not one (see `StoredConnection.listens`). */
export function parseListen(text: string): StoredListen | null {
  // A GUID takes 39 characters in the JSON array (quotes and comma): longer text cannot be valid.
  if (text.length > 64 + 39 * MAX_LISTEN_IDS) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const { t, a, i, k } = value as Record<string, unknown>;
  const guids = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string' && GUID_PATTERN.test(x));
  if ((t !== 'ws' && t !== 'hub') || typeof a !== 'boolean' || !guids(i) || !guids(k)) return null;
  if (i.length + k.length > MAX_LISTEN_IDS || (!a && i.length + k.length === 0)) return null;
  return { t, a, i, k };
}
