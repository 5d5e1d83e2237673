/**
 * The Host check's rules (issue 30 item 11) without a server: what `allowedHostsOf` builds from the
 * settings and the bound address, what `hostChecker` answers for `Host` values (ports, IPv6 brackets,
 * letter case, a trailing dot), and the start-up warning. The e2e file `test/e2e/host-check.test.ts`
 * covers the same over HTTP and WebSocket upgrades.
 */
import { describe, expect, it } from 'vitest';
import { allowedHostsOf, allowedHostsWarning, hostChecker } from '../../../dist/runtime/http/host-check.js';

describe('the Host check', () => {
  it('allows localhost, *.localhost, IP addresses and the bound name by default, nothing else', () => {
    const allows = hostChecker(allowedHostsOf({}, 'box.lan'));
    for (const host of ['localhost', 'localhost:3000', 'LocalHost.', 'a.b.localhost:1', '127.0.0.1:80', '[::1]:3000', '192.168.1.9', 'box.lan:8080', undefined])
      expect(allows(host), String(host)).toBe(true);
    for (const host of ['rebind.attacker.example', 'localhost.attacker.example', 'box.lan.attacker.example', '[::1', 'xlocalhost', ''])
      expect(allows(host), host).toBe(false);
    expect(hostChecker(allowedHostsOf({}, '0.0.0.0'))('0.0.0.0.attacker.example')).toBe(false);
  });

  it('adds allowedHosts names and dotted domains; true and "all" allow any Host', () => {
    const allows = hostChecker(allowedHostsOf({ allowedHosts: ['App.Example.com', '.example.org', 'https://bad.example'] }, '127.0.0.1'));
    for (const host of ['app.example.com', 'APP.EXAMPLE.COM:443', 'example.org', 'x.y.example.org']) expect(allows(host), host).toBe(true);
    for (const host of ['example.com', 'www.app.example.com', 'notexample.org', 'bad.example']) expect(allows(host), host).toBe(false);
    for (const allowedHosts of [true, 'all'] as const) expect(hostChecker(allowedHostsOf({ allowedHosts }, '127.0.0.1'))('anything.example')).toBe(true);
  });

  it('answers the same for a Host value after the cache starts over', () => {
    const allows = hostChecker(allowedHostsOf({}, '127.0.0.1'));
    for (let i = 0; i < 2500; i++) expect(allows(`h${i}.attacker.example`)).toBe(false);
    expect(allows('localhost')).toBe(true);
    expect(allows('h1.attacker.example')).toBe(false);
  });

  it('warns, in one line naming allowedHosts, only when bound beyond loopback without it', () => {
    expect(allowedHostsWarning({}, '0.0.0.0')).toMatch(/^listening on 0\.0\.0\.0 without svc\.json "allowedHosts": [^\n]+$/);
    expect(allowedHostsWarning({}, '::')).toContain('allowedHosts');
    expect(allowedHostsWarning({}, '10.0.0.5')).toContain('allowedHosts');
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) expect(allowedHostsWarning({}, host), host).toBeUndefined();
    expect(allowedHostsWarning({ allowedHosts: ['app.example.com'] }, '0.0.0.0')).toBeUndefined();
  });
});
