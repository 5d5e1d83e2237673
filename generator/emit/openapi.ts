/**
 * @module Emits `.svc/openapi.json` (OpenAPI 3.1, built with openapi3-ts): every collection
 * operation of SPEC §4.1 with its parameters (§4.2), row and input schemas, and the error body of
 * DESIGN §4. Paths are relative to the server URL `/api`.
 */
import { OpenApiBuilder, type OperationObject, type ParameterObject, type ReferenceObject, type SchemaObject } from 'openapi3-ts/oas31';
import type { AppManifest, Collection, Property } from '../../runtime/index.js';
import { addQueryPaths } from './openapi-queries.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponses = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [
  String(s), { $ref: `#/components/responses/Error${s}` },
]));
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (validation, filter or parameter error)', 401: 'Authentication required',
  403: 'Not allowed for the caller', 404: 'Not found', 409: 'Conflict with existing rows',
};

/** JSON Schema of one property as it is read (`lookup` is the looked-up row or `{ id }`). */
function propertySchema(p: Property, forInput: boolean): SchemaObject {
  const base: SchemaObject = (() => {
    switch (p.type) {
      case 'string': return { type: 'string', ...(p.maxLength !== undefined && { maxLength: p.maxLength }), ...(p.enum && { enum: p.enum }) };
      case 'text': return { type: 'string' };
      case 'integer': return { type: 'integer', format: 'int32' };
      case 'decimal': return { type: 'number' };
      case 'boolean': return { type: 'boolean' };
      case 'date': return { type: 'string', format: 'date' };
      case 'date-time': return { type: 'string', format: 'date-time' };
      case 'guid': return { type: 'string', format: 'uuid' };
      case 'lookup': return forInput
        ? { type: 'object', properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'] }
        : { type: 'object', description: `A ${p.collection} row (lookups=full) or only its id (lookups=id)`, properties: { id: { type: 'string', format: 'uuid' } }, required: ['id'], additionalProperties: true };
      case 'blob': return { type: 'object', description: 'Blob metadata', additionalProperties: true };
    }
  })();
  const schema: SchemaObject = p.required && !forInput ? base : { ...base, type: [base.type as string, 'null'] as SchemaObject['type'] };
  if (p.description) schema.description = p.description;
  return schema;
}

function rowSchema(c: Collection): SchemaObject {
  const properties: Record<string, SchemaObject> = { id: { type: 'string', format: 'uuid', readOnly: true } };
  for (const p of c.properties) properties[p.name] = propertySchema(p, false);
  properties.createdAt = { type: 'string', format: 'date-time', readOnly: true };
  properties.updatedAt = { type: 'string', format: 'date-time', readOnly: true };
  properties.createdBy = { type: ['string', 'null'], readOnly: true };
  return { type: 'object', ...(c.description && { description: c.description }), properties, required: ['id'] };
}

function inputSchema(c: Collection): SchemaObject {
  const properties: Record<string, SchemaObject> = {};
  for (const p of c.properties) if (p.type !== 'blob') properties[p.name] = propertySchema(p, true);
  const required = c.properties.filter((p) => p.required && p.type !== 'blob' && p.default === undefined).map((p) => p.name);
  return { type: 'object', properties, ...(required.length > 0 && { required }) };
}

const LIST_PARAMETERS: ParameterObject[] = [
  { name: 'search', in: 'query', description: 'Words that must each prefix a word of a string or text property (case-insensitive); only on collections with search enabled', schema: { type: 'string' } },
  { name: 'filter', in: 'query', description: 'Filter expression (SPEC §4.3), e.g. `title sw "A" and paid eq false`', schema: { type: 'string' } },
  { name: 'sortBy', in: 'query', description: 'One property; a trailing `-` sorts descending', schema: { type: 'string' } },
  { name: 'select', in: 'query', description: 'Comma-separated properties (dot paths into lookups); `id` is always included', schema: { type: 'string' } },
  { name: 'pageNo', in: 'query', description: '1-based page number', schema: { type: 'integer', minimum: 1, default: 1 } },
  { name: 'pageSize', in: 'query', description: 'Rows per page', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 10 } },
  { name: 'count', in: 'query', description: '`true` adds `meta.count`; `only` answers only the count', schema: { type: 'string', enum: ['true', 'only'] } },
  { name: 'lastKey', in: 'query', description: 'Keyset cursor: the id of the last row of the previous page (orders by id, exclusive)', schema: { type: 'string', format: 'uuid' } },
  { name: 'lookups', in: 'query', description: '`full` (default) returns looked-up rows, `id` returns `{ id }`', schema: { type: 'string', enum: ['id', 'full'] } },
  { name: 'include', in: 'query', description: 'Comma-separated child relations (`<Child>.<lookup>`, e.g. `OrderLine.order`) returned under that key; their own lookups are bare ids', schema: { type: 'string' } },
];

const ID_PARAMETER: ParameterObject = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const json = (schema: SchemaObject | ReferenceObject) => ({ 'application/json': { schema } });

/**
 * Paths of a collection, or of a view (`name` = the view, `c` = its base collection): the same
 * operations; a view's rows and inputs are its base collection's schemas.
 */
function collectionPaths(builder: OpenApiBuilder, c: Collection, name = c.name): void {
  const n = name;
  const op = (o: OperationObject): OperationObject => ({ tags: [n], ...o });
  const rowRef = ref(c.name);
  const inputRef = ref(`${c.name}Input`);
  if (name === c.name) builder.addSchema(n, rowSchema(c)).addSchema(`${n}Input`, inputSchema(c));
  builder.addPath(`/${n}`, {
    get: op({
      operationId: `list${n}`, summary: `List ${n} rows`, parameters: LIST_PARAMETERS.filter((p) => p.name !== 'search' || c.search),
      responses: { 200: { description: 'A page of rows', content: json({ type: 'object', required: ['data'], properties: { data: { type: 'array', items: rowRef }, items: { type: 'array', items: rowRef, description: 'The same rows, present with count=true' }, meta: ref('ListMeta') } }) }, ...errorResponses(400, 401, 403) },
    }),
    post: op({
      operationId: `create${n}`, summary: `Create one ${n} row or an array of rows (atomic)`,
      requestBody: { required: true, content: json({ oneOf: [inputRef, { type: 'array', items: inputRef, minItems: 1 }] }) },
      responses: { 201: { description: 'Ids of the new rows, in request order', content: json(ref('CreatedIds')) }, ...errorResponses(400, 401, 403) },
    }),
    delete: op({
      operationId: `deleteMany${n}`, summary: `Delete several ${n} rows by id (atomic)`,
      requestBody: { required: true, content: json({ type: 'array', items: { type: 'string', format: 'uuid' }, minItems: 1 }) },
      responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 404, 409) },
    }),
  });
  builder.addPath(`/${n}/{id}`, {
    parameters: [ID_PARAMETER],
    get: op({
      operationId: `get${n}`, summary: `Read one ${n} row`, parameters: LIST_PARAMETERS.filter((p) => ['select', 'lookups', 'include'].includes(p.name)),
      responses: { 200: { description: 'The row', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    put: op({
      operationId: `replace${n}`, summary: `Replace a ${n} row (omitted properties become their default or null)`,
      requestBody: { required: true, content: json(inputRef) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    patch: op({
      operationId: `update${n}`, summary: `Change some properties of a ${n} row`,
      requestBody: { required: true, content: json({ ...inputSchema(c), required: undefined }) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    delete: op({
      operationId: `delete${n}`, summary: `Delete a ${n} row`,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404, 409) },
    }),
  });
}

/**
 * Builds the OpenAPI 3.1 document of the app.
 * @returns a plain object; serialise with stable key order (it is built in a fixed order)
 * Source: SPEC §4.1–4.2, §4.8 rule 8 (`/api/_openapi`); DESIGN §4 (bodies and errors).
 */
export function emitOpenApi(manifest: AppManifest): object {
  const builder = OpenApiBuilder.create()
    .addOpenApiVersion('3.1.0')
    .addInfo({ title: manifest.name, version: '1.0.0', description: `API of the ${manifest.name} app, generated by svc` })
    .addServer({ url: '/api' })
    .addSchema('Error', {
      type: 'object', required: ['error', 'code'],
      properties: {
        error: { type: 'string', description: 'Human-readable message' },
        code: { type: 'string', description: 'Machine code, e.g. VALIDATION_FAILED' },
        details: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string', description: 'JSON Pointer' }, message: { type: 'string' }, code: { type: 'string' } } } },
      },
    })
    .addSchema('CreatedIds', { type: 'object', required: ['data'], properties: { data: { type: 'array', items: { type: 'string', format: 'uuid' } } } })
    .addSchema('ListMeta', { type: 'object', description: 'Present with count=true|only', properties: { count: { type: 'integer', description: 'Rows matching the filter' } } });
  for (const status of [400, 401, 403, 404, 409]) {
    builder.addResponse(`Error${status}`, { description: ERROR_DESCRIPTIONS[status], content: json(ref('Error')) });
  }
  for (const c of manifest.collections) {
    builder.addTag({ name: c.name, ...(c.description && { description: c.description }) });
    collectionPaths(builder, c);
  }
  for (const v of manifest.views) {
    const base = manifest.collections.find((c) => c.name === v.collection)!;
    builder.addTag({ name: v.name, description: v.description ?? `View of ${v.collection}: rows where ${v.filter}` });
    collectionPaths(builder, base, v.name);
  }
  addQueryPaths(builder, manifest.queries, LIST_PARAMETERS);
  builder.addPath('/_openapi', {
    get: { operationId: 'getOpenApi', tags: ['meta'], summary: 'This document', responses: { 200: { description: 'The OpenAPI document', content: json({ type: 'object' }) } } },
  });
  builder.addTag({ name: 'meta', description: 'Service endpoints' });
  return builder.getSpec();
}
