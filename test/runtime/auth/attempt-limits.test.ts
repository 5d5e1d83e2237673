/**
 * Issue 30 items 1, 6, 7 at the unit level, with real parts (a private `redis-server`, real argon2,
 * real files): the limiter reserves an attempt atomically before the credentials are checked, so of
 * 200 concurrent attempts at most the limit are checked, in memory and in Redis; credential checks
 * are limited per address whatever the subject; hashing runs on a bounded queue, so file reads never
 * wait behind a burst of hashes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FailureLimiter, memoryLimiter, RedisFailureLimiter, type AttemptLimiter } from '../../../dist/runtime/auth/rate-limit.js';
import { limitedCheck } from '../../../dist/runtime/auth/limited-check.js';
import * as secrets from '../../../dist/runtime/auth/secrets.js';
import type { AuthService } from '../../../dist/runtime/auth/auth-service.js';
import type { Caller } from '../../../dist/runtime/auth/caller.js';
import { parseOptions } from '@node-rs/argon2';
import { PrivateRedis } from '../../support/redis-server.js';

const CALLER = { kind: 'user', id: 'u1', username: 'alice', roles: [] } as unknown as Caller;
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** 200 concurrent `limitedCheck`s of one user from one address, each check taking 20 ms. */
async function burst(limiter: AttemptLimiter, right: (i: number) => boolean = () => false) {
  const auth = { limiter } as unknown as AuthService;
  let checked = 0;
  const outcomes = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      limitedCheck(auth, 'user:alice', '10.0.0.1', async () => {
        checked += 1;
        await sleep(20);
        return right(i) ? CALLER : null;
      }).then(
        (c) => (c ? 'in' : 'wrong'),
        (err: { code?: string }) => err.code,
      ),
    ),
  );
  return { checked, outcomes };
}

function limiterSuite(name: string, make: () => AttemptLimiter): void {
  describe(`limitedCheck under 200 concurrent attempts (${name})`, () => {
    it('checks at most 10 credentials; the rest are refused with RATE_LIMITED before any check', async () => {
      const { checked, outcomes } = await burst(make());
      expect(checked).toBe(10);
      expect(outcomes.filter((o) => o === 'wrong')).toHaveLength(10);
      expect(outcomes.filter((o) => o === 'RATE_LIMITED')).toHaveLength(190);
    });

    it('refuses the right password once 10 wrong ones were counted, even in the same burst', async () => {
      const limiter = make();
      await burst(limiter);
      const { checked, outcomes } = await burst(limiter, (i) => i % 2 === 0);
      expect(checked).toBe(0);
      expect(outcomes.every((o) => o === 'RATE_LIMITED')).toBe(true);
    });

    it('a right password clears the count; a check that throws gives its reservation back', async () => {
      const limiter = make();
      const auth = { limiter } as unknown as AuthService;
      for (let i = 0; i < 9; i++) expect(await limitedCheck(auth, 'user:bob', '10.0.0.2', async () => null)).toBeNull();
      await expect(limitedCheck(auth, 'user:bob', '10.0.0.2', async () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
      expect(await limitedCheck(auth, 'user:bob', '10.0.0.2', async () => CALLER)).toBe(CALLER);
      for (let i = 0; i < 10; i++) expect(await limitedCheck(auth, 'user:bob', '10.0.0.2', async () => null)).toBeNull();
      await expect(limitedCheck(auth, 'user:bob', '10.0.0.2', async () => CALLER)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    });

    it('limits credential checks per address whatever the username (100 per window)', async () => {
      const auth = { limiter: make() } as unknown as AuthService;
      let checked = 0;
      const outcomes = await Promise.all(
        Array.from({ length: 150 }, (_, i) =>
          limitedCheck(auth, `user:random-${i}`, '10.0.0.3', async () => {
            checked += 1;
            return null;
          }).then(
            () => 'wrong',
            (err: { code?: string; headers?: Record<string, string> }) => `${err.code} ${Number(err.headers?.['retry-after']) > 0}`,
          ),
        ),
      );
      expect(checked).toBe(100);
      expect(outcomes.filter((o) => o === 'RATE_LIMITED true')).toHaveLength(50);
      // Another address is not affected; a success from the address gives its reservation back.
      expect(await limitedCheck(auth, 'user:random-0', '10.0.0.4', async () => CALLER)).toBe(CALLER);
    });
  });
}

limiterSuite('in memory', () => memoryLimiter(new FailureLimiter()));

describe('on Redis', () => {
  let server: PrivateRedis;
  let redis: Redis;
  let n = 0;
  beforeAll(async () => {
    server = await PrivateRedis.onFreePort();
    await server.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  limiterSuite('in Redis, two instances sharing it', () => {
    const prefix = `test${n++}`;
    const fail = (err: Error) => {
      throw err;
    };
    // Two instances (each with its own fallback) share one count: attempts alternate between them.
    const a = new RedisFailureLimiter(redis, prefix, new FailureLimiter(), fail);
    const b = new RedisFailureLimiter(redis, prefix, new FailureLimiter(), fail);
    let turn = 0;
    const pick = () => (turn++ % 2 === 0 ? a : b);
    return {
      retryAfterSeconds: (k) => pick().retryAfterSeconds(k),
      fail: (k) => pick().fail(k),
      reserve: (k, max) => pick().reserve(k, max),
      release: (k) => pick().release(k),
      reset: (k) => pick().reset(k),
    };
  });

  it('sign-up and reset counts (countAttempt paths) reserve atomically: 40 concurrent, 10 pass', async () => {
    const limiter = new RedisFailureLimiter(redis, 'signup-test', new FailureLimiter(), (err) => {
      throw err;
    });
    const waits = await Promise.all(Array.from({ length: 40 }, () => limiter.reserve('reset|10.0.0.9')));
    expect(waits.filter((w) => w === 0)).toHaveLength(10);
    expect(waits.filter((w) => w > 0 && w <= 900)).toHaveLength(30);
  });
});

describe('the hash queue', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-hash-queue-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs at most half the thread pool (and fewer than the CPUs) at once, so file reads beside a burst of 48 hashes do not wait behind them', async () => {
    const stored = await secrets.hashSecret('the right password');
    const files = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const path = join(dir, `f${i}`);
        await writeFile(path, `file ${i}`);
        return path;
      }),
    );
    // One verification alone: the unit the wait is measured in.
    let t = performance.now();
    await secrets.verifySecret(stored, 'wrong');
    const oneHash = performance.now() - t;

    const hashes = Array.from({ length: 48 }, (_, i) => secrets.verifySecret(i % 2 ? stored : null, 'wrong'));
    await sleep(5); // every hash is queued or running
    t = performance.now();
    await Promise.all(files.map((f) => readFile(f)));
    const readBeside = performance.now() - t;
    expect(await Promise.all(hashes)).toEqual(Array(48).fill(false));
    // Unbounded, the 48 hashes take all 4 threads and the reads wait for about 48/4 = 12 hashes.
    expect(readBeside).toBeLessThan(3 * oneHash);
    const queue = secrets as unknown as { HASH_CONCURRENCY?: number; hashQueueState?: () => { peak: number; running: number; waiting: number } };
    const state = queue.hashQueueState?.();
    expect(state).toBeDefined();
    expect(queue.HASH_CONCURRENCY).toBeLessThanOrEqual(2); // half of libuv's default 4 threads
    expect(state!.peak).toBe(queue.HASH_CONCURRENCY);
    expect(state).toMatchObject({ running: 0, waiting: 0 });
  });

  it('verifies an unknown name (null hash) against a dummy hash of the same parameters: one verification, like a known name, never true', async () => {
    const q = secrets as unknown as { DUMMY_HASH?: string; hashQueueState?: () => { started: number } };
    expect(q.DUMMY_HASH).toBeDefined();
    const stored = await secrets.hashSecret('pw-123456');
    // Same algorithm, memory, passes, lanes, output and salt length as a stored hash.
    expect(parseOptions(q.DUMMY_HASH!)).toEqual(parseOptions(stored));
    const hashesOf = async (h: string | null, right: boolean) => {
      const before = q.hashQueueState!().started;
      expect(await secrets.verifySecret(h, 'pw-123456')).toBe(right);
      return q.hashQueueState!().started - before;
    };
    expect(await hashesOf(null, false)).toBe(1);
    expect(await hashesOf(stored, true)).toBe(1);
    expect(await hashesOf(null, false)).toBe(1);
  });
});
