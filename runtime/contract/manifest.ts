/**
 * @module The app model (`.svc/manifest.json`): the one contract between generator and runtime
 * (DESIGN §2). Defined here, in `runtime/contract/` (no dependencies), exported from `runtime/index.ts`;
 * the generator produces the manifest from these types, and the runtime validates the file when it
 * loads it (`runtime/load-manifest.ts`). Settings shapes are in `./settings.ts`.
 */
import type { AppSettings, ExternalConnection } from './settings.js';

import type { PropertyType } from './property-types.js';

/** Property types of collections (DESIGN §3): the keys of `PROPERTY_TYPE_TABLE` (`./property-types.ts`). */
export { PROPERTY_TYPES, type PropertyType } from './property-types.js';

/** Methods an access rule may name (DESIGN §3). */
export const ACCESS_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'LISTEN'] as const;
export type AccessMethod = (typeof ACCESS_METHODS)[number];

/** One property of a collection, normalised: every optional flag is explicit. */
export interface Property {
  name: string;
  type: PropertyType;
  /** true when a create (POST, PUT) must carry a non-null value. */
  required: boolean;
  /** Default for create and PUT; `"now()"` for date/date-time means the time of the write. */
  default?: string | number | boolean;
  description?: string;
  /** string/text only: limits in characters. */
  maxLength?: number;
  minLength?: number;
  /** integer/decimal only. */
  minimum?: number;
  maximum?: number;
  /** string only: allowed values. */
  enum?: string[];
  /** lookup only: the target collection's name. */
  collection?: string;
  /** string, integer, date, guid, lookup: no two rows hold the same non-null value (DESIGN §11). */
  unique?: boolean;
}

/** An access rule: which roles may use a method (SPEC §2 "Collection access rule"). */
export interface AccessRule {
  method: AccessMethod;
  roleNames: string[];
}

/** A row visibility filter in the filter language of SPEC §4.3 (DESIGN §3 `policies`). */
export interface Policy {
  roleNames: string[];
  filter: string;
}

/** A child relation: rows of `collection` whose lookup `field` points at this collection (SPEC §4.4). */
export interface ChildRelation {
  /** The body key, `<collection>.<field>`, e.g. `OrderLine.order`. */
  key: string;
  collection: string;
  field: string;
}

/** A collection, normalised (DESIGN §3): properties in declaration order, every default filled. */
export interface Collection {
  name: string;
  description?: string;
  /** In declaration order. */
  properties: Property[];
  search: boolean;
  access: AccessRule[];
  policies: Policy[];
  /** Collections whose lookups point here, sorted by key. */
  children: ChildRelation[];
}

/** A collection with a built-in filter (DESIGN §3). `access: null` means the base collection's rules. */
export interface View {
  name: string;
  description?: string;
  collection: string;
  filter: string;
  access: AccessRule[] | null;
}

export type AggregateFunction = 'count' | 'sum' | 'avg' | 'min' | 'max';

/**
 * A child aggregate of a query (DESIGN §3 "Child aggregates"): one aggregate over the rows of `of`
 * whose lookup `via` points at the query's `from` row, optionally narrowed by `filter` (on `of`).
 * `path` is a dot path from `of`. A `from` row without children gives 0 for `count`, null otherwise.
 */
export interface ChildAggregateField {
  aggregate: AggregateFunction;
  path: string;
  type: PropertyType;
  /** The child collection. */
  of: string;
  /** The lookup property of `of` that points at the query's `from` collection. */
  via: string;
  /** Filter (SPEC §4.3) on the child rows, in `of`'s terms. */
  filter?: string;
}

/**
 * An output field of a query: a dot path, one aggregate over a dot path, or a child aggregate. `type`
 * is the output's type, resolved by the generator: the path's type for plain fields (`collection`
 * names a lookup's target), `integer` for count, `decimal` for avg, the path's type for sum, min and
 * max (`guid` for min/max over a lookup).
 */
export type QueryField =
  { path: string; type: PropertyType; collection?: string } | { aggregate: AggregateFunction; path: string; type: PropertyType } | ChildAggregateField;

/** Whether a query field is a child aggregate (it has `of` and `via`). */
export function isChildAggregate(field: QueryField): field is ChildAggregateField {
  return 'of' in field && typeof field.of === 'string';
}

/** A read-only join or aggregate (DESIGN §3). */
export interface Query {
  name: string;
  description?: string;
  from: string;
  filter?: string;
  /** Present (non-empty) for aggregate queries. */
  groupBy?: string[];
  /**
   * `caller`: rows reached through lookups are joined only when the caller could GET them (else their
   * fields read null); absent: joined as the query's author exposed them (DESIGN §4 "Queries").
   */
  joins?: 'caller';
  /** Output field name → definition, in declaration order. */
  fields: Record<string, QueryField>;
  /**
   * Type of a row's `id`: `guid` for join queries and for one lookup or guid group key; `string`
   * (canonical text, see `runtime/data/query-source.ts`) for other group keys.
   */
  idType: 'guid' | 'string';
  access: AccessRule[];
}

/** A typed field of a function definition (SPEC §2 "Function definition"). */
export interface TypedField {
  name: string;
  type: string;
  isRequired?: boolean;
  spec?: { enum?: unknown[]; description?: string; properties?: Record<string, unknown> };
}

/** A JSON Schema (2020-12) object, as published in the OpenAPI document. */
export type JsonSchema = Record<string, unknown>;

/**
 * Advisory types read from a default-export function's code by `svc generate` (SPEC §4.8 rule 7):
 * request body, response body and narrowed query, each as JSON Schema. A side that could not be
 * converted fully is the opaque `{ "type": "object" }`; a side with no type in code is absent.
 * They never reject a request.
 */
export interface FunctionCodeTypes {
  body?: JsonSchema;
  response?: JsonSchema;
  query?: JsonSchema;
}

/** A function definition, normalised (SPEC §2 "Function definition", §4.8). */
export interface FunctionDefinition {
  name: string;
  description?: string;
  enabled: boolean;
  functionTypeId: 1 | 2;
  endpoint: string;
  queryParams: TypedField[];
  requestBody: TypedField[];
  responseFields: TypedField[];
  access: Record<string, string[]>;
  /** The compiled code, relative to `.svc/`, e.g. `functions/sendMail.js` (written by `svc generate`). */
  module: string;
  /** Present when the code is in default-export form and declares at least one type (SPEC §4.8 rule 7). */
  codeTypes?: FunctionCodeTypes;
  /** Type 2 only: runs on a cron schedule, once per tick across every instance (DESIGN §12). */
  schedule?: FunctionSchedule;
}

/** A function's `"schedule"` (DESIGN §12): five cron fields, or six with seconds, in an IANA time zone. */
export interface FunctionSchedule {
  cron: string;
  /** IANA zone name; absent: UTC. */
  timezone?: string;
  /** Run the last tick missed while no instance ran (default false: missed ticks are skipped). */
  catchUp?: boolean;
}

/** A change a trigger fires on (DESIGN §12). */
export type TriggerOperation = 'create' | 'update' | 'delete';

/**
 * A trigger, `triggers/<Name>.json` (DESIGN §12): on a committed change of `collection` matching
 * `filter` (and, for updates, changing one of `changed`), runs the type-2 `function` or POSTs the
 * event to `webhook`, at least once, with retries up to `maxAttempts`.
 */
export interface Trigger {
  name: string;
  collection: string;
  on: TriggerOperation[];
  /** SPEC query-language filter, read on the row after the change (before it, for delete). */
  filter?: string;
  /** Update only: fire only when one of these properties changed. */
  changed?: string[];
  /** A type-2 function's name; exactly one of `function` and `webhook`. */
  function?: string;
  /** `url` and `secret` as written: `${env.X}` / `${secrets.Y}` references resolved at run time. */
  webhook?: { url: string; secret: string };
  /** Attempts before the job is kept as failed; default 10. */
  maxAttempts: number;
}

/** An external collection (SPEC §4.10, DESIGN §3): reads forwarded to `url`. */
export interface ExternalCollection {
  name: string;
  description?: string;
  url: string;
  /** How to authenticate at the provider; `{ type: 'none' }` when the file has no `connection`. */
  connection: ExternalConnection;
  /** Longest wait for the provider, in milliseconds; absent: 10000. */
  timeoutMs?: number;
  access: AccessRule[];
}

export type DatabaseProvider = 'sqlite' | 'postgresql';

/** The normalised app model written to `.svc/manifest.json`. */
export interface AppManifest {
  manifestVersion: 1;
  /** The api-name. */
  name: string;
  /** The provider the Prisma schema and client in `.svc/` were generated for. */
  provider: DatabaseProvider;
  settings: AppSettings;
  collections: Collection[];
  views: View[];
  queries: Query[];
  functions: FunctionDefinition[];
  externals: ExternalCollection[];
  /** DESIGN §12; absent in manifests written before triggers existed (read as []). */
  triggers?: Trigger[];
}
