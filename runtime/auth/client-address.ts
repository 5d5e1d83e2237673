/**
 * @module The address a request comes from, for what is counted per address: failed sign-ins
 * (`rate-limit.ts`) and real-time sockets (`realtime.maxConnectionsPerAddress`). By default the TCP
 * peer. Behind a load balancer every client would share the balancer's address (one client's ten
 * failed sign-ins would lock an account for everyone), so svc.json `trustedProxies` names the
 * balancers (addresses or CIDR ranges): when the peer is one of them, the address is taken from
 * `X-Forwarded-For`, read from the right, skipping the trusted hops; the first other address is the
 * client's. A header that is missing or holds something other than an address leaves the last
 * trusted hop as the address, so a client can never choose its own address by sending the header
 * itself (its value is to the left of what the trusted proxy appended). docs/deploy.md.
 */
import { BlockList, isIP } from 'node:net';
import { parseProxyEntry } from '../contract/settings.js';

/** What the address is read from: a node `IncomingMessage` (HTTP request or WebSocket upgrade) has both. */
export interface AddressedRequest {
  socket: { remoteAddress?: string };
  headers: Record<string, string | string[] | undefined>;
}

/** Gives the client address of a request (IPv4-mapped IPv6 addresses as plain IPv4), or undefined when the socket has none. */
export type ClientAddress = (req: AddressedRequest) => string | undefined;

/** `::ffff:10.0.0.1` → `10.0.0.1`; other addresses as they are. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The resolver of client addresses for `trustedProxies` (svc.json; none: the TCP peer always).
 * @throws Error naming an entry that is not an address or CIDR range (the generator refuses these first)
 */
export function clientAddressOf(trustedProxies: readonly string[] = []): ClientAddress {
  if (trustedProxies.length === 0) return (req) => (req.socket.remoteAddress === undefined ? undefined : plain(req.socket.remoteAddress));
  const isTrusted = trustedAddresses(trustedProxies);
  return (req) => {
    const peer = req.socket.remoteAddress === undefined ? undefined : plain(req.socket.remoteAddress);
    if (peer === undefined || !isTrusted(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
    let address = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i].trim());
      if (isIP(hop) === 0) break; // empty or not an address: the last trusted hop stands
      address = hop;
      if (!isTrusted(hop)) break;
    }
    return address;
  };
}

/** The test of an address against `trustedProxies` (already plain: no `::ffff:` prefix). */
function trustedAddresses(trustedProxies: readonly string[]): (address: string) => boolean {
  const trusted = new BlockList();
  for (const entry of trustedProxies) {
    const parsed = parseProxyEntry(entry, isIP);
    if (!parsed) throw new Error(`trustedProxies: ${JSON.stringify(entry)} is not an IP address or a CIDR range`);
    trusted.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return (address) => trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** Whether a request came straight from one of the trusted proxies (what a client may not claim by a header). */
export type TrustedPeer = (req: AddressedRequest) => boolean;

/**
 * The test "the TCP peer is one of svc.json `trustedProxies`", for what only a proxy may set on a
 * request, such as `x-request-id` (`requestIdOf`, logs/request-log.ts). Without `trustedProxies`
 * no peer is trusted.
 * @throws Error naming an entry that is not an address or CIDR range (as `clientAddressOf`)
 */
export function trustedPeerOf(trustedProxies: readonly string[] = []): TrustedPeer {
  if (trustedProxies.length === 0) return () => false;
  const isTrusted = trustedAddresses(trustedProxies);
  return (req) => req.socket.remoteAddress !== undefined && isTrusted(plain(req.socket.remoteAddress));
}
