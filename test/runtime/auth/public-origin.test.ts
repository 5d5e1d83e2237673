/**
 * The public origin of a request (runtime/auth/public-origin.ts, issue 32 §1): svc.json `publicUrl`
 * wins; otherwise `X-Forwarded-Proto`/`X-Forwarded-Host` count only from a trusted proxy; otherwise
 * the socket's scheme and `Host`. The Host check allows `publicUrl`'s host.
 */
import { describe, expect, test } from 'vitest';
import { publicOriginOf } from '../../../dist/runtime/auth/public-origin.js';
import { trustedPeerOf } from '../../../dist/runtime/auth/client-address.js';
import { allowedHostsOf, hostChecker } from '../../../dist/runtime/http/host-check.js';

const trusted = trustedPeerOf(['127.0.0.1']);
const req = (remoteAddress: string, headers: Record<string, string>, encrypted = false) => ({ socket: { remoteAddress, encrypted }, headers });
const forwarded = { host: '10.0.0.5:3000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'Club.Example' };

describe('publicOriginOf', () => {
  test('without publicUrl: the socket, unless the peer is a trusted proxy', () => {
    expect(publicOriginOf(req('10.9.9.9', forwarded), {}, trusted)).toBe('http://10.0.0.5:3000');
    expect(publicOriginOf(req('127.0.0.1', forwarded), {}, trusted)).toBe('https://club.example');
    expect(publicOriginOf(req('::ffff:127.0.0.1', forwarded), {}, trusted)).toBe('https://club.example');
    expect(publicOriginOf(req('10.9.9.9', { host: 'app.example' }, true), {}, trusted)).toBe('https://app.example');
    expect(publicOriginOf(req('10.9.9.9', {}), {}, trusted)).toBeUndefined();
  });

  test("a trusted proxy's first value counts; malformed values fall back to the connection's", () => {
    expect(
      publicOriginOf(req('127.0.0.1', { host: 'in:1', 'x-forwarded-proto': 'https, http', 'x-forwarded-host': 'a.example:8443, b.example' }), {}, trusted),
    ).toBe('https://a.example:8443');
    expect(publicOriginOf(req('127.0.0.1', { host: 'in:1', 'x-forwarded-proto': 'gopher', 'x-forwarded-host': 'evil.example/path' }), {}, trusted)).toBe(
      'http://in:1',
    );
    expect(publicOriginOf(req('127.0.0.1', { host: 'club.example', 'x-forwarded-proto': 'https' }), {}, trusted)).toBe('https://club.example');
  });

  test('publicUrl wins over every header', () => {
    expect(publicOriginOf(req('127.0.0.1', forwarded), { publicUrl: 'https://shop.example' }, trusted)).toBe('https://shop.example');
    expect(publicOriginOf(req('10.9.9.9', { host: 'evil.example' }), { publicUrl: 'https://shop.example' }, trusted)).toBe('https://shop.example');
  });
});

describe('allowedHostsOf with publicUrl', () => {
  test("adds publicUrl's host", () => {
    const allows = hostChecker(allowedHostsOf({ publicUrl: 'https://club.example:8443' }, '0.0.0.0'));
    expect(allows('club.example:8443')).toBe(true);
    expect(allows('club.example')).toBe(true);
    expect(allows('other.example')).toBe(false);
  });
});
