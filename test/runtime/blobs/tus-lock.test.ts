/**
 * The Redis lock of resumable uploads (runtime/blobs/tus-lock.ts) on the Redis at 127.0.0.1:6379
 * under an app name of its own. Two lockers stand for two instances: a held lock makes the other wait
 * and asks the holder to release (tus's "request release"); the release wakes the waiter; a holder
 * that stops renewing (it died) blocks for at most the lock's lifetime; a lock taken away from its
 * holder ends the holder's request; a waiter gives up with 409 at its deadline or when its request
 * ends; an unreachable Redis answers 503; malformed messages on the channel change nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisLocker } from '../../../dist/runtime/blobs/tus-lock.js';
import type { Logger } from '../../../dist/runtime/log.js';
import { waitFor } from '../../support/wait.js';

const URL = 'redis://127.0.0.1:6379';
const api = `unit-${randomBytes(6).toString('hex')}`;
const warnings: string[] = [];
const logger = { warn: (_o: unknown, m: string) => warnings.push(m), info: () => {}, debug: () => {} } as unknown as Logger;
const connections: Redis[] = [];
const connect = (options: ConstructorParameters<typeof Redis>[1] = {}) => {
  const c = new Redis(URL, options);
  connections.push(c);
  return c;
};
const lockers: RedisLocker[] = [];
/** A locker as one instance has it (its own command and subscriber connections). */
const instance = (options: { ttlMs?: number; acquireTimeoutMs?: number; redis?: Redis } = {}) => {
  const locker = new RedisLocker({ redis: options.redis ?? connect(), subscriber: () => connect(), apiName: api, logger, ...options });
  lockers.push(locker);
  return locker;
};
const control = connect();

afterAll(async () => {
  for (const l of lockers) l.close();
  const keys = await control.keys(`svc:${api}:*`);
  if (keys.length) await control.del(...keys);
  for (const c of connections) c.disconnect();
});

const never = () => new AbortController().signal;

describe('RedisLocker', () => {
  it('one holder at a time across instances: the waiter asks the holder to release and gets the lock when it does', async () => {
    const a = instance();
    const b = instance();
    const held = a.newLock('up-1');
    let asked = 0;
    let release!: () => void;
    const released = new Promise<void>((ok) => (release = ok));
    await held.lock(never(), () => {
      asked += 1;
      release();
    });
    expect(await control.get(a.keyOf('up-1'))).toMatch(/^[0-9a-f]{32}$/);
    const waiter = b.newLock('up-1');
    let got = false;
    const taking = waiter.lock(never(), () => undefined).then(() => (got = true));
    await released; // the holder is asked (through the channel) while the waiter waits
    expect(got).toBe(false);
    await held.unlock();
    await taking;
    expect(asked).toBeGreaterThanOrEqual(1);
    await waiter.unlock();
    expect(await control.exists(a.keyOf('up-1'))).toBe(0);
  });

  it('a holder that died (stopped renewing) blocks for at most the lock lifetime; a live one keeps it past that', async () => {
    // 1 s, renewed every 333 ms: a live holder on a machine busy with other test files (a stall of a
    // few hundred ms between renewals) keeps it; 300 ms, renewed every 100 ms, lost it to a 200 ms stall.
    const ttlMs = 1000;
    const live = instance({ ttlMs });
    const alive = live.newLock('up-live');
    await alive.lock(never(), () => undefined);
    const dead = instance({ ttlMs });
    await dead.newLock('up-2').lock(never(), () => undefined);
    dead.close(); // no renewal, no unlock: what a killed process leaves
    const started = Date.now();
    await instance({ ttlMs })
      .newLock('up-2')
      .lock(never(), () => undefined);
    const waited = Date.now() - started;
    expect(waited).toBeLessThan(ttlMs + 500); // the lifetime, one 100 ms poll, and slack for a busy machine
    // The live holder renewed: its key is still there after three lifetimes.
    await new Promise((ok) => setTimeout(ok, 3 * ttlMs)); // the duration under test, not a wait for a condition
    expect(await control.pttl(live.keyOf('up-live'))).toBeGreaterThan(0);
    await alive.unlock();
  });

  it('a holder whose lock was taken away ends its request (request release)', async () => {
    const a = instance({ ttlMs: 300 });
    let ended = false;
    await a.newLock('up-3').lock(never(), () => {
      ended = true;
    });
    await control.set(a.keyOf('up-3'), 'someone-else');
    await waitFor(() => ended, 2000);
    expect(warnings).toContain('tus lock lost (expired or taken over): ending its request');
    // Its unlock leaves the other owner's key alone (compare-and-delete).
    await control.del(a.keyOf('up-3'));
  });

  it('a waiter answers 409 at its deadline, and as soon as its request ends', async () => {
    const a = instance();
    const held = a.newLock('up-4');
    await held.lock(never(), () => undefined); // a holder that ignores release requests
    const b = instance({ acquireTimeoutMs: 300 });
    const started = Date.now();
    const timeout = await b
      .newLock('up-4')
      .lock(never(), () => undefined)
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(timeout).toMatchObject({ status_code: 409 });
    expect(JSON.parse((timeout as { body: string }).body)).toMatchObject({ code: 'CONFLICT' });
    const aborter = new AbortController();
    const waiting = instance()
      .newLock('up-4')
      .lock(aborter.signal, () => undefined)
      .catch((e: unknown) => e);
    aborter.abort();
    expect(await waiting).toMatchObject({ status_code: 409 });
    await held.unlock();
  });

  it('answers 503 when Redis does not answer (the upload is never written unlocked)', async () => {
    const down = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
    down.on('error', () => undefined);
    connections.push(down);
    const err = await instance({ redis: down })
      .newLock('up-5')
      .lock(never(), () => undefined)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status_code: 503 });
    expect(JSON.parse((err as { body: string }).body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });

  it('malformed messages on the lock channel are ignored (fuzz)', async () => {
    const a = instance();
    let asked = 0;
    const held = a.newLock('up-6');
    await held.lock(never(), () => {
      asked += 1;
    });
    const channel = `svc:${api}:tus-lock`;
    await waitFor(async () => Number(((await control.pubsub('NUMSUB', channel)) as [string, number])[1]) > 0);
    const junk = [
      '',
      'null',
      '[]',
      '{"t":"release"}',
      '{"t":"release","id":42}',
      '{"t":7,"id":"up-6"}',
      '{"id":"up-6"}',
      '{',
      '"release"',
      '\u0000\uffff',
      'x'.repeat(100_000),
      '{"t":"unlocked","id":{"toString":1}}',
    ];
    for (const text of junk) await control.publish(channel, text);
    // A well-formed request after the junk is still served: the subscriber is alive.
    await control.publish(channel, JSON.stringify({ t: 'release', id: 'up-6' }));
    await waitFor(() => asked === 1, 2000);
    await held.unlock();
  });
});
