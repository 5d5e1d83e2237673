/**
 * @module The state of one provider sign-in between `GET /login/<provider>` and its callback (DESIGN
 * §11): the provider, state, nonce, PKCE verifier and `returnUrl`, in a short-lived HttpOnly cookie
 * `svc_login` (path `/login`, SameSite=Lax so the provider's redirect carries it) signed with the
 * app's access-token key (EdDSA, shared by every instance through the database). The callback accepts
 * only the state of this browser's own cookie, so a sign-in cannot be finished in another browser
 * (login CSRF), and clears the cookie. The values are the browser's own secrets: the signature keeps
 * them from being altered, HttpOnly keeps page scripts from reading them.
 */
import { jwtVerify, SignJWT } from 'jose';
import { serialize } from 'cookie';
import type { AuthService } from '../auth-service.js';
import { readCookie } from '../cookies.js';

export const LOGIN_STATE_COOKIE = 'svc_login';
const COOKIE_PATH = '/login';
/** How long a browser may stay at the provider, seconds. */
export const LOGIN_STATE_TTL_S = 600;
const TYPE = 'svc-login-state+jwt';

/** What the cookie keeps. */
export interface LoginState {
  provider: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  returnUrl: string | null;
}

const audience = (auth: AuthService) => `${auth.issuer}:login-state`;

/** The `Set-Cookie` value that keeps `state` for `LOGIN_STATE_TTL_S`. */
export async function loginStateCookie(auth: AuthService, state: LoginState): Promise<string> {
  const jwt = await new SignJWT({ prv: state.provider, st: state.state, nn: state.nonce, cv: state.codeVerifier, ru: state.returnUrl })
    .setProtectedHeader({ alg: 'EdDSA', typ: TYPE })
    .setIssuer(auth.issuer)
    .setAudience(audience(auth))
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + LOGIN_STATE_TTL_S)
    .sign(auth.keys.privateKey);
  return serialize(LOGIN_STATE_COOKIE, jwt, {
    httpOnly: true,
    sameSite: 'lax',
    secure: auth.secureCookies || auth.mail.origin().startsWith('https://'),
    path: COOKIE_PATH,
    maxAge: LOGIN_STATE_TTL_S,
  });
}

/** The `Set-Cookie` value that clears the cookie. */
export function clearedLoginState(auth: AuthService): string {
  return serialize(LOGIN_STATE_COOKIE, '', {
    httpOnly: true,
    sameSite: 'lax',
    secure: auth.secureCookies || auth.mail.origin().startsWith('https://'),
    path: COOKIE_PATH,
    expires: new Date(1),
  });
}

/** The state of the request's cookie, or null when it is missing, altered, expired or malformed. */
export async function readLoginState(auth: AuthService, cookieHeader: string | undefined): Promise<LoginState | null> {
  const jwt = readCookie(cookieHeader, LOGIN_STATE_COOKIE);
  if (!jwt || jwt.length > 4000) return null;
  try {
    const { payload: p } = await jwtVerify(jwt, auth.keys.publicKey, { algorithms: ['EdDSA'], issuer: auth.issuer, audience: audience(auth), typ: TYPE });
    if (typeof p.prv !== 'string' || typeof p.st !== 'string' || typeof p.nn !== 'string' || typeof p.cv !== 'string') return null;
    return { provider: p.prv, state: p.st, nonce: p.nn, codeVerifier: p.cv, returnUrl: typeof p.ru === 'string' ? p.ru : null };
  } catch {
    return null;
  }
}
