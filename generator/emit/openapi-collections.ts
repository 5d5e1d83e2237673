/**
 * @module OpenAPI paths and schemas of collections and views (SPEC §4.1–4.2): every collection
 * operation with its parameters, the row and input schemas, and security from the access rules.
 * A view has its base collection's operations and schemas under its own name.
 */
import type { OpenApiBuilder, OperationObject, SchemaObject } from 'openapi3-ts/oas31';
import type { AccessRule, AppManifest, Collection } from '../../runtime/index.js';
import { collectionInputSchema, MAX_BULK_ROWS, propertyJsonSchema, SYSTEM_FIELDS } from '../../runtime/contract/index.js';
import { errorResponses, ID_PARAMETER, json, LIST_PARAMETERS, listResponse, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

/** A row as read: `id`, the properties in declaration order, then the read-only bookkeeping fields. */
function rowSchema(c: Collection): SchemaObject {
  const system = (name: string): SchemaObject => {
    const f = SYSTEM_FIELDS.find((x) => x.name === name)!;
    const schema = propertyJsonSchema({ name: f.name, type: f.type, required: !f.nullable }, { forInput: false }) as SchemaObject;
    return { ...schema, readOnly: true, description: f.description };
  };
  const properties: Record<string, SchemaObject> = { id: system('id') };
  for (const p of c.properties) properties[p.name] = propertyJsonSchema(p, { forInput: false }) as SchemaObject;
  for (const f of SYSTEM_FIELDS) if (f.name !== 'id') properties[f.name] = system(f.name);
  return { type: 'object', ...(c.description && { description: c.description }), properties, required: ['id'] };
}

/**
 * Paths of a collection, or of a view (`name` = the view, `c` = its base collection): the same
 * operations; a view's rows and inputs are its base collection's schemas.
 */
function collectionPaths(builder: OpenApiBuilder, children: Collection[], c: Collection, access: AccessRule[], name = c.name): void {
  const n = name;
  const roles = (method: string) => access.find((r) => r.method === method)?.roleNames;
  const op = (method: string, o: OperationObject): OperationObject => {
    const ext: SvcOperationExtensions = { 'x-svc-resource': n };
    return { tags: [n], ...o, security: securityFor(roles(method)), ...ext };
  };
  const rowRef = ref(c.name);
  const inputRef = ref(`${c.name}Input`);
  const patchRef = ref(`${c.name}Patch`);
  if (name === c.name) {
    builder
      .addSchema(n, rowSchema(c))
      .addSchema(`${n}Input`, collectionInputSchema(c, { mode: 'create', children }) as SchemaObject)
      .addSchema(`${n}Patch`, collectionInputSchema(c, { mode: 'merge', children }) as SchemaObject);
  }
  // A write that would repeat a unique property's value answers 409 UNIQUE_VIOLATION (DESIGN §11).
  const clash: 409[] = c.properties.some((p) => p.unique) ? [409] : [];
  builder.addPath(`/${n}`, {
    get: op('GET', {
      operationId: `list${n}`,
      summary: `List ${n} rows`,
      parameters: LIST_PARAMETERS.filter((p) => p.name !== 'search' || c.search),
      responses: {
        200: listResponse(rowRef),
        ...errorResponses(400, 401, 403),
      },
    }),
    post: op('POST', {
      operationId: `create${n}`,
      summary: `Create one ${n} row or an array of rows (atomic)`,
      requestBody: { required: true, content: json({ oneOf: [inputRef, { type: 'array', items: inputRef, minItems: 1, maxItems: MAX_BULK_ROWS }] }) },
      responses: {
        201: { description: 'Ids of the new rows, in request order', content: json(ref('CreatedIds')) },
        ...errorResponses(400, 401, 403, ...clash),
      },
    }),
    delete: op('DELETE', {
      operationId: `deleteMany${n}`,
      summary: `Delete several ${n} rows by id (atomic)`,
      requestBody: { required: true, content: json({ type: 'array', items: { type: 'string', format: 'uuid' }, minItems: 1, maxItems: MAX_BULK_ROWS }) },
      responses: { 204: { description: 'Deleted' }, ...errorResponses(400, 401, 403, 404, 409) },
    }),
  });
  builder.addPath(`/${n}/{id}`, {
    parameters: [ID_PARAMETER],
    get: op('GET', {
      operationId: `get${n}`,
      summary: `Read one ${n} row`,
      parameters: LIST_PARAMETERS.filter((p) => ['select', 'lookups', 'include'].includes(p.name)),
      responses: { 200: { description: 'The row', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404) },
    }),
    put: op('PUT', {
      operationId: `replace${n}`,
      summary: `Replace a ${n} row (omitted properties become their default or null)`,
      requestBody: { required: true, content: json(inputRef) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404, ...clash) },
    }),
    patch: op('PATCH', {
      operationId: `update${n}`,
      summary: `Change some properties of a ${n} row`,
      requestBody: { required: true, content: json(patchRef) },
      responses: { 200: { description: 'The row as it now stands', content: json(rowRef) }, ...errorResponses(400, 401, 403, 404, ...clash) },
    }),
    delete: op('DELETE', {
      operationId: `delete${n}`,
      summary: `Delete a ${n} row`,
      responses: { 204: { description: 'Deleted' }, ...errorResponses(401, 403, 404, 409) },
    }),
  });
}

/** Every collection: tag, row schema `<Name>`, input schemas `<Name>Input` (POST, PUT) and `<Name>Patch` (PATCH), paths `/<Name>` and `/<Name>/{id}`. */
export function collectionsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const c of manifest.collections) {
    builder.addTag({ name: c.name, ...(c.description && { description: c.description }) });
    collectionPaths(builder, manifest.collections, c, c.access);
  }
}

/** Every view: its base collection's operations and schemas at `/<View>` (rules: the view's, else the base's). */
export function viewsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const v of manifest.views) {
    const base = manifest.collections.find((c) => c.name === v.collection)!;
    builder.addTag({ name: v.name, description: v.description ?? `View of ${v.collection}: rows where ${v.filter}` });
    collectionPaths(builder, manifest.collections, base, v.access ?? base.access, v.name);
  }
}
