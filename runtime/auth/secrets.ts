/**
 * @module Hashing of passwords and client secrets (argon2id, `@node-rs/argon2` defaults: 19 MiB,
 * 2 passes, 1 lane — the OWASP minimum), random tokens, and SHA-256 digests for high-entropy tokens
 * (refresh tokens), which need no slow hash.
 *
 * `@node-rs/argon2` runs each hash on libuv's thread pool (`UV_THREADPOOL_SIZE`, default 4 threads),
 * the pool file-system calls (blob downloads, static files) and DNS lookups wait for too. Every hash
 * and verification therefore goes through one queue (`p-limit`) that runs at most half the pool's
 * threads at once, and at most one fewer than the CPUs (`HASH_CONCURRENCY`: 2 with the default pool
 * of 4 on 3 or more CPUs, 1 on 2 CPUs), and holds at most `MAX_WAITING_HASHES` waiting ones (more
 * answer 503 with `Retry-After`), so a burst of sign-ins never occupies every thread of the pool nor
 * every CPU (DESIGN §4 "Auth details").
 */
import { createHash, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Algorithm, hash, verify } from '@node-rs/argon2';
import pLimit from 'p-limit';
import { HttpError } from '../errors.js';

/** libuv's thread-pool size in this process (`UV_THREADPOOL_SIZE`, 1 to 1024, default 4). */
const POOL_SIZE = Math.min(1024, Math.max(1, Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '', 10) || 4));
/**
 * Hashes running at once: half the thread pool, so the other half stays free for file I/O, and one
 * fewer than the CPUs, so one stays free for the event loop; at least 1.
 */
export const HASH_CONCURRENCY = Math.max(1, Math.min(Math.floor(POOL_SIZE / 2), availableParallelism() - 1));
/** Hashes waiting beyond which new ones are refused (503) rather than queued. */
export const MAX_WAITING_HASHES = 1000;

const queue = pLimit(HASH_CONCURRENCY);
let running = 0;
let peak = 0;
let started = 0;

/** What the hash queue is doing: hashes running and waiting now, the most that ever ran at once, and how many ever started. */
export function hashQueueState(): { running: number; waiting: number; peak: number; started: number } {
  return { running, waiting: queue.pendingCount, peak, started };
}

/** Runs one argon2 call on the hash queue. @throws HttpError SERVICE_UNAVAILABLE (503, `Retry-After: 1`) when too many wait */
function queued<T>(work: () => Promise<T>): Promise<T> {
  if (queue.pendingCount >= MAX_WAITING_HASHES)
    return Promise.reject(new HttpError('SERVICE_UNAVAILABLE', 'too many passwords are being checked; try again shortly', { headers: { 'retry-after': '1' } }));
  return queue(async () => {
    running += 1;
    started += 1;
    peak = Math.max(peak, running);
    try {
      return await work();
    } finally {
      running -= 1;
    }
  });
}

/**
 * An argon2id hash in PHC string form (`$argon2id$v=19$m=19456,t=2,p=1$…`), computed on the hash queue.
 * @throws HttpError SERVICE_UNAVAILABLE (503) when `MAX_WAITING_HASHES` already wait
 */
export function hashSecret(plain: string): Promise<string> {
  return queued(() => hash(plain, { algorithm: Algorithm.Argon2id }));
}

/**
 * What an unknown name is verified against: an argon2id hash with the parameters `hashSecret` uses,
 * of a random secret nobody kept, so an unknown name costs exactly one verification, like a known one.
 */
export const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$ZFk24hJhXQAOkUjY7jsCxw$VYyI8zOy0Hf+LeuAdRsyEOOINUFZR1FaNIzIXgdHFas';

/**
 * Whether `plain` matches `stored`, verified on the hash queue. With `stored` null (no such user or
 * client) `DUMMY_HASH` is verified anyway, so an unknown name costs as much time as a wrong secret.
 * @throws HttpError SERVICE_UNAVAILABLE (503) when `MAX_WAITING_HASHES` already wait
 */
export async function verifySecret(stored: string | null, plain: string): Promise<boolean> {
  const ok = await queued(() => verify(stored ?? DUMMY_HASH, plain).catch(() => false));
  return stored !== null && ok;
}

/** `bytes` random bytes as base64url (32 bytes → 43 characters). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** SHA-256 of a string, hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
