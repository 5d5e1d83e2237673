/**
 * @module Sign-up and e-mail verification of an app's own users (DESIGN §11), free of any HTTP
 * framework (routes: `runtime/http/account-routes.ts`): `POST /api/_signup` and `POST
 * /api/_verify-email` (the check that keeps unverified users from signing in is in `email-verified.ts`). An address already
 * in use answers exactly like a successful sign-up and mails the address's owner instead; the
 * username is held all the same (by a disabled user without an address), so neither that answer nor
 * a later sign-up with the same username tells whether an address has an account.
 */
import { HttpError } from '../errors.js';
import type { AuthService } from './auth-service.js';
import { sendAccountMail } from './account-mail.js';
import { useMailToken } from './mail-tokens.js';
import { insertUser, markEmailVerified, normaliseEmail, userByEmail } from './identities.js';
import { credentialFields } from './sign-in.js';
import { reserveAttempt } from './limited-check.js';

/** An optional string field of a body: absent, or a string of at most 1000 characters. @throws HttpError VALIDATION_FAILED naming it */
export function optionalField(body: unknown, name: string): string | undefined {
  const v = (typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined) as unknown;
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || v.length > 1000)
    throw new HttpError('VALIDATION_FAILED', `${name} must be a string of at most 1000 characters`, {
      details: [{ path: `/${name}`, message: 'must be a string' }],
    });
  return v;
}

/**
 * Counts one attempt of `action` (`signup`, `reset`) from `remoteAddress` under the sign-in limiter
 * (shared through Redis when configured), refusing once the address has 10 in the window: the check
 * and the count are one atomic step, so concurrent requests cannot all pass.
 * @throws HttpError RATE_LIMITED (429, `Retry-After`)
 */
export async function countAttempt(auth: AuthService, action: string, remoteAddress: string | undefined): Promise<void> {
  await reserveAttempt(auth, action, remoteAddress);
}

/**
 * `POST /api/_signup { username, password, email? }`: creates a user with `auth.signup.roles`; with
 * an e-mail address, mails a verification link. Every sign-up counts as an attempt of the sign-in
 * limiter (10 per 15 minutes from one address).
 * @returns `{ id }` (201)
 * @throws HttpError SIGNUP_DISABLED (403) when sign-up is off; VALIDATION_FAILED (400) naming the field
 *   (email is required when `requireEmailVerification`); USERNAME_TAKEN (409); RATE_LIMITED (429)
 */
export async function signUp(auth: AuthService, body: unknown, remoteAddress: string | undefined): Promise<{ id: string }> {
  if (!auth.signup.enabled) throw new HttpError('SIGNUP_DISABLED', 'sign-up is not enabled for this app (svc.json auth.signup.enabled)');
  const { username, password } = credentialFields(body, ['username', 'password']);
  const rawEmail = optionalField(body, 'email');
  if (rawEmail === undefined && auth.signup.requireEmailVerification)
    throw new HttpError('VALIDATION_FAILED', 'email is required (e-mail addresses are verified before sign-in)', {
      details: [{ path: '/email', message: 'email is required' }],
    });
  const email = rawEmail === undefined ? undefined : normaliseEmail(rawEmail);
  if (email === null)
    throw new HttpError('VALIDATION_FAILED', 'email must be an e-mail address', { details: [{ path: '/email', message: 'must be an e-mail address' }] });
  await countAttempt(auth, 'signup', remoteAddress);
  const owner = email ? await userByEmail(auth.db, email) : null;
  if (owner) return addressInUse(auth, username, password, owner.email ?? email!, owner.id);
  const result = await insertUser(auth.db, { username, password, email, roles: auth.signup.roles });
  if ('taken' in result) {
    if (result.taken === 'username') throw new HttpError('USERNAME_TAKEN', `the username ${JSON.stringify(username.trim())} is taken`);
    const raced = await userByEmail(auth.db, email!);
    return addressInUse(auth, username, password, email!, raced?.id ?? '');
  }
  auth.logger.info({ userId: result.id }, 'user signed up');
  if (email) sendAccountMail(auth, 'verify', email, result.id);
  return result;
}

/**
 * The answer of a sign-up whose address has an account: the username is held all the same, by a
 * disabled user without an address (so a second sign-up with that username answers 409 whether or
 * not the first one's address had an account), and the address's owner is mailed.
 * @returns the id of the held username's user (201, like a sign-up)
 * @throws HttpError USERNAME_TAKEN (409) when the username is taken too
 */
async function addressInUse(auth: AuthService, username: string, password: string, email: string, ownerId: string): Promise<{ id: string }> {
  const held = await insertUser(auth.db, { username, password, roles: auth.signup.roles, disabled: true });
  if ('taken' in held) throw new HttpError('USERNAME_TAKEN', `the username ${JSON.stringify(username.trim())} is taken`);
  auth.logger.info({ userId: held.id }, 'sign-up with an address in use: username held by a disabled user');
  if (ownerId) sendAccountMail(auth, 'address-in-use', email, ownerId);
  return held;
}

/**
 * `POST /api/_verify-email { token }`: marks the address of the token's user verified. A wrong token
 * counts as a failed attempt of the sign-in limiter.
 * @throws HttpError VALIDATION_FAILED (400, no token); INVALID_TOKEN (400: unknown, used or expired); RATE_LIMITED (429)
 */
export async function verifyEmail(auth: AuthService, body: unknown, remoteAddress: string | undefined): Promise<void> {
  const { token } = credentialFields(body, ['token']);
  const key = await reserveAttempt(auth, 'mail-token', remoteAddress);
  let userId: string | null;
  try {
    userId = await useMailToken(auth.db, token, 'verify');
  } catch (err) {
    await auth.limiter.release(key);
    throw err;
  }
  if (!userId) throw new HttpError('INVALID_TOKEN', 'the verification link is not valid: it is unknown, was used already or has expired');
  await auth.limiter.release(key);
  await markEmailVerified(auth.db, userId);
}
