/**
 * @module The authentication state of a running app: database, signing keys, the failure limiter and
 * the settings of svc.json `auth`; and issuing sessions (an access token plus a refresh token, the
 * body of DESIGN §4 "Auth bodies").
 */
import type { Database } from '../data/database.js';
import type { AppManifest } from '../manifest.js';
import type { Logger } from '../log.js';
import type { Caller } from './caller.js';
import { loadSigningKeys, signAccessToken, tokenIssuer, type SigningKeys } from './access-tokens.js';
import { FailureLimiter, memoryLimiter, type AttemptLimiter, type RateLimitOptions } from './rate-limit.js';
import { issueRefreshToken, rotateRefreshToken, type RotationFailure } from './refresh-tokens.js';
import { loadCaller } from './identities.js';
import { IdentityCache } from './identity-cache.js';
import { clientAddressOf, trustedPeerOf, type ClientAddress, type TrustedPeer } from './client-address.js';
import { publicOriginOf, type OriginRequest } from './public-origin.js';
import { logMailer, type Mailer } from './mailer.js';
import { SIGNUP_DEFAULTS, type CorsSettings, type SignupSettings } from '../contract/settings.js';
import type { IdentityProvider } from './providers/types.js';

export interface AuthService {
  db: Database;
  manifest: AppManifest;
  logger: Logger;
  keys: SigningKeys;
  /** Failed sign-ins per attempt key: in memory, or shared through Redis. */
  limiter: AttemptLimiter;
  /** Current state of the identities behind access tokens (≤ `IDENTITY_CACHE_TTL_MS` old). */
  identities: IdentityCache;
  /** Issuer and audience of access tokens, `svc:<api-name>`. */
  issuer: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  secureCookies: boolean;
  /**
   * The other origins whose cookie-authenticated writes are accepted (svc.json `cors.origins` when
   * `cors.credentials` is true, else empty); the session cookies are then `SameSite=None; Secure`.
   */
  credentialedOrigins: ReadonlySet<string>;
  /** svc.json `auth.signup`, defaults applied (DESIGN §11). */
  signup: SignupSettings;
  /** Outgoing mail, and the origin its links point at (and provider callbacks, DESIGN §11). */
  mail: MailContext;
  /** The identity providers of svc.json `auth.providers` by name (`createProviders`). */
  providers: ReadonlyMap<string, IdentityProvider>;
  /** The address a request comes from (svc.json `trustedProxies`), what limits per address count. */
  clientAddress: ClientAddress;
  /** Whether a request's TCP peer is one of svc.json `trustedProxies` (whose `x-request-id` is kept). */
  trustedPeer: TrustedPeer;
  /** The public origin of a request (`publicOriginOf`: svc.json `publicUrl`, a trusted proxy's forwarded headers, or the socket). */
  publicOrigin: (req: OriginRequest) => string | undefined;
}

/** The mailer of the identity endpoints and the public origin of the links in their mails (`https://shop.example`). */
export interface MailContext {
  mailer: Mailer;
  origin: () => string;
}

/**
 * Loads (or creates) the signing keys and sets up the limiter.
 * @param limiter - the shared limiter when Redis is configured; default: one in this process's memory
 * @param mail - the mailer of svc.json `mail` (`createMailer`); default: mails go to the log
 * @param providers - the identity providers (`createProviders`); default none
 */
export async function createAuthService(
  db: Database,
  manifest: AppManifest,
  logger: Logger,
  rateLimit?: RateLimitOptions,
  limiter?: AttemptLimiter,
  mail?: MailContext,
  providers: ReadonlyMap<string, IdentityProvider> = new Map(),
): Promise<AuthService> {
  const service: AuthService = {
    db,
    manifest,
    logger,
    keys: await loadSigningKeys(db),
    limiter: limiter ?? memoryLimiter(new FailureLimiter(rateLimit)),
    identities: new IdentityCache(db),
    issuer: tokenIssuer(manifest.name),
    accessTokenTtlSeconds: 3600,
    refreshTokenTtlDays: 70,
    secureCookies: false,
    credentialedOrigins: new Set(),
    signup: SIGNUP_DEFAULTS,
    mail: mail ?? {
      mailer: logMailer(logger, `${manifest.name} <no-reply@localhost>`),
      origin: () => service.manifest.settings.mail?.baseUrl ?? service.manifest.settings.publicUrl ?? 'http://localhost',
    },
    providers,
    clientAddress: clientAddressOf(),
    trustedPeer: trustedPeerOf(),
    // The current manifest's and trusted proxies (`svc dev` swaps them on reload).
    publicOrigin: (req) => publicOriginOf(req, service.manifest.settings, service.trustedPeer),
  };
  applyAuthSettings(service, manifest);
  return service;
}

/**
 * Points the service at `manifest` and applies the svc.json settings it reads on every request:
 * `auth` (token lifetimes, cookies, `signup`), `cors` (credentialed origins), `trustedProxies`
 * (client addresses, trusted peers) and `publicUrl` (read through `manifest`). Used at start and by
 * `svc dev` on every swap (DESIGN §10); `auth.providers` and the limiter are built once at start.
 * @throws Error when `trustedProxies` holds an entry that is not an address or CIDR range (checked by `svc generate` first)
 */
export function applyAuthSettings(service: AuthService, manifest: AppManifest): void {
  const auth = manifest.settings.auth;
  service.manifest = manifest;
  service.accessTokenTtlSeconds = auth?.accessTokenTtlSeconds ?? 3600;
  service.refreshTokenTtlDays = auth?.refreshTokenTtlDays ?? 70;
  service.secureCookies = auth?.secureCookies ?? false;
  service.credentialedOrigins = credentialedOriginsOf(manifest.settings.cors);
  service.signup = { ...SIGNUP_DEFAULTS, ...auth?.signup };
  service.clientAddress = clientAddressOf(manifest.settings.trustedProxies);
  service.trustedPeer = trustedPeerOf(manifest.settings.trustedProxies);
}

/** The token response of `_auth`, `_token` (DESIGN §4): `expires_in` in seconds. */
export interface TokenBody {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

/** A session: the token body and when its refresh token's family expires. */
export interface Session {
  body: TokenBody;
  caller: Caller;
  refreshExpiresAt: Date;
}

async function sessionFor(auth: AuthService, caller: Caller, refresh: { token: string; expiresAt: Date }): Promise<Session> {
  const access = await signAccessToken(auth.keys, caller, { issuer: auth.issuer, ttlSeconds: auth.accessTokenTtlSeconds });
  return {
    body: { access_token: access, token_type: 'Bearer', expires_in: auth.accessTokenTtlSeconds, refresh_token: refresh.token },
    caller,
    refreshExpiresAt: refresh.expiresAt,
  };
}

/**
 * Starts a session for a caller who just proved its credentials.
 * @param clientId - the service account's client id, or the user's username (the `client_id` of later refresh grants)
 */
export async function startSession(auth: AuthService, caller: Caller, clientId: string): Promise<Session> {
  const subject = { subjectKind: caller.kind as 'user' | 'serviceAccount', subjectId: caller.id!, clientId };
  return sessionFor(auth, caller, await issueRefreshToken(auth.db, subject, auth.refreshTokenTtlDays));
}

/**
 * Continues a session from a refresh token (rotation). The caller's roles are read again from the
 * database; a deleted or disabled identity fails (`identity-gone`) and its token family is revoked.
 * @param clientId - the presented `client_id`; null for the refresh cookie
 */
export async function continueSession(auth: AuthService, refreshToken: string, clientId: string | null): Promise<Session | { failure: RotationFailure }> {
  let caller: Caller | null = null;
  const rotated = await rotateRefreshToken(auth.db, refreshToken, clientId, async (s) => {
    caller = await loadCaller(auth.db, s.subjectKind, s.subjectId);
    return caller !== null;
  });
  if ('failure' in rotated) return rotated;
  return sessionFor(auth, caller!, rotated.next);
}

/**
 * The origins of svc.json `cors.origins` that may send cookies (`AuthService.credentialedOrigins`):
 * all listed ones when `cors.credentials` is true (`"*"` never), else none.
 */
export function credentialedOriginsOf(cors: CorsSettings | undefined): ReadonlySet<string> {
  return new Set(cors?.credentials === true ? cors.origins.filter((o) => o !== '*') : []);
}
