/**
 * @module Normalises a validated app (`RawApp`) into the app model `AppManifest` (`.svc/manifest.json`):
 * every default filled (DESIGN §3), every list sorted by name in code-unit order, child relations derived
 * from lookups, and the database provider decided from the database URL. Pure and deterministic: the same
 * input gives a deep-equal output, with fixed key order.
 */
import type {
  AccessRule,
  AppManifest,
  AppSettings,
  ChildRelation,
  Collection,
  DatabaseProvider,
  ExternalCollection,
  FunctionDefinition,
  Policy,
  Property,
  PropertyType,
  Query,
  QueryField,
  Trigger,
  TypedField,
  View,
} from '../../runtime/index.js';
import type { RawApp, RawFile } from '../load/load-app.js';
import {
  AGENT_DEFAULTS,
  CORS_DEFAULTS,
  CREDITS_DEFAULTS,
  parseCorsOrigin,
  LOGS_DEFAULTS,
  SIGNUP_DEFAULTS,
  STORAGE_DEFAULTS,
  SYSTEM_FIELD_TYPES,
  parsePublicUrl,
} from '../../runtime/contract/index.js';
import { compiledPathOf } from '../compile/compile-functions.js';
import { DefinitionError } from '../validate/diagnostics.js';
import {
  splitQueryField,
  type RawAccessRule,
  type RawTriggerDefinition,
  type RawCollectionDefinition,
  type RawExternalDefinition,
  type RawFunctionDefinition,
  type RawPropertyDefinition,
  type RawQueryDefinition,
  type RawSvcDefinition,
  type RawViewDefinition,
} from './definitions.js';

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const FUNCTION_METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;

/** The provider of a database URL: `file:` → sqlite, `postgres://` / `postgresql://` → postgresql, else null. */
export function databaseProvider(url: string): DatabaseProvider | null {
  if (url.startsWith('file:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgresql';
  return null;
}

/** An environment variable, with an empty value treated as unset (as the runtime does). */
export function envValue(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const v = env[key];
  return v === undefined || v === '' ? undefined : v;
}

/**
 * The database URL of an app and where it came from: env `DATABASE_URL`, else svc.json `database`, else
 * `file:./data/<name>.db` (DESIGN §3).
 */
export function resolveDatabaseUrl(
  svc: { name: string; database?: string },
  env: NodeJS.ProcessEnv,
): { url: string; source: 'DATABASE_URL' | 'svc.json' | 'default' } {
  const fromEnv = envValue(env, 'DATABASE_URL');
  if (fromEnv !== undefined) return { url: fromEnv, source: 'DATABASE_URL' };
  if (svc.database !== undefined) return { url: svc.database, source: 'svc.json' };
  return { url: `file:./data/${svc.name}.db`, source: 'default' };
}

/** Copies the optional keys of `from` that are present, in the order of `keys`. */
function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (from[k] !== undefined) out[k] = structuredClone(from[k]);
  return out;
}

function dataOf<T>(files: RawFile[]): T[] {
  return files.map((f) => f.data as T).sort((a, b) => byCodeUnit((a as { name: string }).name, (b as { name: string }).name));
}

const accessRules = (rules: RawAccessRule[] | undefined): AccessRule[] => (rules ?? []).map((r) => ({ method: r.method, roleNames: [...r.roleNames] }));

/**
 * Settings as written in svc.json with defaults applied. Environment overrides (`DATABASE_URL`,
 * `REDIS_URL`) are applied by the runtime at start, never written here: they may carry passwords.
 */
function settingsOf(svc: RawSvcDefinition): AppSettings {
  return {
    database: svc.database ?? `file:./data/${svc.name}.db`,
    port: svc.port ?? 3000,
    console: svc.console ?? true,
    auth: {
      accessTokenTtlSeconds: svc.auth?.accessTokenTtlSeconds ?? 3600,
      refreshTokenTtlDays: svc.auth?.refreshTokenTtlDays ?? 70,
      secureCookies: svc.auth?.secureCookies ?? false,
      signup: { ...structuredClone(SIGNUP_DEFAULTS), ...structuredClone(svc.auth?.signup ?? {}) },
      providers: structuredClone(svc.auth?.providers ?? {}),
      linkByVerifiedEmail: svc.auth?.linkByVerifiedEmail ?? true,
    },
    realtime: structuredClone(svc.realtime ?? {}),
    functions: { allowFetch: svc.functions?.allowFetch ?? false, timeoutMs: svc.functions?.timeoutMs ?? 30000, maxMemoryMb: svc.functions?.maxMemoryMb ?? 256 },
    agent: { ...structuredClone(AGENT_DEFAULTS), ...structuredClone(svc.agent ?? {}) },
    credits: { ...CREDITS_DEFAULTS, ...structuredClone(svc.credits ?? {}) },
    storage: { ...structuredClone(STORAGE_DEFAULTS), ...structuredClone(svc.storage ?? {}) },
    mail: structuredClone(svc.mail ?? {}),
    logs: { ...LOGS_DEFAULTS, ...structuredClone(svc.logs ?? {}) },
    ...(svc.metrics !== undefined ? { metrics: structuredClone(svc.metrics) } : {}),
    ...(svc.trustedProxies !== undefined ? { trustedProxies: [...svc.trustedProxies] } : {}),
    ...(svc.allowedHosts !== undefined ? { allowedHosts: Array.isArray(svc.allowedHosts) ? [...svc.allowedHosts] : svc.allowedHosts } : {}),
    ...(svc.publicUrl !== undefined ? { publicUrl: parsePublicUrl(svc.publicUrl) ?? svc.publicUrl } : {}),
    ...(svc.public !== undefined ? { public: structuredClone(svc.public) } : {}),
    ...(svc.cors !== undefined
      ? { cors: { ...CORS_DEFAULTS, ...structuredClone(svc.cors), origins: svc.cors.origins.map((o) => parseCorsOrigin(o) ?? o) } }
      : {}),
    ...(svc.jobs !== undefined
      ? {
          jobs:
            svc.jobs === false
              ? { run: false, pollIntervalMs: 1000 }
              : {
                  run: true,
                  pollIntervalMs: svc.jobs.pollIntervalMs ?? 1000,
                  ...(svc.jobs.concurrency !== undefined && { concurrency: svc.jobs.concurrency }),
                },
        }
      : {}),
  };
}

function propertyOf(name: string, p: RawPropertyDefinition): Property {
  return {
    name,
    type: p.type,
    required: p.required ?? false,
    ...pick(p, ['default', 'description', 'maxLength', 'minLength', 'minimum', 'maximum', 'enum', 'collection']),
    ...(p.unique === true && { unique: true }),
  };
}

/** Child relations per target collection, from every lookup, sorted by key (SPEC §4.4). */
function childrenOf(collections: RawCollectionDefinition[]): Map<string, ChildRelation[]> {
  const children = new Map<string, ChildRelation[]>();
  for (const c of collections) {
    for (const [field, p] of Object.entries(c.properties)) {
      if (p.type !== 'lookup' || p.collection === undefined) continue;
      const list = children.get(p.collection) ?? [];
      list.push({ key: `${c.name}.${field}`, collection: c.name, field });
      children.set(p.collection, list);
    }
  }
  for (const list of children.values()) list.sort((a, b) => byCodeUnit(a.key, b.key));
  return children;
}

function collectionOf(c: RawCollectionDefinition, children: ChildRelation[]): Collection {
  return {
    name: c.name,
    ...pick(c, ['description']),
    properties: Object.entries(c.properties).map(([name, p]) => propertyOf(name, p)),
    search: c.search ?? false,
    access: accessRules(c.access),
    policies: (c.policies ?? []).map((p): Policy => ({ roleNames: [...p.roleNames], filter: p.filter })),
    children,
  };
}

function viewOf(v: RawViewDefinition): View {
  return {
    name: v.name,
    ...pick(v, ['description']),
    collection: v.collection,
    filter: v.filter,
    access: v.access === undefined ? null : accessRules(v.access),
  };
}

/** The property a dot path ends at, walked from collection `from` (validated before normalising). */
function propertyAt(collections: Collection[], from: string, path: string): Pick<Property, 'type' | 'collection'> {
  const segments = path.split('.');
  let current = collections.find((c) => c.name === from)!;
  for (let i = 0; ; i++) {
    const seg = segments[i];
    const p = current.properties.find((x) => x.name === seg);
    if (i === segments.length - 1)
      return p ? { type: p.type, ...pick(p, ['collection']) } : { type: SYSTEM_FIELD_TYPES[seg as keyof typeof SYSTEM_FIELD_TYPES] };
    current = collections.find((c) => c.name === p!.collection)!;
  }
}

function queryIdType(q: RawQueryDefinition, collections: Collection[]): Query['idType'] {
  if (!q.groupBy?.length) return 'guid';
  if (q.groupBy.length > 1) return 'string';
  const { type } = propertyAt(collections, q.from, q.groupBy[0]);
  return type === 'lookup' || type === 'guid' ? 'guid' : 'string';
}

function queryOf(q: RawQueryDefinition, collections: Collection[]): Query {
  const fields: Record<string, QueryField> = {};
  for (const [name, field] of Object.entries(q.fields)) {
    const { aggregate, path, child } = splitQueryField(field);
    // A child aggregate's path is walked from the child collection `of` (validated before normalising).
    const at = propertyAt(collections, child ? child.of : q.from, path);
    if (!aggregate) fields[name] = { path, type: at.type, ...pick(at, ['collection']) };
    else {
      const type: PropertyType = aggregate === 'count' ? 'integer' : aggregate === 'avg' ? 'decimal' : at.type === 'lookup' ? 'guid' : at.type;
      fields[name] = child ? { aggregate, path, type, of: child.of, via: child.via!, ...pick(child, ['filter']) } : { aggregate, path, type };
    }
  }
  return {
    name: q.name,
    ...pick(q, ['description']),
    from: q.from,
    ...pick(q, ['filter']),
    ...(q.groupBy?.length ? { groupBy: [...q.groupBy] } : {}),
    ...(q.joins === 'caller' ? { joins: 'caller' as const } : {}),
    fields,
    idType: queryIdType(q, collections),
    access: accessRules(q.access),
  };
}

const typedFields = (fields: TypedField[] | undefined): TypedField[] =>
  (fields ?? []).map((f) => ({ name: f.name, type: f.type, ...pick(f, ['isRequired', 'spec']) }));

function functionOf(f: RawFunctionDefinition, codeFile: string): FunctionDefinition {
  const access: Record<string, string[]> = {};
  for (const m of FUNCTION_METHODS) if (f.access?.[m]) access[m] = [...f.access[m]];
  return {
    name: f.name,
    ...pick(f, ['description']),
    enabled: f.enabled ?? true,
    functionTypeId: f.functionTypeId,
    endpoint: f.endpoint,
    queryParams: typedFields(f.queryParams),
    requestBody: typedFields(f.requestBody),
    responseFields: typedFields(f.responseFields),
    access,
    module: compiledPathOf(codeFile),
    ...(f.schedule ? { schedule: { ...f.schedule } } : {}),
  };
}

/** The code file beside a function definition (validation guarantees there is one). */
function codeFileOf(raw: RawApp, name: string): string {
  return raw.functions.find((f) => f.file === `functions/${name}.json`)?.codeFile ?? `functions/${name}.ts`;
}

function externalOf(e: RawExternalDefinition): ExternalCollection {
  return {
    name: e.name,
    ...pick(e, ['description']),
    url: e.url,
    connection: structuredClone(e.connection ?? { type: 'none' as const }),
    ...pick(e, ['timeoutMs']),
    access: accessRules(e.access),
  };
}

/**
 * Builds the app model from a loaded app that validated without diagnostics.
 * @param raw - from `loadApp`, already checked by `validateApp` (files are cast to their definition types)
 * @param env - `DATABASE_URL` and `REDIS_URL` override svc.json `database` and `realtime.redis`; nothing
 *   else is read from the environment, and no secret goes into the model
 * @returns the manifest: settings with defaults (port 3000, auth 3600 s / 70 days / insecure cookies,
 *   functions no fetch / 30000 ms), provider from the database URL, definitions sorted by name, each
 *   collection's `children` derived from the lookups pointing at it
 * @throws DefinitionError (`DEF_MISSING_SVC_JSON`, `DEF_UNSUPPORTED_DATABASE_URL`) when svc.json is missing
 *   or the database URL is not SQLite/PostgreSQL — `validateApp` reports these first
 * Source: DESIGN §3 (app folder, defaults), `runtime/manifest.ts` (the model).
 */
export function normaliseModel(raw: RawApp, env: NodeJS.ProcessEnv): AppManifest {
  if (!raw.svc) {
    throw new DefinitionError([{ code: 'DEF_MISSING_SVC_JSON', file: 'svc.json', path: '', message: 'svc.json not found' }]);
  }
  const svc = raw.svc.data as RawSvcDefinition;
  const { url, source } = resolveDatabaseUrl(svc, env);
  const provider = databaseProvider(url);
  if (!provider) {
    throw new DefinitionError([
      {
        code: 'DEF_UNSUPPORTED_DATABASE_URL',
        file: 'svc.json',
        path: source === 'svc.json' ? '/database' : '',
        message: `${source === 'DATABASE_URL' ? 'DATABASE_URL' : 'database'} must start with file:, postgres:// or postgresql://`,
      },
    ]);
  }
  const collections = dataOf<RawCollectionDefinition>(raw.collections);
  const children = childrenOf(collections);
  const normalised = collections.map((c) => collectionOf(c, children.get(c.name) ?? []));
  return {
    manifestVersion: 1,
    name: svc.name,
    provider,
    settings: settingsOf(svc),
    collections: normalised,
    views: dataOf<RawViewDefinition>(raw.views).map(viewOf),
    queries: dataOf<RawQueryDefinition>(raw.queries).map((q) => queryOf(q, normalised)),
    functions: dataOf<RawFunctionDefinition>(raw.functions).map((f) => functionOf(f, codeFileOf(raw, f.name))),
    externals: dataOf<RawExternalDefinition>(raw.externals).map(externalOf),
    // Only when there are triggers: manifests of apps without them stay as they were.
    ...(raw.triggers?.length ? { triggers: dataOf<RawTriggerDefinition>(raw.triggers).map(triggerOf) } : {}),
  };
}

/** A trigger as the runtime reads it (DESIGN §12): `maxAttempts` defaulted to 10, `description` dropped. */
function triggerOf(t: RawTriggerDefinition): Trigger {
  return {
    name: t.name,
    collection: t.collection,
    on: [...t.on],
    ...(t.filter !== undefined ? { filter: t.filter } : {}),
    ...(t.changed !== undefined ? { changed: [...t.changed] } : {}),
    ...(t.function !== undefined ? { function: t.function } : {}),
    ...(t.webhook !== undefined ? { webhook: { url: t.webhook.url, secret: t.webhook.secret } } : {}),
    maxAttempts: t.maxAttempts ?? 10,
  };
}
