/**
 * @module Real-time tokens (SPEC §4.7 `_rt/ws`, `_rt/hub`; DESIGN §4): JWTs signed with the app's key
 * (every instance verifies every instance's tokens, so no sticky sessions are needed) that carry the
 * caller's identity into a socket.
 * - `ws`: the one-time token of a Web PubSub URL; 60 s, single use (a `ReplayGuard` remembers used ids:
 *   in memory, or in Redis so that a token used on one instance is refused on every other).
 * - `hub`: the SignalR access token of `_rt/hub`; as long as an access token, reusable (the client sends
 *   it on every negotiate and reconnect).
 * - `hubconn`: the connection token a negotiate hands out; 60 s, single use, names the connection id.
 */
import { jwtVerify, SignJWT } from 'jose';
import { randomUUID } from 'node:crypto';
import type { AuthService } from '../auth/auth-service.js';
import { ANONYMOUS, type Caller } from '../auth/caller.js';
import { HttpError } from '../errors.js';

const ALGORITHM = 'EdDSA';
const TOKEN_TYPE = 'rt+jwt';

/** Lifetime of one-time tokens (`ws`, `hubconn`), seconds. */
export const ONE_TIME_TOKEN_SECONDS = 60;

export type TokenPurpose = 'ws' | 'hub' | 'hubconn';

/** Remembers used token ids until they expire. */
export interface ReplayGuard {
  /** True the first time `id` is claimed within `ttlMs`; false for a replay. */
  claim(id: string, ttlMs: number): Promise<boolean>;
}

/** A `ReplayGuard` in this process's memory (one instance, or tokens that never cross instances). */
export class MemoryReplayGuard implements ReplayGuard {
  private readonly used = new Map<string, number>();
  async claim(id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if (this.used.size > 10_000) for (const [k, until] of this.used) if (until <= now) this.used.delete(k);
    const until = this.used.get(id);
    if (until !== undefined && until > now) return false;
    this.used.set(id, now + ttlMs);
    return true;
  }
}

/** What a verified token says. */
export interface RealtimeClaims {
  caller: Caller;
  /** Token id (single-use tokens are claimed by it). */
  jti: string;
  /** `hubconn` only: the connection id handed out by negotiate. */
  connectionId?: string;
}

/**
 * Signs a real-time token for `caller`.
 * @param ttlSeconds - lifetime; default 60 s for one-time tokens, the access-token lifetime for `hub`
 */
export function signRealtimeToken(auth: AuthService, purpose: TokenPurpose, caller: Caller, extra: { connectionId?: string } = {}): Promise<string> {
  const ttl = purpose === 'hub' ? auth.accessTokenTtlSeconds : ONE_TIME_TOKEN_SECONDS;
  const jwt = new SignJWT({ pur: purpose, kind: caller.kind, ...(extra.connectionId ? { cid: extra.connectionId } : {}) })
    .setProtectedHeader({ alg: ALGORITHM, kid: auth.keys.kid, typ: TOKEN_TYPE })
    .setIssuer(auth.issuer)
    .setAudience(`${auth.issuer}:rt`)
    .setJti(randomUUID())
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttl);
  if (caller.id) jwt.setSubject(caller.id);
  return jwt.sign(auth.keys.privateKey);
}

/**
 * Verifies a real-time token of `purpose` and answers its identity as it stands now (roles re-read).
 * Single-use purposes are claimed in `guard`: a second use is refused.
 * @throws HttpError UNAUTHORIZED (401) for a malformed, expired, foreign, reused or wrong-purpose token,
 *   or one whose identity was deleted or disabled
 */
export async function verifyRealtimeToken(auth: AuthService, guard: ReplayGuard, token: string, purpose: TokenPurpose): Promise<RealtimeClaims> {
  let payload: Record<string, unknown>;
  try {
    const result = await jwtVerify(token, auth.keys.publicKey, {
      algorithms: [ALGORITHM],
      issuer: auth.issuer,
      audience: `${auth.issuer}:rt`,
      typ: TOKEN_TYPE,
      requiredClaims: ['jti', 'exp'],
      clockTolerance: 5,
    });
    payload = result.payload as Record<string, unknown>;
  } catch (err) {
    const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED';
    throw new HttpError('UNAUTHORIZED', expired ? 'the real-time token has expired' : 'the real-time token is not valid');
  }
  if (payload.pur !== purpose) throw new HttpError('UNAUTHORIZED', 'the real-time token is not valid here');
  const jti = String(payload.jti);
  if (purpose !== 'hub' && !(await guard.claim(jti, (ONE_TIME_TOKEN_SECONDS + 10) * 1000))) {
    throw new HttpError('UNAUTHORIZED', 'the real-time token was already used');
  }
  let caller: Caller = ANONYMOUS;
  if (payload.kind === 'user' || payload.kind === 'serviceAccount') {
    const current = typeof payload.sub === 'string' ? await auth.identities.get(payload.kind, payload.sub) : null;
    if (!current) throw new HttpError('UNAUTHORIZED', 'the identity of the real-time token was deleted or disabled');
    caller = current;
  }
  return { caller, jti, connectionId: typeof payload.cid === 'string' ? payload.cid : undefined };
}
