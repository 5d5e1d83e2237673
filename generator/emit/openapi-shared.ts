/**
 * @module Pieces every OpenAPI path builder uses (`generator/emit/openapi*.ts`): component references,
 * the shared error responses (DESIGN §4 error body), JSON content, the list parameters of SPEC §4.2,
 * per-operation security from access rules, and the `x-svc-*` operation extensions that
 * `agent-tools.json` and `client.ts` read.
 */
import type { OpenApiBuilder, ParameterObject, ReferenceObject, SchemaObject, SecurityRequirementObject } from 'openapi3-ts/oas31';
import type { AppManifest } from '../../runtime/index.js';
import { DEFAULT_PAGE_SIZE, errorStatusDescriptions, MAX_PAGE_SIZE, type ErrorStatus } from '../../runtime/contract/index.js';

/** Adds one kind's paths, tags and component schemas to the document. */
export type PathBuilder = (builder: OpenApiBuilder, manifest: AppManifest) => void;

export const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: SchemaObject | ReferenceObject) => ({ 'application/json': { schema } });

/** The 200 answer of a list (`{ data, items?, meta? }`) whose rows are `row` (SPEC §4.2, DESIGN §4). */
export const listResponse = (row: ReferenceObject) => ({
  description: 'A page of rows',
  content: json({
    type: 'object',
    required: ['data'],
    properties: {
      data: { type: 'array', items: row },
      items: { type: 'array', items: row, description: 'The same rows, present with count=true' },
      meta: ref('ListMeta'),
    },
  }),
});

/** Every status of the contract's error table, with a shared `Error<status>` response component (the DESIGN §4 body). */
export const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = errorStatusDescriptions();

/** References to the shared error responses of `statuses`. */
export const errorResponses = (...statuses: ErrorStatus[]) =>
  Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }]));

/** Security schemes (DESIGN §4 "Auth bodies"): a bearer JWT for external clients, the access cookie for browsers. */
export const SECURITY_SCHEMES = {
  bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: '`Authorization: Bearer <access_token>` from `/_auth` or `/_token`' },
  cookieAuth: { type: 'apiKey', in: 'cookie', name: 'svc_access', description: 'The access cookie set by `/_auth` for browser callers (credentials: include)' },
} as const;

const AUTHENTICATED: SecurityRequirementObject[] = [{ bearerAuth: [] }, { cookieAuth: [] }];

/** Security of an operation whose allowed roles are `roleNames`: `{}` (no credentials) joins when anonymous callers are allowed. */
export function securityFor(roleNames: readonly string[] | undefined): SecurityRequirementObject[] {
  return roleNames?.includes('_ANONYMOUS_USER') ? [...AUTHENTICATED, {}] : AUTHENTICATED;
}

/**
 * Operation extensions: `x-svc-resource` names the collection, view, function or endpoint in the
 * `<METHOD>-<name>` form of `apiToolsAllow` (SPEC §4.11); `x-svc-alias-of` marks a second address of
 * an operation (a type 1 function at `/_invoke/<name>`); `x-svc-agent: false` keeps an operation out
 * of the agent's tools.
 */
export interface SvcOperationExtensions {
  'x-svc-resource': string;
  'x-svc-alias-of'?: string;
  'x-svc-agent'?: false;
}

/** The list parameters of SPEC §4.2 (`search` applies only to collections with search enabled). */
export const LIST_PARAMETERS: ParameterObject[] = [
  {
    name: 'search',
    in: 'query',
    description: 'Words that must each start a word of a string or text property (case-insensitive); only on collections with search enabled',
    schema: { type: 'string' },
  },
  { name: 'filter', in: 'query', description: 'Filter expression (SPEC §4.3), e.g. `title sw "A" and paid eq false`', schema: { type: 'string' } },
  { name: 'sortBy', in: 'query', description: 'One property; a trailing `-` sorts descending', schema: { type: 'string' } },
  { name: 'select', in: 'query', description: 'Comma-separated properties (dot paths into lookups); `id` is always included', schema: { type: 'string' } },
  { name: 'pageNo', in: 'query', description: '1-based page number', schema: { type: 'integer', minimum: 1, default: 1 } },
  { name: 'pageSize', in: 'query', description: 'Rows per page', schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE } },
  { name: 'count', in: 'query', description: '`true` adds `meta.count`; `only` answers only the count', schema: { type: 'string', enum: ['true', 'only'] } },
  {
    name: 'lastKey',
    in: 'query',
    description: 'Keyset cursor: the id of the last row of the previous page (orders by id, exclusive)',
    schema: { type: 'string', format: 'uuid' },
  },
  {
    name: 'lookups',
    in: 'query',
    description: '`full` (default) returns looked-up rows, `id` returns `{ id }`',
    schema: { type: 'string', enum: ['id', 'full'] },
  },
  {
    name: 'include',
    in: 'query',
    description: 'Comma-separated child relations (`<Child>.<lookup>`, e.g. `OrderLine.order`) returned under that key; their own lookups are bare ids',
    schema: { type: 'string' },
  },
];

export const ID_PARAMETER: ParameterObject = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
