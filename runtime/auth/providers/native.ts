/**
 * @module Native clients sign in with a provider's ID token (DESIGN §11): `POST /api/_auth
 * { authority: "<provider>", idToken }` for OpenID Connect providers. The token is verified against
 * the issuer's JWKS (signature, `iss`, `aud` = the client id, `exp`) under the sign-in limiter (a
 * refused token counts as a failed attempt from the caller's address); the user is found, linked or
 * created as in the browser flow (`link.ts`), and the answer is the token body of `_auth`.
 */
import { HttpError } from '../../errors.js';
import { startSession, type AuthService, type Session } from '../auth-service.js';
import type { Caller } from '../caller.js';
import { limitedCheck } from '../limited-check.js';
import { userForIdentity } from './link.js';
import { signedInUser } from '../identities.js';
import { ProviderError } from './types.js';

/** Longest accepted ID token, characters. */
const MAX_ID_TOKEN = 16_000;

/**
 * Signs in with an ID token of provider `name`.
 * @throws HttpError VALIDATION_FAILED (400: no `idToken`, or `name` is an OAuth 2.0 provider without ID
 *   tokens); UNAUTHORIZED (401: forged, expired, foreign-audience token, or a disabled user);
 *   RATE_LIMITED (429); BAD_GATEWAY (502: the issuer could not be reached)
 * Source: DESIGN §11 "Native clients".
 */
export async function signInWithIdToken(auth: AuthService, name: string, body: unknown, remoteAddress: string | undefined): Promise<Session> {
  const provider = auth.providers.get(name)!;
  if (!provider.verifyIdToken)
    throw new HttpError('VALIDATION_FAILED', `${name} issues no ID tokens: sign in with it in a browser at /login/${name}`, {
      details: [{ path: '/authority', message: `${name} is an OAuth 2.0 provider` }],
    });
  const idToken = (body as Record<string, unknown>).idToken;
  if (typeof idToken !== 'string' || idToken.length === 0 || idToken.length > MAX_ID_TOKEN)
    throw new HttpError('VALIDATION_FAILED', `idToken is required (the provider's ID token, at most ${MAX_ID_TOKEN} characters)`, {
      details: [{ path: '/idToken', message: 'idToken is required' }],
    });
  const caller = await limitedCheck(auth, `provider:${name}`, remoteAddress, async (): Promise<Caller | null> => {
    let identity;
    try {
      identity = await provider.verifyIdToken!(idToken);
    } catch (err) {
      if (err instanceof ProviderError && err.status === 401) {
        auth.logger.info({ provider: name, reason: (err.cause as Error | undefined)?.message }, 'ID token refused');
        return null;
      }
      if (err instanceof ProviderError) throw new HttpError('BAD_GATEWAY', err.message, { cause: err.cause });
      throw err;
    }
    const { user } = await userForIdentity(auth, name, identity);
    if (user.disabledAt) return null;
    return signedInUser(auth.db, user);
  });
  if (!caller) throw new HttpError('UNAUTHORIZED', 'the ID token is not valid (signature, issuer, audience or expiry), or its user is disabled');
  return startSession(auth, caller, caller.username!);
}
