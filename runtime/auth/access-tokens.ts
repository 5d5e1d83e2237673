/**
 * @module Access tokens (SPEC §5.1, §5.5): JWTs signed with an Ed25519 key (`EdDSA`) through jose. The
 * key pair is generated on the first start and kept in `_svc_signing_keys`, so every instance that
 * shares the database signs and verifies with the same key: each instance inserts a candidate if none
 * exists and then reads back the one row that won. Verification pins the algorithm, the key, the
 * issuer, the audience and the `at+jwt` type, so `alg: none`, HS256-with-the-public-key and tokens of
 * other keys or other apps fail.
 */
import { hkdfSync } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from 'jose';
import { HttpError } from '../errors.js';
import type { Database } from '../data/database.js';
import type { Caller } from './caller.js';
import { sql } from '../query/sql.js';
import { decodeSigningKey, first, TABLE } from './store.js';

const ALGORITHM = 'EdDSA';
const KEY_ROW_ID = 'access-token';
const TOKEN_TYPE = 'at+jwt';

/** The signing key in force: key id (`kid`, the JWK thumbprint) and the key pair. */
export interface SigningKeys {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /**
   * A 32-byte secret for one `purpose` (e.g. `blob-url`), derived with HKDF-SHA256 from the private
   * key, so every instance sharing the database derives the same one and no purpose's key reveals
   * another's (DESIGN §11 "Blob URLs").
   */
  derive(purpose: string): Buffer;
}

/**
 * Loads the signing key pair from the database, creating it on the first start.
 * Source: issue "Access tokens: asymmetric keys generated on first start and kept in the database".
 */
export async function loadSigningKeys(db: Database): Promise<SigningKeys> {
  const read = () => first(db, sql`SELECT * FROM ${TABLE.signingKeys} WHERE "id" = ${KEY_ROW_ID}`, decodeSigningKey);
  let row = await read();
  if (!row) {
    const pair = await generateKeyPair(ALGORITHM, { crv: 'Ed25519', extractable: true });
    const privateJwk = JSON.stringify(await exportJWK(pair.privateKey));
    const publicJwk = JSON.stringify(await exportJWK(pair.publicKey));
    // Another instance may insert first: then ours is dropped and theirs is read back.
    await db.query(sql`INSERT INTO ${TABLE.signingKeys} ("id", "algorithm", "privateJwk", "publicJwk", "createdAt")
      VALUES (${KEY_ROW_ID}, ${ALGORITHM}, ${privateJwk}, ${publicJwk}, ${new Date()}) ON CONFLICT ("id") DO NOTHING`);
    row = await read();
    if (!row) throw new Error('the signing key could not be stored');
  }
  const publicJwk = JSON.parse(row.publicJwk) as JWK;
  const privateJwk = JSON.parse(row.privateJwk) as JWK;
  const secret = Buffer.from(privateJwk.d ?? '', 'base64url');
  return {
    kid: await calculateJwkThumbprint(publicJwk),
    privateKey: (await importJWK(privateJwk, ALGORITHM)) as CryptoKey,
    publicKey: (await importJWK(publicJwk, ALGORITHM)) as CryptoKey,
    derive: (purpose) => Buffer.from(hkdfSync('sha256', secret, 'svc', `svc ${purpose}`, 32)),
  };
}

/** Issuer and audience of an app's tokens: `svc:<api-name>`. */
export const tokenIssuer = (apiName: string): string => `svc:${apiName}`;

/**
 * Signs an access token for `caller` (claims: `sub` id, `kind`, `name`, `roles`, `admin`).
 * @param ttlSeconds - lifetime (svc.json `auth.accessTokenTtlSeconds`, default 3600)
 */
export function signAccessToken(keys: SigningKeys, caller: Caller, options: { issuer: string; ttlSeconds: number }): Promise<string> {
  return new SignJWT({ kind: caller.kind, name: caller.username, roles: caller.roles, admin: caller.admin })
    .setProtectedHeader({ alg: ALGORITHM, kid: keys.kid, typ: TOKEN_TYPE })
    .setSubject(caller.id!)
    .setIssuer(options.issuer)
    .setAudience(options.issuer)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + options.ttlSeconds)
    .sign(keys.privateKey);
}

/**
 * Verifies an access token's signature and claims and returns the caller it names, with the roles
 * it was issued with (`verifyToken` in `authenticate.ts` replaces them with the identity's current ones).
 * @throws HttpError UNAUTHORIZED (401) for a malformed, tampered, expired, foreign-key or wrong-algorithm token
 */
export async function verifyAccessToken(keys: SigningKeys, token: string, issuer: string): Promise<Caller> {
  let payload: Record<string, unknown>;
  try {
    const result = await jwtVerify(token, keys.publicKey, {
      algorithms: [ALGORITHM],
      issuer,
      audience: issuer,
      typ: TOKEN_TYPE,
      requiredClaims: ['sub', 'exp', 'iat'],
      clockTolerance: 5, // s
    });
    if (result.protectedHeader.kid !== keys.kid) throw new HttpError('UNAUTHORIZED', 'unknown key');
    payload = result.payload as Record<string, unknown>;
  } catch (err) {
    const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED';
    throw new HttpError('UNAUTHORIZED', expired ? 'the access token has expired' : 'the access token is not valid');
  }
  const { sub, kind, name, roles, admin } = payload;
  if (
    typeof sub !== 'string' ||
    (kind !== 'user' && kind !== 'serviceAccount') ||
    typeof name !== 'string' ||
    !Array.isArray(roles) ||
    !roles.every((r) => typeof r === 'string') ||
    typeof admin !== 'boolean'
  ) {
    throw new HttpError('UNAUTHORIZED', 'the access token is not valid');
  }
  return { kind, id: sub, username: name, roles: roles as string[], admin: kind === 'serviceAccount' && admin };
}
