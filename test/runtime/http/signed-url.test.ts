/**
 * The signer of blob URLs (runtime/blobs/signed-url.ts, DESIGN §11 "Blob URLs") on an injected clock:
 * `exp` rounded so a URL stays the same within a step and lives between 3/4 of the lifetime and all of
 * it; only the exact path, version and expiry verify; expiry is judged after the signature; a query
 * without `exp` and `sig` is left to the usual auth path.
 */
import { describe, expect, it } from 'vitest';
import { parse } from 'node:querystring';
import { BlobUrlSigner } from '../../../dist/runtime/blobs/signed-url.js';
import { HttpError } from '../../../dist/runtime/errors.js';

const KEY = Buffer.alloc(32, 7);
const STORED = '/api/Product/0190c0de-0000-7000-8000-000000000001/image?v=0190c0de-0000-7000-8000-0000000000aa';

/** A signer at `seconds` lifetime whose clock reads `now.ms`. */
function at(seconds: number, now: { ms: number }) {
  return new BlobUrlSigner(KEY, seconds, () => now.ms);
}

/** The code `verify` throws for `url`, or 'valid' / 'unsigned'. */
function outcome(signer: BlobUrlSigner, url: string): string {
  const q = url.indexOf('?');
  try {
    return signer.verify(url.slice(0, q), parse(url.slice(q + 1))) ? 'valid' : 'unsigned';
  } catch (err) {
    return (err as HttpError).code;
  }
}

describe('signed blob URLs', () => {
  it('exp is rounded to a quarter of the lifetime (at most 15 minutes): the same URL within a step, 3/4 to all of the lifetime', () => {
    // The clock one second into a step: exp is that step's end plus the lifetime, rounded down.
    const now = { ms: (900 * 1_900_000 - 3600 + 1) * 1000 };
    const signer = at(3600, now);
    const first = signer.sign(STORED);
    expect(first).toMatch(/^\/api\/Product\/[\w-]+\/image\?v=[\w-]+&exp=\d+&sig=[\w-]{43}$/);
    const exp = Number(new URLSearchParams(first.split('?')[1]).get('exp'));
    expect(exp).toBe(900 * 1_900_000);
    now.ms += 898_000;
    expect(signer.sign(STORED)).toBe(first);
    expect(exp - now.ms / 1000).toBe(2701);
    now.ms += 1000;
    const next = signer.sign(STORED);
    expect(Number(new URLSearchParams(next.split('?')[1]).get('exp'))).toBe(exp + 900);
    expect(exp + 900 - now.ms / 1000).toBe(3600);
    // Long lifetimes step by 15 minutes; a 1-second lifetime by 1 second.
    expect(Number(/exp=(\d+)/.exec(at(86_400, now).sign(STORED))![1]) % 900).toBe(0);
    expect(Number(/exp=(\d+)/.exec(at(1, { ms: 5_500 }).sign(STORED))![1])).toBe(6);
  });

  it('verifies the genuine URL; any altered part is BLOB_SIGNATURE_INVALID; past exp it is BLOB_URL_EXPIRED', () => {
    const now = { ms: 1_700_000_000_000 };
    const signer = at(60, now);
    const url = signer.sign(STORED);
    expect(outcome(signer, url)).toBe('valid');
    expect(outcome(signer, STORED)).toBe('unsigned');
    expect(outcome(signer, url.replace('/image?', '/photo?'))).toBe('BLOB_SIGNATURE_INVALID');
    expect(outcome(signer, url.replace('aa&exp', 'ab&exp'))).toBe('BLOB_SIGNATURE_INVALID');
    expect(
      outcome(
        signer,
        url.replace(/exp=(\d+)/, (_, e: string) => `exp=${Number(e) + 60}`),
      ),
    ).toBe('BLOB_SIGNATURE_INVALID');
    expect(outcome(new BlobUrlSigner(Buffer.alloc(32, 8), 60, () => now.ms), url)).toBe('BLOB_SIGNATURE_INVALID');
    now.ms += 61_000;
    expect(outcome(signer, url)).toBe('BLOB_URL_EXPIRED');
    // An altered URL past its exp is still "invalid": the expiry of a forged exp is never judged.
    expect(outcome(signer, url.replace('/image?', '/photo?'))).toBe('BLOB_SIGNATURE_INVALID');
  });

  it('a url of another shape is left as it is', () => {
    const signer = at(60, { ms: 0 });
    expect(signer.sign('/api/Product/x/image')).toBe('/api/Product/x/image');
    expect(signer.sign(`${STORED}&exp=1&sig=x`)).toBe(`${STORED}&exp=1&sig=x`);
  });
});
