/**
 * The reliable Web PubSub state in Redis (runtime/realtime/wps-store.ts), on the Redis at 127.0.0.1:6379
 * under a key prefix of its own: what a connection stored is what another instance loads (token hash,
 * caller, groups and positions, the unacknowledged frames in order), acknowledged frames are trimmed,
 * a gap makes the state incomplete, a group log answers what came after a position, and the state
 * carries the TTL of the recovery window.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { ReplayStore, tokenHash } from '../../../runtime/realtime/wps-store.js';
import type { GroupMessage } from '../../../runtime/realtime/broker.js';
import type { Logger } from '../../../runtime/log.js';
import type { Caller } from '../../../runtime/auth/caller.js';

const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: false });
const api = `unit-${randomBytes(6).toString('hex')}`;
const logger = { warn: () => {} } as unknown as Logger;
const store = new ReplayStore(redis, api, logger, 40_000);
const alice: Caller = { kind: 'user', id: 'u1', username: 'alice', roles: ['r'], admin: false };

afterAll(async () => {
  const keys = await redis.keys(`svc:${api}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const message = (group: string, logId: string, n: number): GroupMessage => ({
  group,
  dataType: 'json',
  data: { n },
  fromConnectionId: null,
  fromUserId: null,
  noEcho: false,
  logId,
});

describe('ReplayStore', () => {
  it('stores what another instance needs to continue a connection', async () => {
    store.open('i.c1', 'secret-token', alice, 'i');
    store.joined('i.c1', 'app:a', { r: false, l: null, t: 1 });
    for (let seq = 1; seq <= 5; seq++) store.sent('i.c1', seq, `{"n":${seq},"sequenceId":${seq}}`, { name: 'app:a', state: { r: false, l: `x:${seq}`, t: 2 } });
    store.acked('i.c1', 3);
    store.moved('i.c1', 'j');
    const state = await store.load('i.c1');
    expect(state).toMatchObject({ tokenHash: tokenHash('secret-token'), caller: alice, holder: 'j', seq: 5, acked: 3, complete: true });
    expect(state!.pending.map((p) => p.seq)).toEqual([4, 5]);
    expect(state!.pending[0].frame).toBe('{"n":4,"sequenceId":4}');
    expect(state!.groups.get('app:a')).toEqual({ r: false, l: 'x:5', t: 2 });
    const ttl = await redis.pttl(`svc:${api}:rt:wps:i.c1`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(40_000);
  });

  it('says a state with a gap is incomplete, and forgets a connection', async () => {
    store.open('i.c2', 't', alice, 'i');
    for (let seq = 1; seq <= 3; seq++) store.sent('i.c2', seq, `{"sequenceId":${seq}}`);
    await redis.xdel(`svc:${api}:rt:wps:i.c2:q`, '2-0');
    expect((await store.load('i.c2'))!.complete).toBe(false);
    store.forget('i.c2');
    expect(await store.load('i.c2')).toBeNull();
    expect(await store.load('never.opened')).toBeNull();
  });

  it('answers from a group log what came after a position, or after a time when the position is not there', async () => {
    for (let n = 1; n <= 4; n++) store.append(message('app:log', `x:${n}`, n));
    const after = await store.since('app:log', 'x:2', 0);
    expect(after.map((m) => m.logId)).toEqual(['x:3', 'x:4']);
    expect((await store.since('app:log', 'x:9', 0)).map((m) => m.logId)).toEqual(['x:1', 'x:2', 'x:3', 'x:4']);
    expect(await store.since('app:log', null, Date.now() + 60_000)).toEqual([]);
    expect(await store.since('app:empty', null, 0)).toEqual([]);
  });
});
