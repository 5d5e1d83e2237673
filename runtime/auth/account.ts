/**
 * @module What a signed-in user does to their own account (DESIGN §11), free of any HTTP framework
 * (routes: `runtime/http/account-routes.ts`): change the password (`POST /api/_me/password`) and
 * delete the account (`DELETE /api/_me`). Both need the current password, checked under the sign-in
 * limiter with the same key as a sign-in (`user:<username>`), so they are no way around its lockout.
 */
import { HttpError } from '../errors.js';
import type { AuthService } from './auth-service.js';
import type { Caller } from './caller.js';
import { checkPassword, deleteIdentity, MIN_PASSWORD_LENGTH, setPassword } from './identities.js';
import { credentialFields } from './sign-in.js';
import { limitedCheck } from './limited-check.js';

/** The signed-in user behind `caller`, after checking `password` is theirs. */
async function provenUser(auth: AuthService, caller: Caller, password: string, remoteAddress: string | undefined): Promise<Caller> {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'sign in first');
  if (caller.kind !== 'user') throw new HttpError('FORBIDDEN', 'only users have a password to change or an account to delete here');
  const username = caller.username!;
  const proven = await limitedCheck(auth, `user:${username}`, remoteAddress, () => checkPassword(auth.db, username, password));
  if (!proven || proven.id !== caller.id) throw new HttpError('FORBIDDEN', 'the current password is wrong');
  return proven;
}

/**
 * `POST /api/_me/password { current, password }`: sets a new password, revokes every refresh-token
 * family of the user (every session, this one's too, must sign in again once its access token expires)
 * and voids every outstanding reset and verification link (`setPassword`).
 * @throws HttpError VALIDATION_FAILED (400) naming the field; UNAUTHORIZED (401, anonymous); FORBIDDEN (403, a service account or a wrong current password); RATE_LIMITED (429)
 */
export async function changePassword(auth: AuthService, caller: Caller, body: unknown, remoteAddress: string | undefined): Promise<void> {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'sign in first');
  const { current, password } = credentialFields(body, ['current', 'password']);
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new HttpError('VALIDATION_FAILED', `password must be at least ${MIN_PASSWORD_LENGTH} characters`, {
      details: [{ path: '/password', message: `at least ${MIN_PASSWORD_LENGTH} characters` }],
    });
  const user = await provenUser(auth, caller, current, remoteAddress);
  await setPassword(auth.db, user.id!, password); // revokes every refresh-token family, voids every mailed link
  auth.identities.changed('user', user.id!);
}

/**
 * `DELETE /api/_me { password }`: deletes the user, their refresh tokens and mail tokens; rows they
 * created keep their id in `createdBy`; their access tokens stop working within the identity cache's
 * 4 s.
 * @throws HttpError VALIDATION_FAILED (400); UNAUTHORIZED (401); FORBIDDEN (403); RATE_LIMITED (429)
 */
export async function deleteOwnAccount(auth: AuthService, caller: Caller, body: unknown, remoteAddress: string | undefined): Promise<void> {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'sign in first');
  const { password } = credentialFields(body, ['password']);
  const user = await provenUser(auth, caller, password, remoteAddress);
  await deleteIdentity(auth.db, { kind: 'user', username: user.username! }); // and its refresh and mail tokens
  auth.identities.changed('user', user.id!);
  auth.logger.info({ userId: user.id }, 'user deleted their account');
}
