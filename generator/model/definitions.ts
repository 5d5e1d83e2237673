/**
 * @module TypeScript shapes of definition files that passed their JSON Schema (`schemas/*.schema.json`,
 * DESIGN §3). Only schema-valid data may be cast to these; optional keys are as written by the author,
 * before `normaliseModel` fills defaults.
 */
import type {
  AccessMethod,
  FunctionSchedule,
  AgentSettings,
  AggregateFunction,
  CreditsSettings,
  StorageSettings,
  MailSettings,
  LogsSettings,
  MetricsSettings,
  AllowedHostsSetting,
  PublicSettings,
  CorsSettings,
  SignupSettings,
  ProviderSettings,
  ExternalConnection,
  Property,
  RealtimeSettings,
  TypedField,
} from '../../runtime/index.js';

export interface RawAccessRule {
  method: AccessMethod;
  roleNames: string[];
}

export interface RawPolicy {
  roleNames: string[];
  filter: string;
}

export interface RawSvcDefinition {
  name: string;
  database?: string;
  port?: number;
  console?: boolean;
  auth?: {
    accessTokenTtlSeconds?: number;
    refreshTokenTtlDays?: number;
    secureCookies?: boolean;
    signup?: Partial<SignupSettings>;
    providers?: Record<string, ProviderSettings>;
    linkByVerifiedEmail?: boolean;
  };
  realtime?: RealtimeSettings;
  functions?: { allowFetch?: boolean; timeoutMs?: number; maxMemoryMb?: number };
  agent?: Partial<AgentSettings>;
  credits?: Partial<CreditsSettings>;
  storage?: Partial<StorageSettings>;
  mail?: MailSettings;
  logs?: Partial<LogsSettings>;
  metrics?: MetricsSettings;
  trustedProxies?: string[];
  allowedHosts?: AllowedHostsSetting;
  publicUrl?: string;
  public?: PublicSettings;
  cors?: Partial<CorsSettings> & { origins: string[] };
  jobs?: false | { concurrency?: number; pollIntervalMs?: number };
}

/** A property as written in a collection file: the manifest's `Property` before defaults and naming. */
export type RawPropertyDefinition = Omit<Property, 'name' | 'required'> & { required?: boolean };

export interface RawCollectionDefinition {
  name: string;
  description?: string;
  properties: Record<string, RawPropertyDefinition>;
  search?: boolean;
  access?: RawAccessRule[];
  policies?: RawPolicy[];
}

export interface RawViewDefinition {
  name: string;
  description?: string;
  collection: string;
  filter: string;
  access?: RawAccessRule[];
}

/**
 * A query field as written: a dot path, or `{ "<aggregate>": "<path>" }` with one aggregate key; a
 * child aggregate adds `of` (the child collection), `via` (its lookup to `from`) and maybe `filter`.
 */
export type RawQueryField = string | (Partial<Record<AggregateFunction, string>> & { of?: string; via?: string; filter?: string });

export interface RawQueryDefinition {
  name: string;
  description?: string;
  from: string;
  filter?: string;
  groupBy?: string[];
  joins?: 'query' | 'caller';
  fields: Record<string, RawQueryField>;
  access?: RawAccessRule[];
}

export interface RawFunctionDefinition {
  name: string;
  description?: string;
  enabled?: boolean;
  functionTypeId: 1 | 2;
  endpoint: string;
  queryParams?: TypedField[];
  requestBody?: TypedField[];
  responseFields?: TypedField[];
  access?: Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', string[]>>;
  schedule?: FunctionSchedule;
}

export interface RawExternalDefinition {
  name: string;
  description?: string;
  url: string;
  connection?: ExternalConnection;
  access?: RawAccessRule[];
  timeoutMs?: number;
}

/** Aggregate functions of query fields, in the order they are documented (DESIGN §3). */
export const AGGREGATE_FUNCTIONS: readonly AggregateFunction[] = ['count', 'sum', 'avg', 'min', 'max'];

/** A query field split into its parts: `aggregate` is undefined for a plain path; `child` is set for a child aggregate. */
export interface SplitQueryField {
  aggregate?: AggregateFunction;
  path: string;
  /** Child aggregates (`of` written): the child collection, its lookup to `from`, the child filter. */
  child?: { of: string; via?: string; filter?: string };
}

/** Splits a query field into its aggregate (undefined for a plain path), its path and, for a child aggregate, `of`/`via`/`filter`. */
export function splitQueryField(field: RawQueryField): SplitQueryField {
  if (typeof field === 'string') return { path: field };
  const aggregate = AGGREGATE_FUNCTIONS.find((a) => field[a] !== undefined) ?? 'count';
  const path = field[aggregate] ?? '';
  if (field.of === undefined && field.via === undefined && field.filter === undefined) return { aggregate, path };
  return {
    aggregate,
    path,
    child: { of: field.of ?? '', ...(field.via !== undefined && { via: field.via }), ...(field.filter !== undefined && { filter: field.filter }) },
  };
}

/** A schema-valid trigger file as written (see `schemas/trigger.schema.json`). */
export interface RawTriggerDefinition {
  name: string;
  description?: string;
  collection: string;
  on: ('create' | 'update' | 'delete')[];
  filter?: string;
  changed?: string[];
  function?: string;
  webhook?: { url: string; secret: string };
  maxAttempts?: number;
}
