/**
 * @module Model checks across definition files (DESIGN §3, §4; SPEC §2, §5.7): file names match definition
 * names, names are unique, lookups and view/query bases name collections, system names and `_CREATOR` in
 * LISTEN are refused, functions have `/<name>` endpoints, scalar inputs and a code file, and the database
 * URL has a supported provider. Every problem is reported; none stops the others. Per-file checks run only
 * on schema-valid files (their data has the shape the checks read); names of invalid files still count
 * for uniqueness and references, so one broken file does not cascade into errors elsewhere.
 */
import { checkSchedule } from './check-schedule.js';
import { checkTriggers } from './check-triggers.js';
import type { RawApp } from '../load/load-app.js';
import type {
  RawAccessRule,
  RawCollectionDefinition,
  RawExternalDefinition,
  RawFunctionDefinition,
  RawQueryDefinition,
  RawSvcDefinition,
  RawViewDefinition,
} from '../model/definitions.js';
import { databaseProvider, resolveDatabaseUrl } from '../model/normalise.js';
import { checkProperty } from './check-properties.js';
import { checkQuery } from './check-queries.js';
import { checkProviders } from './check-providers.js';
import { RESERVED_COLLECTION_NAMES } from '../emit/system-models.js';
import { pointer, type Diagnostic } from './diagnostics.js';
import { buildModelIndex, collectionRefProblem, type ModelIndex } from './model-index.js';
import {
  behaviourOf,
  FUNCTION_INPUT_TYPES,
  corsCredentialsProblem,
  parseAllowedHost,
  parseCorsOrigin,
  parseProxyEntry,
  parsePublicUrl,
} from '../../runtime/contract/index.js';
import { isIP } from 'node:net';

/** Types a function may take as input (SPEC §2 "Function definition"): property types with a `functionInput`. */
export const SCALAR_INPUT_TYPES: readonly string[] = FUNCTION_INPUT_TYPES;

const FOLDER_OF = { collection: 'collections', view: 'views', query: 'queries', function: 'functions', external: 'external' };

/**
 * Runs every cross-file check.
 * @param invalidFiles - files that failed their JSON Schema: skipped by per-file checks
 * @returns diagnostics (codes: `DEF_FILE_NAME_MISMATCH`, `DEF_DUPLICATE_NAME`, `DEF_RESERVED_NAME`, `DEF_UNKNOWN_COLLECTION`,
 *   `DEF_NOT_A_COLLECTION`, `DEF_CREATOR_IN_LISTEN`, `DEF_ENDPOINT_MISMATCH`, `DEF_INPUT_TYPE_NOT_SCALAR`, `DEF_ENUM_TYPE_MISMATCH`,
 *   `DEF_MISSING_FUNCTION_CODE`, `DEF_SEARCH_WITHOUT_TEXT`, `DEF_UNSUPPORTED_DATABASE_URL`, `DEF_SECRET_IN_CLEAR`,
 *   `DEF_CREATOR_ON_EXTERNAL`, `DEF_EXTERNAL_URL`, `DEF_PROVIDER_URL`, `DEF_TRUSTED_PROXY`, `DEF_ALLOWED_HOST`, `DEF_CORS_ORIGIN`,
 *   `DEF_CORS_CREDENTIALS`, and those of `checkTriggers`/`checkProperty`/`checkQuery`/`checkProviders`)
 * Source: DESIGN §3, §4 "Function details"; SPEC §2, §5.7.
 */
export function crossCheck(raw: RawApp, env: NodeJS.ProcessEnv, invalidFiles: Set<string>): Diagnostic[] {
  const index = buildModelIndex(raw, invalidFiles);
  const out: Diagnostic[] = [
    ...checkNames(index),
    ...checkDatabase(raw, env),
    ...checkMail(raw),
    ...checkProviders(raw),
    ...checkTrustedProxies(raw),
    ...checkAllowedHosts(raw),
    ...checkCors(raw),
    ...checkPublicUrl(raw),
    ...checkTriggers(raw, index, invalidFiles),
  ];
  for (const d of index.all) {
    if (!d.isValid) continue;
    switch (d.kind) {
      case 'collection':
        out.push(...checkCollection(index, d.file, d.data as RawCollectionDefinition));
        break;
      case 'view':
        out.push(...checkView(index, d.file, d.data as RawViewDefinition));
        break;
      case 'query': {
        const q = d.data as RawQueryDefinition;
        out.push(...checkQuery(index, d.file, q), ...checkListen(d.file, q.access));
        break;
      }
      case 'function': {
        const codeFile = raw.functions.find((f) => f.file === d.file)?.codeFile ?? null;
        out.push(...checkFunction(d.file, d.data as RawFunctionDefinition, codeFile));
        break;
      }
      case 'external':
        out.push(...checkExternal(d.file, d.data as RawExternalDefinition));
        break;
    }
  }
  return out;
}

function checkNames(index: ModelIndex): Diagnostic[] {
  const out: Diagnostic[] = [];
  const first = new Map<string, { name: string; file: string }>();
  for (const d of index.all) {
    const base = d.file.slice(FOLDER_OF[d.kind].length + 1, -'.json'.length);
    if (base !== d.name) {
      out.push({
        code: 'DEF_FILE_NAME_MISMATCH',
        file: d.file,
        path: '/name',
        message: `name "${d.name}" must match the file name: rename the file to ${FOLDER_OF[d.kind]}/${d.name}.json or the name to "${base}"`,
      });
    }
    const reserved = RESERVED_COLLECTION_NAMES.find((r) => r.toLowerCase() === d.name.toLowerCase());
    if (d.kind === 'collection' && reserved) {
      out.push({
        code: 'DEF_RESERVED_NAME',
        file: d.file,
        path: '/name',
        message: `name "${d.name}" is reserved for the system model ${reserved} (users, service accounts, tokens, keys and the client log); choose another name`,
      });
    }
    // Case-insensitive: table names clash on SQLite and on case-insensitive file systems.
    const key = d.name.toLowerCase();
    const prev = first.get(key);
    if (!prev) {
      first.set(key, { name: d.name, file: d.file });
    } else {
      out.push({
        code: 'DEF_DUPLICATE_NAME',
        file: d.file,
        path: '/name',
        message:
          prev.name === d.name
            ? `name "${d.name}" is already used by ${prev.file}`
            : `name "${d.name}" differs only in letter case from "${prev.name}" in ${prev.file}`,
      });
    }
  }
  return out;
}

function checkDatabase(raw: RawApp, env: NodeJS.ProcessEnv): Diagnostic[] {
  const svc = raw.svc?.data as Partial<RawSvcDefinition> | undefined;
  const name = typeof svc?.name === 'string' ? svc.name : 'app';
  const database = typeof svc?.database === 'string' ? svc.database : undefined;
  const { url, source } = resolveDatabaseUrl({ name, database }, env);
  if (databaseProvider(url)) return [];
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0]; // never echo the URL: it may carry a password
  const what = source === 'DATABASE_URL' ? 'environment variable DATABASE_URL' : 'database';
  return [
    {
      code: 'DEF_UNSUPPORTED_DATABASE_URL',
      file: 'svc.json',
      path: source === 'svc.json' ? '/database' : '',
      message: `${what} must start with file: (SQLite), postgres:// or postgresql:// (PostgreSQL)${scheme ? `; got "${scheme}"` : ''}`,
    },
  ];
}

/** `mail.smtp.url` with a password written out (`smtp://user:pass@host`) instead of a `${secrets.NAME}` reference. */
function checkMail(raw: RawApp): Diagnostic[] {
  const url = (raw.svc?.data as Partial<RawSvcDefinition> | undefined)?.mail?.smtp?.url;
  if (typeof url !== 'string' || !/^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(url) || /\$\{(secrets|env)\./.test(url)) return [];
  return [
    {
      code: 'DEF_SECRET_IN_CLEAR',
      file: 'svc.json',
      path: '/mail/smtp/url',
      message: 'mail.smtp.url carries a password: write "${secrets.SMTP_URL}" (read from SVC_SECRET_SMTP_URL at start) instead: svc.json is committed',
    },
  ];
}

/** Each `trustedProxies` entry must be an IP address or a CIDR range (`DEF_TRUSTED_PROXY`). */
function checkTrustedProxies(raw: RawApp): Diagnostic[] {
  const entries = (raw.svc?.data as Partial<RawSvcDefinition> | undefined)?.trustedProxies;
  if (!Array.isArray(entries)) return [];
  return entries.flatMap((entry, i) =>
    typeof entry === 'string' && entry !== '' && parseProxyEntry(entry, isIP) === null // '' is the schema's
      ? [
          {
            code: 'DEF_TRUSTED_PROXY',
            file: 'svc.json',
            path: pointer('trustedProxies', i),
            message: `${JSON.stringify(entry)} is not an IP address or a CIDR range such as "10.0.0.0/8" or "fd00::/8"`,
          },
        ]
      : [],
  );
}

/** Each `allowedHosts` entry must be a host name, or a domain with a leading dot (`DEF_ALLOWED_HOST`). */
function checkAllowedHosts(raw: RawApp): Diagnostic[] {
  const entries = (raw.svc?.data as Partial<RawSvcDefinition> | undefined)?.allowedHosts;
  if (!Array.isArray(entries)) return [];
  return entries.flatMap((entry, i) =>
    typeof entry === 'string' && entry !== '' && parseAllowedHost(entry) === null // '' is the schema's
      ? [
          {
            code: 'DEF_ALLOWED_HOST',
            file: 'svc.json',
            path: pointer('allowedHosts', i),
            message: `${JSON.stringify(entry)} is not a host name: write "app.example.com", or ".example.com" for a domain and its subdomains (no scheme, port or path)`,
          },
        ]
      : [],
  );
}

/**
 * `cors.origins` entries must be exact origins `scheme://host[:port]`, or `"*"` (`DEF_CORS_ORIGIN`);
 * `credentials: true` takes no `"*"` and needs an https `publicUrl` (`DEF_CORS_CREDENTIALS`).
 */
function checkCors(raw: RawApp): Diagnostic[] {
  const svc = raw.svc?.data as Partial<RawSvcDefinition> | undefined;
  const cors = svc?.cors;
  if (typeof cors !== 'object' || cors === null || !Array.isArray(cors.origins)) return [];
  const credentials = cors.credentials === true;
  const out: Diagnostic[] = [];
  cors.origins.forEach((entry, i) => {
    if (typeof entry !== 'string' || entry === '') return; // the schema's
    const origin = parseCorsOrigin(entry);
    if (origin === null) {
      out.push({
        code: 'DEF_CORS_ORIGIN',
        file: 'svc.json',
        path: pointer('cors', 'origins', i),
        message: `${JSON.stringify(entry)} is not an origin: write scheme, host and port only, as a browser sends it in Origin ("https://app.example.com", "http://localhost:5173"; no path, no trailing slash, no wildcard), or "*" alone for any origin`,
      });
    } else if (origin === '*' && credentials) {
      out.push({
        code: 'DEF_CORS_CREDENTIALS',
        file: 'svc.json',
        path: pointer('cors', 'origins', i),
        message: '"*" cannot be used with cors.credentials: true (any site could act with the signed-in user\'s cookies): list the exact origins',
      });
    }
  });
  const problem = corsCredentialsProblem({
    cors: { origins: [], maxAgeSeconds: 0, credentials },
    publicUrl: typeof svc?.publicUrl === 'string' ? svc.publicUrl : undefined,
  });
  if (problem) out.push({ code: 'DEF_CORS_CREDENTIALS', file: 'svc.json', path: pointer('cors', 'credentials'), message: problem });
  return out;
}

/** `publicUrl` must be an absolute http(s) origin without path, query or credentials (`DEF_PUBLIC_URL`). */
function checkPublicUrl(raw: RawApp): Diagnostic[] {
  const value = (raw.svc?.data as Partial<RawSvcDefinition> | undefined)?.publicUrl;
  if (typeof value !== 'string' || value === '' || parsePublicUrl(value) !== null) return []; // '' and other types are the schema's
  return [
    {
      code: 'DEF_PUBLIC_URL',
      file: 'svc.json',
      path: '/publicUrl',
      message: `${JSON.stringify(value)} is not a public origin: write the scheme and host the browser uses, such as "https://club.example" (http or https, optional port, no path, query or credentials)`,
    },
  ];
}

function checkListen(file: string, access: RawAccessRule[] | undefined): Diagnostic[] {
  const out: Diagnostic[] = [];
  (access ?? []).forEach((rule, i) => {
    if (rule.method !== 'LISTEN') return;
    rule.roleNames.forEach((role, j) => {
      if (role === '_CREATOR') {
        out.push({
          code: 'DEF_CREATOR_IN_LISTEN',
          file,
          path: pointer('access', i, 'roleNames', j),
          message: '_CREATOR may not be granted LISTEN: a subscription does not narrow to own rows and would deliver the whole collection stream',
        });
      }
    });
  });
  return out;
}

/** A value that is only a reference: `${secrets.NAME}` (from `SVC_SECRET_NAME`) or `${env.NAME}`. */
const SECRET_REF = /^\$\{(secrets|env)\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * An external collection (SPEC §4.10, DESIGN §3): secrets only as references (a definition file is
 * committed; a secret in it leaks), an http(s) provider URL, no `_CREATOR` (provider rows have no
 * creator), and no `_CREATOR` in LISTEN either.
 */
function checkExternal(file: string, e: RawExternalDefinition): Diagnostic[] {
  const out: Diagnostic[] = [...checkListen(file, e.access)];
  const secret = e.connection?.type === 'oauth2' ? 'clientSecret' : e.connection?.type === 'apiKey' ? 'value' : undefined;
  const value = secret && (e.connection as Record<string, string>)[secret];
  if (secret && value !== undefined && !SECRET_REF.test(value)) {
    out.push({
      code: 'DEF_SECRET_IN_CLEAR',
      file,
      path: pointer('connection', secret),
      message: `${secret} must be a reference such as "\${secrets.${e.name.toUpperCase()}}" (read from SVC_SECRET_${e.name.toUpperCase()} at start), not the secret itself: definition files are committed`,
    });
  }
  if (!/^https?:\/\//i.test(e.url)) {
    out.push({ code: 'DEF_EXTERNAL_URL', file, path: '/url', message: `url must be an http:// or https:// URL; got "${e.url.split(':')[0]}:"` });
  }
  (e.access ?? []).forEach((rule, i) => {
    rule.roleNames.forEach((role, j) => {
      if (role === '_CREATOR' && rule.method !== 'LISTEN') {
        out.push({
          code: 'DEF_CREATOR_ON_EXTERNAL',
          file,
          path: pointer('access', i, 'roleNames', j),
          message: "_CREATOR cannot be granted on an external collection: the provider's rows have no creator",
        });
      }
    });
  });
  return out;
}

function checkCollection(index: ModelIndex, file: string, c: RawCollectionDefinition): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, p] of Object.entries(c.properties)) {
    out.push(...checkProperty(file, name, p));
    if (p.type === 'lookup' && p.collection !== undefined) {
      const problem = collectionRefProblem(index, 'lookup target', p.collection);
      if (problem) out.push({ ...problem, file, path: pointer('properties', name, 'collection') });
    }
  }
  if (c.search === true && !Object.values(c.properties).some((p) => behaviourOf(p.type)?.text)) {
    out.push({ code: 'DEF_SEARCH_WITHOUT_TEXT', file, path: '/search', message: 'search needs at least one string or text property to search in' });
  }
  return [...out, ...checkListen(file, c.access)];
}

function checkView(index: ModelIndex, file: string, v: RawViewDefinition): Diagnostic[] {
  const problem = collectionRefProblem(index, 'base collection', v.collection);
  return [...(problem ? [{ ...problem, file, path: '/collection' }] : []), ...checkListen(file, v.access)];
}

/** Whether an enum value has the JSON type of an input field type (the type's `functionInput.fits`). */
function fitsInputType(type: string, value: unknown): boolean {
  return behaviourOf(type)?.functionInput?.fits(value) ?? typeof value === 'string';
}

function checkFunction(file: string, f: RawFunctionDefinition, codeFile: string | null): Diagnostic[] {
  const out: Diagnostic[] = [];
  if (f.endpoint !== `/${f.name}`) {
    out.push({
      code: 'DEF_ENDPOINT_MISMATCH',
      file,
      path: '/endpoint',
      message: `endpoint must be "/${f.name}" (the function is served at /api/${f.name}); got "${f.endpoint}"`,
    });
  }
  for (const key of ['queryParams', 'requestBody'] as const) {
    (f[key] ?? []).forEach((field, i) => {
      if (!SCALAR_INPUT_TYPES.includes(field.type)) {
        out.push({
          code: 'DEF_INPUT_TYPE_NOT_SCALAR',
          file,
          path: pointer(key, i, 'type'),
          message: `${key} field "${field.name}" has type "${field.type}"; inputs must be scalar (${SCALAR_INPUT_TYPES.join(', ')})`,
        });
      } else if (field.spec?.enum?.some((v) => !fitsInputType(field.type, v))) {
        out.push({
          code: 'DEF_ENUM_TYPE_MISMATCH',
          file,
          path: pointer(key, i, 'spec', 'enum'),
          message: `${key} field "${field.name}": every enum value must be of type ${field.type}`,
        });
      }
      if ((f[key] ?? []).findIndex((other) => other.name === field.name) < i) {
        out.push({ code: 'DEF_DUPLICATE_NAME', file, path: pointer(key, i, 'name'), message: `${key} declares "${field.name}" twice` });
      }
    });
  }
  if (codeFile === null) {
    const base = file.slice('functions/'.length, -'.json'.length);
    out.push({
      code: 'DEF_MISSING_FUNCTION_CODE',
      file,
      path: '',
      message: `no code file for this function: add functions/${base}.ts (or .tsx, .js, .mjs, .cjs)`,
    });
  }
  out.push(...checkSchedule(file, f));
  return out;
}
