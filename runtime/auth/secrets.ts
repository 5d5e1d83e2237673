/**
 * @module Hashing of passwords and client secrets (argon2id, `@node-rs/argon2` defaults: 19 MiB,
 * 2 passes, 1 lane — the OWASP minimum), random tokens, and SHA-256 digests for high-entropy tokens
 * (refresh tokens), which need no slow hash.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Algorithm, hash, verify } from '@node-rs/argon2';

/** An argon2id hash in PHC string form (`$argon2id$v=19$m=19456,t=2,p=1$…`). */
export function hashSecret(plain: string): Promise<string> {
  return hash(plain, { algorithm: Algorithm.Argon2id });
}

let dummy: Promise<string> | undefined;

/**
 * Whether `plain` matches `stored`. With `stored` null (no such user or client) a dummy hash is
 * verified anyway, so an unknown name costs as much time as a wrong secret.
 */
export async function verifySecret(stored: string | null, plain: string): Promise<boolean> {
  dummy ??= hashSecret(randomToken(16));
  try {
    const ok = await verify(stored ?? (await dummy), plain);
    return stored !== null && ok;
  } catch {
    return false;
  }
}

/** `bytes` random bytes as base64url (32 bytes → 43 characters). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** SHA-256 of a string, hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
