/**
 * @module Route templates of the requests the Express application serves (docs/operations.md
 * "Metrics and traces"): a fixed set of system endpoints and the manifest's function names, anything
 * else one `{unknown}` value, so a client sending random paths never makes a new label value.
 */
import type { Metrics, RouteSeries } from './metrics.js';

/** The system endpoints under `/api/` (first segment); deeper paths are `/api/_x/*`. */
const SYSTEM = [
  '_auth',
  '_token',
  '_refresh',
  '_logout',
  '_me',
  '_log',
  '_openapi',
  '_admin',
  '_agent',
  '_health',
  '_ready',
  '_metrics',
  '_webAppConfig',
  '_signup',
  '_verify',
  '_password',
  '_account',
  '_providers',
  '_rt',
  '_blobs',
  '_listen',
];

/**
 * A resolver from a request (its `url` as received) to its route series.
 * @param functions - the manifest's function names (served at `/api/<name>` and `/api/_invoke/<name>`)
 */
export function expressRoutes(metrics: Metrics, functions: readonly string[]): (url: string) => RouteSeries {
  const known = new Map<string, RouteSeries>();
  for (const s of SYSTEM) {
    known.set(s, metrics.route(`/api/${s}`));
    known.set(`${s}/`, metrics.route(`/api/${s}/*`));
  }
  for (const f of functions) {
    known.set(f, metrics.route(`/api/${f}`));
    known.set(`_invoke/${f}`, metrics.route(`/api/_invoke/${f}`));
  }
  const unknown = metrics.route('/api/{unknown}');
  const consoleRoute = metrics.route('/_/*');
  const login = metrics.route('/login');
  const other = metrics.route('/{static}');
  return (url) => {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (!path.startsWith('/api/')) return path === '/_' || path.startsWith('/_/') ? consoleRoute : path.startsWith('/login') ? login : other;
    const rest = path.slice(5);
    const slash = rest.indexOf('/');
    if (slash < 0) return known.get(rest) ?? unknown;
    const first = rest.slice(0, slash);
    if (first === '_invoke') return known.get(rest) ?? unknown;
    return known.get(`${first}/`) ?? unknown;
  };
}
