/**
 * The client address of a request (runtime/auth/client-address.ts; svc.json `trustedProxies`): the TCP
 * peer unless the peer is a trusted proxy; then `X-Forwarded-For` read from the right, skipping trusted
 * hops, stopping at anything that is not an address.
 */
import { describe, expect, it } from 'vitest';
import { isIP } from 'node:net';
import { clientAddressOf, type AddressedRequest } from '../../../dist/runtime/auth/client-address.js';
import { parseProxyEntry } from '../../../dist/runtime/contract/settings.js';

/** What the resolver reads of a request: its peer and its headers (node joins repeated X-Forwarded-For lines with ", "). */
const request = (peer: string | undefined, forwardedFor?: string | string[]) =>
  ({ socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor } }) as AddressedRequest;

describe('clientAddressOf', () => {
  it('without trusted proxies, is the peer whatever the header says (IPv4-mapped IPv6 as IPv4)', () => {
    const of = clientAddressOf();
    expect(of(request('::ffff:127.0.0.1', '203.0.113.1'))).toBe('127.0.0.1');
    expect(of(request('2001:db8::1', '203.0.113.1'))).toBe('2001:db8::1');
    expect(of(request(undefined))).toBeUndefined();
  });

  it('behind a trusted proxy, is the rightmost hop that is not trusted', () => {
    const of = clientAddressOf(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
    expect(of(request('127.0.0.1', '203.0.113.1'))).toBe('203.0.113.1');
    expect(of(request('::ffff:10.1.2.3', '198.51.100.1, 203.0.113.1, 10.9.9.9'))).toBe('203.0.113.1');
    expect(of(request('fd00::5', ['198.51.100.1', '203.0.113.2']))).toBe('203.0.113.2');
    expect(of(request('127.0.0.1', ' 2001:db8::7 '))).toBe('2001:db8::7');
    // Every hop trusted: the leftmost one.
    expect(of(request('127.0.0.1', '10.0.0.1, 10.0.0.2'))).toBe('10.0.0.1');
  });

  it('never lets a client pick its address: a peer that is not trusted, a missing or broken header', () => {
    const of = clientAddressOf(['127.0.0.1']);
    expect(of(request('203.0.113.9', '127.0.0.1'))).toBe('203.0.113.9');
    expect(of(request('127.0.0.1'))).toBe('127.0.0.1');
    expect(of(request('127.0.0.1', ''))).toBe('127.0.0.1');
    expect(of(request('127.0.0.1', 'unknown'))).toBe('127.0.0.1');
    expect(of(request('127.0.0.1', '203.0.113.1, garbage'))).toBe('127.0.0.1');
    expect(of(request('127.0.0.1', '203.0.113.1, ,'))).toBe('127.0.0.1');
    expect(of(request('127.0.0.1', 'x'.repeat(10_000)))).toBe('127.0.0.1');
  });

  it('refuses an entry that is not an address or a range', () => {
    expect(() => clientAddressOf(['proxy.local'])).toThrow(/"proxy.local" is not an IP address or a CIDR range/);
  });
});

describe('parseProxyEntry', () => {
  it('reads addresses and CIDR ranges of both families, and nothing else', () => {
    expect(parseProxyEntry('10.0.0.0/8', isIP)).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseProxyEntry('127.0.0.1', isIP)).toEqual({ address: '127.0.0.1', prefix: 32, family: 'ipv4' });
    expect(parseProxyEntry('fd00::/8', isIP)).toEqual({ address: 'fd00::', prefix: 8, family: 'ipv6' });
    expect(parseProxyEntry('::1', isIP)).toEqual({ address: '::1', prefix: 128, family: 'ipv6' });
    for (const bad of ['', 'proxy', '10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/-1', '10.0.0.0/8/8', '10.0.0.0/1e1', '300.0.0.1'])
      expect(parseProxyEntry(bad, isIP), bad).toBeNull();
  });
});
