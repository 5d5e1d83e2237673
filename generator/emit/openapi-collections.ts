/**
 * @module OpenAPI paths and schemas of collections and views (SPEC §4.1–4.2): every collection
 * operation with its parameters, the row and input schemas, and security from the access rules.
 * A view has its base collection's operations and schemas under its own name.
 */
import type { OpenApiBuilder, OperationObject, SchemaObject } from 'openapi3-ts/oas31';
import type { AccessRule, AppManifest, Collection, Property } from '../../runtime/index.js';
import { errorResponses, ID_PARAMETER, json, LIST_PARAMETERS, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

/** JSON Schema of one property as it is read (`lookup` is the looked-up row or `{ id }`). */
export function propertySchema(p: Property, forInput: boolean): SchemaObject {
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

/**
 * Paths of a collection, or of a view (`name` = the view, `c` = its base collection): the same
 * operations; a view's rows and inputs are its base collection's schemas.
 */
function collectionPaths(builder: OpenApiBuilder, c: Collection, access: AccessRule[], name = c.name): void {
  const n = name;
  const roles = (method: string) => access.find((r) => r.method === method)?.roleNames;
  const op = (method: string, o: OperationObject): OperationObject => {
    const ext: SvcOperationExtensions = { 'x-svc-resource': n };
    return { tags: [n], ...o, security: securityFor(roles(method)), ...ext };
  };
  const rowRef = ref(c.name);
  const inputRef = ref(`${c.name}Input`);
  if (name === c.name) builder.addSchema(n, rowSchema(c)).addSchema(`${n}Input`, inputSchema(c));
  builder.addPath(`/${n}`, {
    get: op('GET', {
      operationId: `list${n}`, summary: `List ${n} rows`, parameters: LIST_PARAMETERS.filter((p) => p.name !== 'search' || c.search),
      responses: { 200: { description: 'A page of rows', content: json({ type: 'object', required: ['data'], properties: { data: { type: 'array', items: rowRef }, items: { type: 'array', items: rowRef, description: 'The same rows, present with count=true' }, meta: ref('ListMeta') } }) }, ...errorResponses(400, 401, 403) },
    }),
    post: op('POST', {
      operationId: `create${n}`, summary: `Create one ${n} row or an array of rows (atomic)`,
      requestBody: { required: true, content: json({ oneOf: [inputRef, { type: 'array', items: inputRef, minItems: 1 }] }) },
      responses: { 201: { description: 'Ids of the new rows, in request order', content: json(ref('CreatedIds')) }, ...errorResponses(400, 401, 403) },
    }),
    delete: op('DELETE', {
      operationId: `deleteMany${n}`, summary: `Delete several ${n} rows by id (atomic)`,
      requestBody: { required: true, content: json({ type: 'array', items: { type: 'string', format: 'uuid' }, minItems: 1 }) },
      responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 404, 409) },
    }),
  });
  builder.addPath(`/${n}/{id}`, {
    parameters: [ID_PARAMETER],
    get: op('GET', {
      operationId: `get${n}`, summary: `Read one ${n} row`, parameters: LIST_PARAMETERS.filter((p) => ['select', 'lookups', 'include'].includes(p.name)),
      responses: { 200: { description: 'The row', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    put: op('PUT', {
      operationId: `replace${n}`, summary: `Replace a ${n} row (omitted properties become their default or null)`,
      requestBody: { required: true, content: json(inputRef) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    patch: op('PATCH', {
      operationId: `update${n}`, summary: `Change some properties of a ${n} row`,
      requestBody: { required: true, content: json({ ...inputSchema(c), required: undefined }) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    delete: op('DELETE', {
      operationId: `delete${n}`, summary: `Delete a ${n} row`,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404, 409) },
    }),
  });
}

/** Every collection: tag, row schema `<Name>`, input schema `<Name>Input`, paths `/<Name>` and `/<Name>/{id}`. */
export function collectionsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const c of manifest.collections) {
    builder.addTag({ name: c.name, ...(c.description && { description: c.description }) });
    collectionPaths(builder, c, c.access);
  }
}

/** Every view: its base collection's operations and schemas at `/<View>` (rules: the view's, else the base's). */
export function viewsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const v of manifest.views) {
    const base = manifest.collections.find((c) => c.name === v.collection)!;
    builder.addTag({ name: v.name, description: v.description ?? `View of ${v.collection}: rows where ${v.filter}` });
    collectionPaths(builder, base, v.access ?? base.access, v.name);
  }
}
