/**
 * The origin check of cookie-authenticated unsafe requests (SPEC §5.2): scheme, host and port of
 * `Origin` (or `Referer`) against the server's own `scheme://Host`.
 */
import { describe, expect, test } from 'vitest';
import { isCookieOrigin, isSameOrigin, requireSameOrigin, type CredentialInput } from '../../../dist/runtime/auth/authenticate.js';
import { HttpError } from '../../../dist/runtime/errors.js';

const server = { host: 'app.example:8080', scheme: 'http' as const };

describe('isSameOrigin', () => {
  test.each<[string, Partial<CredentialInput>, boolean]>([
    ['no Origin, no Referer (non-browser client)', {}, true],
    ['same scheme, host and port', { origin: 'http://app.example:8080' }, true],
    ['host case differs', { origin: 'http://APP.example:8080' }, true],
    ['other scheme, same host and port', { origin: 'https://app.example:8080' }, false],
    ['other port', { origin: 'http://app.example:8081' }, false],
    ['other host', { origin: 'http://evil.example:8080' }, false],
    ['Origin null', { origin: 'null' }, false],
    ['garbage', { origin: 'not a url' }, false],
    ['Referer of the same origin', { referer: 'http://app.example:8080/page?x=1' }, true],
    ['Referer of another scheme', { referer: 'https://app.example:8080/page' }, false],
    ['Origin wins over Referer', { origin: 'https://evil.example', referer: 'http://app.example:8080/' }, false],
    ['no Host header', { origin: 'http://app.example:8080', host: undefined }, false],
  ])('%s', (_name, headers, want) => {
    expect(isSameOrigin({ ...server, ...headers })).toBe(want);
  });

  test('default ports compare equal to none; https servers want https origins', () => {
    expect(isSameOrigin({ host: 'app.example', scheme: 'https', origin: 'https://app.example:443' })).toBe(true);
    expect(isSameOrigin({ host: 'app.example:80', scheme: 'http', origin: 'http://app.example' })).toBe(true);
    expect(isSameOrigin({ host: 'app.example', scheme: 'https', origin: 'http://app.example' })).toBe(false);
  });
});

/** The status of the HttpError `fn` throws, or 0 when it throws nothing. */
function statusOf(fn: () => void): number {
  try {
    fn();
    return 0;
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    return (err as HttpError).status;
  }
}

describe('requireSameOrigin', () => {
  test('refuses unsafe methods from another origin with 403, lets safe ones pass', () => {
    const foreign = { ...server, origin: 'https://app.example:8080' };
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'])
      expect(
        statusOf(() => requireSameOrigin({ ...foreign, method })),
        method,
      ).toBe(403);
    for (const method of ['GET', 'HEAD', 'OPTIONS', 'get'])
      expect(
        statusOf(() => requireSameOrigin({ ...foreign, method })),
        method,
      ).toBe(0);
    expect(statusOf(() => requireSameOrigin({ ...server, method: 'POST', origin: 'http://app.example:8080' }))).toBe(0);
  });

  test('lets the credentialed origins of svc.json cors through (exact Origin only), every other origin still 403', () => {
    const credentialed = new Set(['http://localhost:5173']);
    expect(statusOf(() => requireSameOrigin({ ...server, method: 'POST', origin: 'http://localhost:5173' }, credentialed))).toBe(0);
    expect(statusOf(() => requireSameOrigin({ ...server, method: 'POST', origin: 'http://localhost:5173' }))).toBe(403);
    for (const origin of ['http://localhost:5174', 'https://localhost:5173', 'http://evil.example', 'null'])
      expect(
        statusOf(() => requireSameOrigin({ ...server, method: 'DELETE', origin }, credentialed)),
        origin,
      ).toBe(403);
    // A Referer alone never counts as a credentialed origin.
    expect(statusOf(() => requireSameOrigin({ ...server, method: 'POST', referer: 'http://localhost:5173/page' }, credentialed))).toBe(403);
    expect(isCookieOrigin({ ...server, origin: 'http://localhost:5173' }, credentialed)).toBe(true);
    expect(isCookieOrigin({ ...server, origin: 'http://app.example:8080' })).toBe(true);
  });
});
