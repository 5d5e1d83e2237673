/**
 * The reliable Web PubSub state in Redis (runtime/realtime/wps-store.ts), on the Redis at 127.0.0.1:6379
 * under a key prefix of its own: what a connection stored is what another instance loads (token hash,
 * caller, groups and positions, the unacknowledged frames in order), acknowledged frames are trimmed,
 * a gap makes the state incomplete, a group log answers what came after a position, the state
 * carries the TTL of the recovery window, and change-feed subscriptions are kept merged, dropped when
 * they end, and read back as null when an entry is not a valid one.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseListen, ReplayStore, tokenHash } from '../../../dist/runtime/realtime/wps-store.js';
import { MAX_LISTEN_IDS } from '../../../dist/runtime/realtime/listen-filter.js';
import type { GroupMessage } from '../../../dist/runtime/realtime/broker.js';
import type { Logger } from '../../../dist/runtime/log.js';
import type { Caller } from '../../../dist/runtime/auth/caller.js';

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
    store.moved('i.c1', 'j', { ...alice, roles: [] });
    const state = await store.load('i.c1');
    expect(state).toMatchObject({ tokenHash: tokenHash('secret-token'), caller: { ...alice, roles: [] }, holder: 'j', seq: 5, acked: 3, complete: true });
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

  it('keeps change-feed subscriptions merged, drops those that ended, and reads an invalid entry as null', async () => {
    const [g1, g2, g3] = ['0190a1b2-0000-7000-8000-000000000001', '0190a1b2-0000-7000-8000-000000000002', '0190a1b2-0000-7000-8000-000000000003'];
    store.open('i.c3', 't', alice, 'i');
    store.listened('i.c3', 'Order', { all: false, ids: new Set([g1]), lookupIds: new Set([g2]) });
    store.listened('i.c3', 'Line', { all: true, ids: new Set([g3]), lookupIds: new Set() });
    store.listened('i.c3', 'Gone', { all: true, ids: new Set(), lookupIds: new Set() });
    store.unlistened('i.c3', 'Gone');
    const key = `svc:${api}:rt:wps:i.c3`;
    await redis.hset(key, 'l:Bad', '{not json', 'l:Huge', JSON.stringify({ t: 'ws', a: false, i: Array(MAX_LISTEN_IDS + 1).fill(g1), k: [] }));
    const state = await store.load('i.c3');
    expect(Object.fromEntries(state!.listens)).toEqual({
      Order: { t: 'ws', a: false, i: [g1], k: [g2] },
      Line: { t: 'ws', a: true, i: [], k: [] },
      Bad: null,
      Huge: null,
    });
    // A corrupt caller or group makes the whole state unusable (the recovery closes 1008), never a throw.
    await redis.hset(key, 'g:app:x', '{');
    expect(await store.load('i.c3')).toBeNull();
  });

  it.each<[string, { given: string; want: boolean }]>([
    ['a whole-collection subscription', { given: '{"t":"ws","a":true,"i":[],"k":[]}', want: true }],
    ['a filtered hub subscription', { given: '{"t":"hub","a":false,"i":["0190a1b2-0000-7000-8000-000000000001"],"k":[]}', want: true }],
    ['bad JSON', { given: '{"t":"ws",', want: false }],
    ['JSON null', { given: 'null', want: false }],
    ['an array', { given: '[1,2]', want: false }],
    ['an unknown type', { given: '{"t":"sse","a":true,"i":[],"k":[]}', want: false }],
    ['a string flag', { given: '{"t":"ws","a":"yes","i":[],"k":[]}', want: false }],
    ['an id that is not a GUID', { given: '{"t":"ws","a":false,"i":["x"],"k":[]}', want: false }],
    ['a number among lookupIds', { given: '{"t":"ws","a":false,"i":[],"k":[7]}', want: false }],
    ['missing arrays', { given: '{"t":"ws","a":true}', want: false }],
    ['a filter that lets nothing through', { given: '{"t":"ws","a":false,"i":[],"k":[]}', want: false }],
    ['text far too long to be valid', { given: `{"t":"ws","a":true,"i":[],"k":[],"x":"${'x'.repeat(200_000)}"}`, want: false }],
  ])('parseListen: %s', (_, { given, want }) => {
    expect(parseListen(given) !== null).toBe(want);
  });
});
