/**
 * @module The replay state of reliable Web PubSub connections in Redis (issue 24 §2; DESIGN §6), so
 * that a client whose instance died recovers on any other instance
 * (../shared/notes/realtime-protocols.md §1.5). Only with Redis; without it `wps-replay.ts` alone
 * keeps the state, in the process that holds the connection.
 *
 * Keys (`<p>` = `svc:<api-name>:rt`), each expiring `STATE_TTL_MS` after its last refresh:
 * - `<p>:wps:<connectionId>` (hash): `tok` (SHA-256 of the reconnection token, hex), `caller` (JSON),
 *   `at` (the instance holding it), `seq` (last sequence id sent), `ack` (last acknowledged),
 *   `g:<group>` (JSON `{ r: readOnly, l: log id of the last message delivered or null, t: ms }`).
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
import type { GroupMessage } from './broker.js';

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

/** The stored state of one reliable connection. */
export interface StoredConnection {
  tokenHash: string;
  caller: Caller;
  holder: string;
  seq: number;
  acked: number;
  groups: Map<string, StoredGroup>;
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
    this.prefix = `svc:${apiName}:rt`;
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

  /** Records that `holder` holds the connection now (after a recovery there). */
  moved(id: string, holder: string): void {
    this.run(this.redis.hset(this.key(id), 'at', holder));
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
    for (const [field, value] of Object.entries(hash)) if (field.startsWith('g:')) groups.set(field.slice(2), JSON.parse(value) as StoredGroup);
    const pending = entries.map(([sid, fields]) => ({ seq: Number(sid.split('-')[0]), frame: fields[1] })).filter((e) => e.seq > acked);
    const complete = pending.length === seq - acked && (pending.length === 0 || pending[0].seq === acked + 1);
    return { tokenHash: hash.tok, caller: JSON.parse(hash.caller) as Caller, holder: hash.at, seq, acked, groups, pending, complete };
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
