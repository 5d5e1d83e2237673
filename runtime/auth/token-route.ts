/**
 * @module `POST /api/_token`, the OAuth 2.0 token endpoint (RFC 6749 §4.4 client credentials, §6
 * refresh): form-encoded or JSON bodies; client credentials in the body or as HTTP Basic; RFC 6749 §5.2
 * error bodies `{ error, error_description }`. It never sets cookies. Refresh tokens rotate; a
 * reused one revokes its family (see `refresh-tokens.ts`). Failed attempts are rate limited per
 * client id and address: 429 with `Retry-After` and `error: "rate_limited"`.
 */
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { HttpError } from '../errors.js';
import { continueSession, startSession, type AuthService } from './auth-service.js';
import { checkClientSecret } from './identities.js';
import { checkLockout, limitedCheck } from './auth-routes.js';

/** An RFC 6749 §5.2 error. */
export class OAuthError extends Error {
  constructor(readonly error: string, readonly status: number, description: string) {
    super(description);
    this.name = 'OAuthError';
  }
}

function field(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' && v !== '' && v.length <= 1000 ? v : undefined;
}

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1: form-urlencoded id and secret), if sent. */
function basicCredentials(req: Request): { id: string; secret: string } | undefined {
  const m = /^basic +([A-Za-z0-9+/=]+) *$/i.exec(req.headers.authorization ?? '');
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

/**
 * The `_token` router (mounted under `/api`).
 * Source: SPEC §4.6, §5.4; DESIGN §4 "Auth details" (never sets cookies, form and JSON bodies).
 */
export function tokenRouter(auth: AuthService): Router {
  const router = Router();
  router.post('/_token', express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    const body = (typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? req.body : {}) as Record<string, unknown>;
    const grantType = field(body, 'grant_type');
    if (!grantType) throw new OAuthError('invalid_request', 400, 'grant_type is required');
    if (grantType === 'client_credentials') {
      const basic = basicCredentials(req);
      const id = basic?.id ?? field(body, 'client_id');
      const secret = basic?.secret ?? field(body, 'client_secret');
      if (!id || !secret) throw new OAuthError('invalid_request', 400, 'client_id and client_secret are required');
      const caller = await limitedCheck(auth, req, res, `client:${id}`, () => checkClientSecret(auth.db, id, secret));
      if (!caller) throw new OAuthError('invalid_client', 401, 'client authentication failed');
      return res.json((await startSession(auth, caller, id)).body);
    }
    if (grantType === 'refresh_token') {
      const id = basicCredentials(req)?.id ?? field(body, 'client_id');
      const token = field(body, 'refresh_token');
      if (!id || !token) throw new OAuthError('invalid_request', 400, 'client_id and refresh_token are required');
      const key = checkLockout(auth, req, res, `client:${id}`);
      const session = await continueSession(auth, token, id);
      if ('failure' in session) {
        auth.limiter.fail(key);
        auth.logger.info({ reqId: res.locals.reqId, reason: session.failure }, 'refresh token refused');
        throw new OAuthError('invalid_grant', 400, 'the refresh token is invalid, expired, revoked or was issued to another client');
      }
      auth.limiter.reset(key);
      return res.json(session.body);
    }
    throw new OAuthError('unsupported_grant_type', 400, 'grant_type must be client_credentials or refresh_token');
  });
  router.all('/_token', (req) => {
    throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
  });
  return router;
}

/**
 * Error middleware for `/api/_token`: writes RFC 6749 bodies (`invalid_request` for a body that is
 * not valid JSON, `rate_limited` with 429, `server_error` with 500 for anything unexpected).
 */
export function oauthErrors(auth: AuthService) {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    let e: OAuthError;
    if (err instanceof OAuthError) e = err;
    else if (err instanceof HttpError && err.code === 'RATE_LIMITED') e = new OAuthError('rate_limited', 429, err.message);
    else if (err instanceof HttpError && err.code === 'METHOD_NOT_ALLOWED') return next(err);
    else if ((err as { type?: string })?.type === 'entity.parse.failed') e = new OAuthError('invalid_request', 400, 'the request body is not valid JSON');
    else if (err instanceof HttpError && err.status < 500) e = new OAuthError('invalid_request', 400, err.message);
    else {
      auth.logger.error({ reqId: res.locals.reqId, err }, 'token request failed');
      e = new OAuthError('server_error', 500, 'internal server error');
    }
    if (e.status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="svc"');
    res.status(e.status).json({ error: e.error, error_description: e.message });
  };
}
