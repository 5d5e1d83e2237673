/**
 * @module What the authentication endpoints of SPEC §4.6 do, with the bodies of DESIGN §4 "Auth
 * details", free of any HTTP framework (the routes are in `runtime/http/auth-routes.ts`): `_auth`
 * (sign-in with a service account or a password), `_refresh` (renews a cookie session), `_logout`
 * (revokes refresh-token families), `_me` and `_webAppConfig`; every credential check runs under the
 * failure limiter (`limited-check.ts`). The OAuth 2.0 `_token` grants are in `token-grant.ts`.
 */
import { HttpError, type ErrorDetail } from '../errors.js';
import type { Caller } from './caller.js';
import { continueSession, startSession, type AuthService, type Session } from './auth-service.js';
import { checkClientSecret, checkPassword } from './identities.js';
import { limitedCheck } from './limited-check.js';
import { revokeRefreshToken } from './refresh-tokens.js';
import { requireVerifiedEmail } from './email-verified.js';
import { signInWithIdToken } from './providers/native.js';

/** Longest accepted credential field, in characters. */
const MAX_FIELD = 1000;

/** Reads required string fields of a credentials body. @throws HttpError VALIDATION_FAILED naming each missing field */
export function credentialFields<K extends string>(body: unknown, names: readonly K[]): Record<K, string> {
  const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const details: ErrorDetail[] = names
    .filter((n) => typeof b[n] !== 'string' || b[n] === '' || (b[n] as string).length > MAX_FIELD)
    .map((n) => ({ path: `/${n}`, message: `${n} is required (a non-empty string of at most ${MAX_FIELD} characters)` }));
  if (details.length > 0) throw new HttpError('VALIDATION_FAILED', details.map((d) => d.message).join('; '), { details });
  return Object.fromEntries(names.map((n) => [n, b[n]])) as Record<K, string>;
}

/**
 * `POST /api/_auth`: signs in with `{ authority: "serviceaccount", clientId, clientSecret }`,
 * `{ authority: "password", username, password }` or `{ authority: "<provider>", idToken }` (an
 * OpenID Connect provider's ID token, `providers/native.ts`) and starts a session (the HTTP layer sets the
 * cookies of `session` only for same-origin callers).
 * @throws HttpError VALIDATION_FAILED (400), UNAUTHORIZED (401, wrong or disabled credentials),
 *   EMAIL_NOT_VERIFIED (403, DESIGN §11), RATE_LIMITED (429), BAD_GATEWAY (502, a provider unreachable)
 * Source: SPEC §4.6, §5; DESIGN §4 "Auth details", §11.
 */
export async function signIn(auth: AuthService, body: unknown, remoteAddress: string | undefined): Promise<Session> {
  const authority = (body as Record<string, unknown> | undefined)?.authority;
  let caller: Caller | null;
  let clientId: string;
  if (typeof authority === 'string' && authority.toLowerCase() === 'serviceaccount') {
    const f = credentialFields(body, ['clientId', 'clientSecret']);
    clientId = f.clientId;
    caller = await limitedCheck(auth, `client:${f.clientId}`, remoteAddress, () => checkClientSecret(auth.db, f.clientId, f.clientSecret));
  } else if (authority === 'password') {
    const f = credentialFields(body, ['username', 'password']);
    clientId = f.username;
    caller = await limitedCheck(auth, `user:${f.username}`, remoteAddress, () => checkPassword(auth.db, f.username, f.password));
  } else if (typeof authority === 'string' && auth.providers.has(authority)) {
    return signInWithIdToken(auth, authority, body, remoteAddress);
  } else {
    const named = [
      '"serviceaccount" (with clientId, clientSecret)',
      '"password" (with username, password)',
      ...[...auth.providers.keys()].map((n) => `"${n}" (with idToken)`),
    ];
    throw new HttpError('VALIDATION_FAILED', `authority must be ${named.join(' or ')}`, {
      details: [{ path: '/authority', message: `must be ${named.map((n) => n.split(' ')[0]).join(' or ')}` }],
    });
  }
  if (!caller) throw new HttpError('UNAUTHORIZED', 'the credentials are not valid');
  await requireVerifiedEmail(auth, caller);
  return startSession(auth, caller, clientId);
}

/**
 * `POST /api/_refresh`: continues a cookie session from its refresh token.
 * @returns the next session, or null when the token is missing, unknown, spent, expired or its
 *   identity is gone (the HTTP layer then clears the cookies and answers 401); the reason is logged
 */
export async function renewSession(auth: AuthService, refreshToken: string | undefined, reqId?: string): Promise<Session | null> {
  if (!refreshToken) return null;
  const session = await continueSession(auth, refreshToken, null);
  if ('failure' in session) {
    auth.logger.info({ reqId, reason: session.failure }, 'refresh refused');
    return null;
  }
  return session;
}

/**
 * `POST /api/_logout`: revokes the family of every refresh token given (the refresh cookie's, and
 * the `refresh_token` of a bearer client's body); missing and unknown tokens are ignored.
 */
export async function endSession(auth: AuthService, refreshTokens: readonly (string | undefined)[]): Promise<void> {
  for (const token of new Set(refreshTokens)) {
    if (token) await revokeRefreshToken(auth.db, token);
  }
}

/** The body of `GET /api/_me`. @throws HttpError UNAUTHORIZED (401) for an anonymous caller */
export function meBody(caller: Caller): { id: string | null; username: string | null; roles: string[] } {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', '_me requires authentication');
  return { id: caller.id, username: caller.username, roles: caller.roles };
}

/** The body of `GET /api/_webAppConfig` without identity providers. */
export const WEB_APP_CONFIG = Object.freeze({ loginUrl: '/login', loginMethods: ['password'], refreshUrl: '/api/_refresh', logoutUrl: '/api/_logout' });

/**
 * The body of `GET /api/_webAppConfig`: `WEB_APP_CONFIG`, with each identity provider's name added to
 * `loginMethods` and listed in `providers` (`{ name, displayName, loginUrl }`, DESIGN §11) so a web
 * app can draw its own buttons.
 */
export function webAppConfig(auth: AuthService): Record<string, unknown> {
  if (auth.providers.size === 0) return WEB_APP_CONFIG;
  const providers = [...auth.providers.values()].map((p) => ({ name: p.name, displayName: p.displayName, loginUrl: `/login/${p.name}` }));
  return { ...WEB_APP_CONFIG, loginMethods: [...WEB_APP_CONFIG.loginMethods, ...providers.map((p) => p.name)], providers };
}
