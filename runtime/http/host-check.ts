/**
 * @module The `Host` check (a guard against DNS rebinding, issue 30 item 11): a page on
 * `rebind.attacker.example` whose name is made to resolve to 127.0.0.1 reaches a local `svc dev` as
 * the same origin, so it could sign in and call the API with the cookie. Every HTTP request and
 * WebSocket upgrade whose `Host` names none of the allowed hosts is answered 421 Misdirected Request
 * with the DESIGN §4 body (`HOST_NOT_ALLOWED`). Allowed, as Vite's `server.allowedHosts`:
 * `localhost` and `*.localhost`, any IP address (an attacker's page cannot make a browser send an IP
 * address as the `Host` of its own origin, so rebinding needs a name; load balancers' and
 * orchestrators' health checks use the address), the address the server is bound to, and the names of
 * svc.json `allowedHosts` (`.example.com`: the domain and its subdomains; `true` or `"all"`: any Host).
 * A request without `Host` (HTTP/1.0, not a browser) passes. The answer for each distinct `Host` value
 * is cached, so the check costs one map lookup per request.
 */
import { isIP } from 'node:net';
import type { ServerResponse } from 'node:http';
import { parseAllowedHost, type AppSettings } from '../contract/settings.js';
import { HttpError, toErrorBody } from '../errors.js';

/** The hosts a server answers for, as `allowedHostsOf` builds them. */
export interface HostAllowList {
  /** `allowedHosts: true` or `"all"`: any Host. */
  any: boolean;
  /** Host names allowed as they are (lower case, no port). */
  names: ReadonlySet<string>;
  /** Domains allowed with their subdomains, each with its leading dot (`.example.com`). */
  domains: readonly string[];
}

/**
 * The hosts a server answers for, built from the settings in one place: svc.json `allowedHosts` and
 * the address the server is bound to (a name or a specific address; `0.0.0.0` and `::` add nothing).
 * and the host of svc.json `publicUrl` (the app's public origin, issue 32 §1).
 * @param settings - the manifest's settings (svc.json `allowedHosts`, `publicUrl`)
 * @param boundHost - the `host` the server listens on (`HOST`, `--host`; default 127.0.0.1)
 * Source: issue 30 item 11; docs/deploy.md "Allowed hosts".
 */
export function allowedHostsOf(settings: Pick<AppSettings, 'allowedHosts' | 'publicUrl'>, boundHost: string | undefined): HostAllowList {
  const setting = settings.allowedHosts;
  const names = new Set<string>();
  const domains: string[] = [];
  if (Array.isArray(setting))
    for (const entry of setting) {
      const parsed = parseAllowedHost(entry);
      if (parsed === null) continue; // the generator refuses it (DEF_ALLOWED_HOST)
      if (parsed.startsWith('.')) domains.push(parsed);
      else names.add(parsed);
    }
  if (settings.publicUrl && URL.canParse(settings.publicUrl)) names.add(hostnameOf(new URL(settings.publicUrl).host));
  const bound = boundHost?.trim().toLowerCase();
  if (bound && !isWildcardAddress(bound)) names.add(bound);
  return { any: setting === true || setting === 'all', names, domains };
}

/** Whether `host` listens on every interface (`0.0.0.0`, `::`). */
export function isWildcardAddress(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** Whether `host` (an address or name a server binds to) is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The start-up warning of a server bound beyond loopback without svc.json `allowedHosts`, one line;
 * undefined when there is nothing to say.
 */
export function allowedHostsWarning(settings: Pick<AppSettings, 'allowedHosts' | 'publicUrl'>, boundHost: string): string | undefined {
  if (settings.allowedHosts !== undefined || settings.publicUrl !== undefined || isLoopbackHost(boundHost)) return undefined;
  return (
    `listening on ${boundHost} without svc.json "allowedHosts": requests whose Host is a name other than localhost are refused (421 HOST_NOT_ALLOWED); ` +
    `set "allowedHosts": ["app.example.com"] (or ".example.com" for a domain and its subdomains) to the names clients use`
  );
}

/** The name part of a `Host` header value (no port, no IPv6 brackets, no trailing dot), lower case. */
function hostnameOf(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end > 0 ? h.slice(1, end) : h;
  } else {
    const colon = h.indexOf(':');
    if (colon >= 0 && colon === h.lastIndexOf(':')) h = h.slice(0, colon);
  }
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

function isAllowed(list: HostAllowList, host: string): boolean {
  if (list.any) return true;
  const name = hostnameOf(host);
  if (name === 'localhost' || name.endsWith('.localhost') || isIP(name) !== 0) return true;
  if (list.names.has(name)) return true;
  return list.domains.some((d) => name.endsWith(d) || name === d.slice(1));
}

/** Distinct `Host` values remembered; past this the cache starts over (a client sending many values gains nothing). */
const CACHE_ENTRIES = 1000;

/**
 * A check of `Host` header values against `list`, cached per value.
 * @returns a function answering whether a request with this `Host` (undefined: none sent) is served
 */
export function hostChecker(list: HostAllowList): (host: string | undefined) => boolean {
  if (list.any) return () => true;
  const cache = new Map<string, boolean>();
  return (host) => {
    if (host === undefined) return true;
    let ok = cache.get(host);
    if (ok === undefined) {
      ok = isAllowed(list, host);
      if (cache.size >= CACHE_ENTRIES) cache.clear();
      cache.set(host, ok);
    }
    return ok;
  };
}

/** The 421 error of a refused `Host`, naming the setting to change. */
export function hostNotAllowed(host: string): HttpError {
  const name = hostnameOf(host).slice(0, 253);
  return new HttpError(
    'HOST_NOT_ALLOWED',
    `this server does not answer for the host ${JSON.stringify(name)}: add it to svc.json "allowedHosts" (docs/deploy.md "Allowed hosts")`,
  );
}

/** Answers a refused HTTP request: 421 with the DESIGN §4 body. */
export function refuseHost(res: ServerResponse, host: string): void {
  const { status, body } = toErrorBody(hostNotAllowed(host));
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), connection: 'close' });
  res.end(text);
}
