/**
 * @module Checks of svc.json `auth.providers` beyond its JSON Schema (DESIGN §11): names that would
 * shadow a page under `/login` or an `_auth` authority are refused, the client secret must be a
 * `${secrets.NAME}` / `${env.NAME}` reference (svc.json is committed), and URLs (`issuer`, `baseUrl`,
 * `apiUrl`) must be https (http only on a loopback host) unless they are references resolved at start.
 */
import type { RawApp } from '../load/load-app.js';
import type { RawSvcDefinition } from '../model/definitions.js';
import { pointer, type Diagnostic } from './diagnostics.js';

/** Names a provider may not take: the account pages under `/login` and the built-in `_auth` authorities. */
const RESERVED = ['signup', 'forgot', 'reset', 'verify', 'password', 'serviceaccount', 'callback'];
const REF = /^\$\{(secrets|env)\.[A-Za-z_][A-Za-z0-9_]*\}$/;
const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];

function urlProblem(value: string): string | null {
  if (REF.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.includes(url.hostname))) return null;
  return 'must be an https:// URL (http:// only on a loopback host such as 127.0.0.1) or a ${env.NAME} reference';
}

/**
 * @returns diagnostics with codes `DEF_RESERVED_NAME`, `DEF_SECRET_IN_CLEAR`, `DEF_PROVIDER_URL`
 * Source: DESIGN §11.
 */
export function checkProviders(raw: RawApp): Diagnostic[] {
  const providers = (raw.svc?.data as Partial<RawSvcDefinition> | undefined)?.auth?.providers;
  if (typeof providers !== 'object' || providers === null) return [];
  const out: Diagnostic[] = [];
  for (const [name, p] of Object.entries(providers)) {
    if (typeof p !== 'object' || p === null) continue;
    if (RESERVED.includes(name))
      out.push({
        code: 'DEF_RESERVED_NAME',
        file: 'svc.json',
        path: pointer('auth', 'providers', name),
        message: `"${name}" cannot name a provider: it is taken by /login/${name} or the _auth authority "${name}"; choose another name`,
      });
    if (typeof p.clientSecret === 'string' && !REF.test(p.clientSecret))
      out.push({
        code: 'DEF_SECRET_IN_CLEAR',
        file: 'svc.json',
        path: pointer('auth', 'providers', name, 'clientSecret'),
        message: `clientSecret must be a reference such as "\${secrets.${name.toUpperCase().replace(/-/g, '_')}}" (read from SVC_SECRET_${name.toUpperCase().replace(/-/g, '_')} at start), not the secret itself: svc.json is committed`,
      });
    for (const key of ['issuer', 'baseUrl', 'apiUrl'] as const) {
      const value = (p as unknown as Record<string, unknown>)[key];
      const problem = typeof value === 'string' ? urlProblem(value) : null;
      if (problem) out.push({ code: 'DEF_PROVIDER_URL', file: 'svc.json', path: pointer('auth', 'providers', name, key), message: `${key} ${problem}` });
    }
  }
  return out;
}
