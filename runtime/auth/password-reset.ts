/**
 * @module Password reset of an app's own users (DESIGN §11), free of any HTTP framework (routes:
 * `runtime/http/account-routes.ts`): `POST /api/_password-reset { email }` always answers 202 and does
 * its work (lookup, token, mail) in the background, so neither its answer nor its timing tells
 * whether the address has an account; `POST /api/_password-reset/confirm { token, password }` sets
 * the password, marks the address verified (the link reached it), revokes every refresh-token
 * family of the user and voids every other reset or verification link mailed to them.
 */
import { HttpError } from '../errors.js';
import type { AuthService } from './auth-service.js';
import { inBackground, sendAccountMail } from './account-mail.js';
import { useMailToken } from './mail-tokens.js';
import { markEmailVerified, MIN_PASSWORD_LENGTH, normaliseEmail, setPassword, userByEmail } from './identities.js';
import { credentialFields } from './sign-in.js';
import { checkLockout } from './limited-check.js';
import { countAttempt } from './signup.js';

/**
 * `POST /api/_password-reset { email }`: mails a reset link when the address belongs to an enabled
 * user. Every request counts as an attempt of the sign-in limiter.
 * @throws HttpError VALIDATION_FAILED (400) for a missing or malformed address; RATE_LIMITED (429)
 */
export async function requestPasswordReset(auth: AuthService, body: unknown, remoteAddress: string | undefined): Promise<void> {
  const email = normaliseEmail(credentialFields(body, ['email']).email);
  if (!email)
    throw new HttpError('VALIDATION_FAILED', 'email must be an e-mail address', { details: [{ path: '/email', message: 'must be an e-mail address' }] });
  await countAttempt(auth, 'reset', remoteAddress);
  inBackground(auth, 'a password reset', async () => {
    const user = await userByEmail(auth.db, email);
    if (user && !user.disabledAt) sendAccountMail(auth, 'reset', user.email ?? email, user.id);
  });
}

/**
 * `POST /api/_password-reset/confirm { token, password }`. A wrong token counts as a failed attempt
 * of the sign-in limiter.
 * @throws HttpError VALIDATION_FAILED (400) naming the field (password shorter than 8); INVALID_TOKEN (400); RATE_LIMITED (429)
 */
export async function confirmPasswordReset(auth: AuthService, body: unknown, remoteAddress: string | undefined): Promise<void> {
  const { token, password } = credentialFields(body, ['token', 'password']);
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new HttpError('VALIDATION_FAILED', `password must be at least ${MIN_PASSWORD_LENGTH} characters`, {
      details: [{ path: '/password', message: `at least ${MIN_PASSWORD_LENGTH} characters` }],
    });
  const key = await checkLockout(auth, 'mail-token', remoteAddress);
  const userId = await useMailToken(auth.db, token, 'reset');
  if (!userId) {
    await auth.limiter.fail(key);
    throw new HttpError('INVALID_TOKEN', 'the reset link is not valid: it is unknown, was used already or has expired');
  }
  await setPassword(auth.db, userId, password); // revokes every refresh-token family, voids every other link
  await markEmailVerified(auth.db, userId);
  auth.identities.changed('user', userId);
  auth.logger.info({ userId }, 'password reset');
}
