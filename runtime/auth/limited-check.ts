/**
 * @module The failure limiter around every credential check (SPEC §4.6, DESIGN §4 "Auth details",
 * §11): a subject (`client:<id>`, `user:<name>`, `provider:<name>`, `mail-token`) locked out from an
 * address is refused with 429 before its credentials are read. Each check is counted as a failure
 * BEFORE it runs (an atomic reservation, `AttemptLimiter.reserve`), so of any number of concurrent
 * attempts at most the limit get their credentials checked; a right credential then clears the
 * subject's count. Credential checks are also counted per address whatever the subject
 * (`MAX_FAILURES_PER_ADDRESS`), so guessing with ever new usernames is limited too. The limiter itself
 * (shared across instances) is `rate-limit.ts`.
 */
import { HttpError } from '../errors.js';
import type { Caller } from './caller.js';
import type { AuthService } from './auth-service.js';
import { addressKey, attemptKey, MAX_FAILURES_PER_ADDRESS } from './rate-limit.js';

/** The 429 of a locked-out key. */
function rateLimited(wait: number, what: string): HttpError {
  return new HttpError('RATE_LIMITED', `too many ${what}; try again in ${wait} seconds`, { headers: { 'retry-after': String(wait) } });
}

/**
 * Refuses while `subject` (`client:<id>`, `user:<name>`) is locked out from `remoteAddress`, without
 * counting anything (paths that count a failure only after their check; `reserveAttempt` counts first).
 * @returns the limiter key of the attempt
 * @throws HttpError RATE_LIMITED (429, with `headers['retry-after']` in seconds)
 */
export async function checkLockout(auth: AuthService, subject: string, remoteAddress: string | undefined): Promise<string> {
  const key = attemptKey(subject, remoteAddress);
  const wait = await auth.limiter.retryAfterSeconds(key);
  if (wait > 0) throw rateLimited(wait, 'failed attempts');
  return key;
}

/**
 * Counts one attempt of `subject` from `remoteAddress` as a failure before it is made (atomically:
 * concurrent attempts cannot all pass), refusing once the key has its limit (10 per 15 minutes).
 * The caller takes the count back with `auth.limiter.reset(key)` (a success that clears the
 * failures) or `auth.limiter.release(key)` (an attempt that is not a failure).
 * @returns the limiter key of the attempt
 * @throws HttpError RATE_LIMITED (429, with `headers['retry-after']` in seconds)
 */
export async function reserveAttempt(auth: AuthService, subject: string, remoteAddress: string | undefined): Promise<string> {
  const key = attemptKey(subject, remoteAddress);
  const wait = await auth.limiter.reserve(key);
  if (wait > 0) throw rateLimited(wait, 'failed attempts');
  return key;
}

/**
 * Checks credentials under the failure limiter: the attempt is counted for the address (at most
 * `MAX_FAILURES_PER_ADDRESS` failures per window, whatever the subject) and for subject + address
 * (at most 10) before `check` runs; a right credential clears the subject's count and gives back
 * the address's; `check` throwing gives back both (it was no failure of the credentials).
 * @returns the caller, or null for wrong credentials (counted as a failure)
 * @throws HttpError RATE_LIMITED (429, `Retry-After`) while the address or the key is locked out;
 *   whatever `check` throws
 */
export async function limitedCheck(
  auth: AuthService,
  subject: string,
  remoteAddress: string | undefined,
  check: () => Promise<Caller | null>,
): Promise<Caller | null> {
  const address = addressKey(remoteAddress);
  const addressWait = await auth.limiter.reserve(address, MAX_FAILURES_PER_ADDRESS);
  if (addressWait > 0) throw rateLimited(addressWait, 'failed sign-ins from this address');
  let key: string;
  try {
    key = await reserveAttempt(auth, subject, remoteAddress);
  } catch (err) {
    await auth.limiter.release(address);
    throw err;
  }
  let caller: Caller | null;
  try {
    caller = await check();
  } catch (err) {
    await Promise.all([auth.limiter.release(key), auth.limiter.release(address)]);
    throw err;
  }
  if (caller) await Promise.all([auth.limiter.reset(key), auth.limiter.release(address)]);
  return caller;
}
