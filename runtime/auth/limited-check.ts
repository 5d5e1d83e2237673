/**
 * @module The failure limiter around every credential check (SPEC §4.6, DESIGN §11): a subject
 * (`client:<id>`, `user:<name>`, `provider:<name>`, `mail-token`) locked out from an address is
 * refused with 429 before its credentials are read; a wrong credential counts as a failure, a right one
 * clears the count. The limiter itself (shared across instances) is `rate-limit.ts`.
 */
import { HttpError } from '../errors.js';
import type { Caller } from './caller.js';
import type { AuthService } from './auth-service.js';
import { attemptKey } from './rate-limit.js';

/**
 * Refuses while `subject` (`client:<id>`, `user:<name>`) is locked out from `remoteAddress`.
 * @returns the limiter key of the attempt
 * @throws HttpError RATE_LIMITED (429, with `headers['retry-after']` in seconds)
 */
export async function checkLockout(auth: AuthService, subject: string, remoteAddress: string | undefined): Promise<string> {
  const key = attemptKey(subject, remoteAddress);
  const wait = await auth.limiter.retryAfterSeconds(key);
  if (wait > 0) throw new HttpError('RATE_LIMITED', `too many failed attempts; try again in ${wait} seconds`, { headers: { 'retry-after': String(wait) } });
  return key;
}

/**
 * Checks credentials under the failure limiter.
 * @returns the caller, or null for wrong credentials (counted as a failure)
 * @throws HttpError RATE_LIMITED (429) while the key is locked out (see `checkLockout`)
 */
export async function limitedCheck(
  auth: AuthService,
  subject: string,
  remoteAddress: string | undefined,
  check: () => Promise<Caller | null>,
): Promise<Caller | null> {
  const key = await checkLockout(auth, subject, remoteAddress);
  const caller = await check();
  if (caller) await auth.limiter.reset(key);
  else await auth.limiter.fail(key);
  return caller;
}
