/**
 * @module Signed blob URLs (DESIGN §11 "Blob URLs", issue 22 item 5): the metadata `url` of a blob
 * reads `/api/<collection>/<id>/<field>?v=<version>&exp=<unix seconds>&sig=<base64url HMAC-SHA256>`, so
 * `<img src>` works without a cookie or bearer. The HMAC key is derived from the app's signing key
 * (the same row of `_svc_signing_keys` on every instance), the MAC covers the path, the version and
 * the expiry. `exp` is rounded up to a step of a quarter of the lifetime (at most 15 minutes), so the
 * URL a row reads stays the same for a while and browsers can cache the file under it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Collection } from '../contract/manifest.js';
import type { BlobMetadata } from '../contract/property-values.js';
import { HttpError } from '../errors.js';

/** The query parameters a signed URL adds to `?v=`. */
export const SIGNATURE_PARAMS = ['exp', 'sig'] as const;

/** How many signed URLs a signer remembers (about 2 MB). */
const RECENT_LIMIT = 10_000;
const SIG = /^[A-Za-z0-9_-]{43}$/;
const EXP = /^[1-9][0-9]{0,11}$/;

/** Signs and checks blob URLs with one key; `now` (ms) is the clock (default `Date.now`). */
export class BlobUrlSigner {
  /** Signed URLs of the current step by stored url (at most `RECENT_LIMIT`, then cleared). */
  private readonly recent = new Map<string, { exp: string; signed: string }>();

  constructor(
    private readonly key: Buffer,
    /** Lifetime of a URL in seconds (svc.json `storage.signedUrlSeconds`). */
    readonly seconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  private mac(path: string, version: string, exp: string): Buffer {
    return createHmac('sha256', this.key).update(`${path}\n${version}\n${exp}`).digest();
  }

  /**
   * `url` (`<path>?v=<version>`, as stored) with `exp` and `sig` added; a url of another shape is
   * returned as it is. `exp` lies between 3/4 of the lifetime and the whole lifetime from now.
   */
  sign(url: string): string {
    const q = url.indexOf('?v=');
    if (q < 0 || url.indexOf('&', q) >= 0) return url;
    const path = url.slice(0, q);
    const version = url.slice(q + 3);
    const step = Math.max(1, Math.min(900, Math.floor(this.seconds / 4)));
    const exp = String(Math.floor((Math.floor(this.now() / 1000) + this.seconds) / step) * step);
    // A list reads many rows within one step: their URLs are remembered until the step moves on.
    const known = this.recent.get(url);
    if (known?.exp === exp) return known.signed;
    const signed = `${url}&exp=${exp}&sig=${this.mac(path, version, exp).toString('base64url')}`;
    if (this.recent.size >= RECENT_LIMIT) this.recent.clear();
    this.recent.set(url, { exp, signed });
    return signed;
  }

  /**
   * Checks the signature of a request for `path` (the raw path, before `?`) with its parsed query.
   * @returns false when the query carries no `exp` and no `sig` (the usual auth path applies), true
   *   when the signature is valid and unexpired
   * @throws HttpError BLOB_SIGNATURE_INVALID (403) for a missing, repeated or malformed `v`/`exp`/`sig`
   *   or a MAC that does not match (the path, version or expiry altered); BLOB_URL_EXPIRED (403) when
   *   a genuine signature's `exp` has passed
   */
  verify(path: string, query: Record<string, string | string[] | undefined>): boolean {
    if (query.exp === undefined && query.sig === undefined) return false;
    const { v, exp, sig } = query;
    const invalid = (why: string) =>
      new HttpError('BLOB_SIGNATURE_INVALID', `the blob URL's signature is not valid (${why}); read the row again for a fresh url`, {
        details: [{ path: why.split(' ')[0], message: why }],
      });
    if (typeof v !== 'string' || v === '') throw invalid('v is missing or repeated');
    if (typeof exp !== 'string' || !EXP.test(exp)) throw invalid('exp is not one unix time in seconds');
    if (typeof sig !== 'string' || !SIG.test(sig)) throw invalid('sig is not one base64url HMAC-SHA256');
    // Compared as text: two spellings of one base64url value (the last digit's spare bits) are not both valid.
    if (!timingSafeEqual(Buffer.from(this.mac(path, v, exp).toString('base64url')), Buffer.from(sig))) throw invalid('sig does not match the path, v and exp');
    if (Number(exp) * 1000 <= this.now()) {
      throw new HttpError('BLOB_URL_EXPIRED', `the blob URL expired at ${new Date(Number(exp) * 1000).toISOString()}; read the row again for a fresh url`, {
        details: [{ path: 'exp', message: 'expired' }],
      });
    }
    return true;
  }
}

/**
 * The signer of each collection's blob URLs, registered when an app runtime is built
 * (`registerBlobUrlSigner`); rows of a collection without one read the stored url unsigned.
 */
const signers = new WeakMap<Collection, BlobUrlSigner>();

/** Makes rows of `collections` read signed blob URLs (their `columnDecoder`s look the signer up). */
export function registerBlobUrlSigner(collections: readonly Collection[], signer: BlobUrlSigner): void {
  for (const c of collections) signers.set(c, signer);
}

/** `meta` with its url signed by the signer of `c`, when it has one; null stays null. */
export function signedMetadata(c: Collection, meta: BlobMetadata | null): BlobMetadata | null {
  const signer = signers.get(c);
  return meta && signer ? { ...meta, url: signer.sign(meta.url) } : meta;
}
