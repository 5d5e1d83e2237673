/**
 * @module What `POST /api/_token` does, the OAuth 2.0 token endpoint (RFC 6749 §4.4 client
 * credentials, §6 refresh), free of any HTTP framework (the route is in `runtime/http/auth-routes.ts`):
 * client credentials in the body or as HTTP Basic; RFC 6749 §5.2 error bodies `{ error,
 * error_description }`. It never sets cookies. Refresh tokens rotate; a reused one revokes its family
 * (see `refresh-tokens.ts`). Failed attempts are rate limited per client id and address: 429 with
 * `Retry-After` and `error: "rate_limited"`.
 */
import { answerError } from '../errors.js';
import type { Logger } from '../log.js';
import { continueSession, startSession, type AuthService, type TokenBody } from './auth-service.js';
import { checkClientSecret } from './identities.js';
import { limitedCheck, reserveAttempt } from './limited-check.js';

/** An RFC 6749 §5.2 error. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly status: number,
    description: string,
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

function field(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' && v !== '' && v.length <= 1000 ? v : undefined;
}

/** Client credentials from an `Authorization: Basic` header (RFC 6749 §2.3.1: form-urlencoded id and secret), if sent. */
export function basicCredentials(authorization: string | undefined): { id: string; secret: string } | undefined {
  const m = /^basic +([A-Za-z0-9+/=]+) *$/i.exec(authorization ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return { id: decodeURIComponent(text.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(text.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return undefined;
  }
}

/** What `_token` needs of the request besides its body. */
export interface TokenRequest {
  authorization?: string;
  remoteAddress?: string;
  reqId?: string;
}

/**
 * Runs one token request.
 * @param body - the parsed form or JSON body
 * @returns the token body of DESIGN §4
 * @throws OAuthError (invalid_request, invalid_client 401, invalid_grant, unsupported_grant_type);
 *   HttpError RATE_LIMITED while locked out (`oauthError` turns it into `rate_limited`)
 * Source: SPEC §4.6, §5.4; DESIGN §4 "Auth details".
 */
export async function tokenGrant(auth: AuthService, body: unknown, request: TokenRequest): Promise<TokenBody> {
  const b = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const grantType = field(b, 'grant_type');
  if (!grantType) throw new OAuthError('invalid_request', 400, 'grant_type is required');
  if (grantType === 'client_credentials') {
    const basic = basicCredentials(request.authorization);
    const id = basic?.id ?? field(b, 'client_id');
    const secret = basic?.secret ?? field(b, 'client_secret');
    if (!id || !secret) throw new OAuthError('invalid_request', 400, 'client_id and client_secret are required');
    const caller = await limitedCheck(auth, `client:${id}`, request.remoteAddress, () => checkClientSecret(auth.db, id, secret));
    if (!caller) throw new OAuthError('invalid_client', 401, 'client authentication failed');
    return (await startSession(auth, caller, id)).body;
  }
  if (grantType === 'refresh_token') {
    const id = basicCredentials(request.authorization)?.id ?? field(b, 'client_id');
    const token = field(b, 'refresh_token');
    if (!id || !token) throw new OAuthError('invalid_request', 400, 'client_id and refresh_token are required');
    const key = await reserveAttempt(auth, `client:${id}`, request.remoteAddress);
    let session;
    try {
      session = await continueSession(auth, token, id);
    } catch (err) {
      await auth.limiter.release(key);
      throw err;
    }
    if ('failure' in session) {
      auth.logger.info({ reqId: request.reqId, reason: session.failure }, 'refresh token refused');
      throw new OAuthError('invalid_grant', 400, 'the refresh token is invalid, expired, revoked or was issued to another client');
    }
    await auth.limiter.reset(key);
    return session.body;
  }
  throw new OAuthError('unsupported_grant_type', 400, 'grant_type must be client_credentials or refresh_token');
}

/**
 * The RFC 6749 response of an error thrown at `_token`: `OAuthError`s as they are; anything else first
 * goes through the runtime's one mapping (`answerError`), then RATE_LIMITED becomes `rate_limited`
 * (429, `Retry-After` kept), an unreachable database `temporarily_unavailable` (503, `Retry-After`
 * kept), a body over its size limit or of the wrong type `invalid_request` with 413 / 415, other
 * client errors `invalid_request` (400), anything unexpected `server_error` (500, logged).
 * @returns null for errors the general error handler must answer (METHOD_NOT_ALLOWED)
 */
export function oauthError(
  err: unknown,
  logger: Logger,
  reqId?: string,
): { status: number; body: { error: string; error_description: string }; headers: Record<string, string> } | null {
  let e: OAuthError;
  const headers: Record<string, string> = {};
  if (err instanceof OAuthError) e = err;
  else {
    const answer = answerError(err);
    const { code, error: message } = answer.body;
    if (code === 'METHOD_NOT_ALLOWED') return null;
    if (code === 'RATE_LIMITED' || code === 'SERVICE_UNAVAILABLE') Object.assign(headers, answer.headers);
    if (code === 'RATE_LIMITED') e = new OAuthError('rate_limited', 429, message);
    else if (code === 'SERVICE_UNAVAILABLE') e = new OAuthError('temporarily_unavailable', 503, message);
    else if (answer.status === 413 || answer.status === 415) e = new OAuthError('invalid_request', answer.status, message);
    else if (answer.status < 500) e = new OAuthError('invalid_request', 400, message);
    else {
      logger.error({ reqId, err }, 'token request failed');
      e = new OAuthError('server_error', 500, 'internal server error');
    }
  }
  if (e.status === 401) headers['www-authenticate'] = 'Basic realm="svc"';
  return { status: e.status, body: { error: e.error, error_description: e.message }, headers };
}
