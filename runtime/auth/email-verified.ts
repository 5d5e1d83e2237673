/**
 * @module The one rule of DESIGN §11 that sign-in paths share (`_auth`, the `/login` form): until
 * their e-mail address is verified, users answer 403 `EMAIL_NOT_VERIFIED` after proving their password.
 */
import { HttpError } from '../errors.js';
import type { AuthService } from './auth-service.js';
import type { Caller } from './caller.js';
import { userById } from './identities.js';

/**
 * Refuses a user who proved their password but whose e-mail address is not yet verified, when
 * `auth.signup.requireEmailVerification` is on (users without an address are never refused).
 * @throws HttpError EMAIL_NOT_VERIFIED (403)
 */
export async function requireVerifiedEmail(auth: AuthService, caller: Caller): Promise<void> {
  if (caller.kind !== 'user' || !auth.signup.requireEmailVerification) return;
  const user = await userById(auth.db, caller.id!);
  if (user?.email && !user.emailVerified) throw new HttpError('EMAIL_NOT_VERIFIED', 'confirm your e-mail address first: open the link in the mail we sent you');
}
