/**
 * @module Emits `.svc/client.ts` from the OpenAPI document (and the manifest, for which names are
 * collections, views, queries and functions): a TypeScript type per component schema (rows and inputs
 * of collections, query rows, function bodies and responses, auth bodies), per-function query/body/
 * response types read from the operations, and a small typed fetch client (`templates/client.ts.hbs`).
 * Deriving the types from the document keeps them in step with what openapi-typescript reads from it.
 */
import type { AppManifest } from '../../runtime/index.js';
import { renderTemplate } from '../render/render-template.js';
import { docComment, propertyKey, schemaToTs } from './schema-to-ts.js';

type Schema = Record<string, unknown>;
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

/** Names the file itself exports: a row alias of the same name is not emitted. */
const RESERVED = new Set([
  'Schemas',
  'Functions',
  'ListParams',
  'ReadParams',
  'ListResult',
  'FetchLike',
  'ClientOptions',
  'ApiError',
  'BlobMetadata',
  'FileClient',
  'BlobLike',
  'CollectionClient',
  'ReadClient',
  'Client',
  'createClient',
]);
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The query parameters of an operation as an object type (`Record<string, never>` when there are none). */
function queryType(op: Operation, indent: string): string {
  const params = (op.parameters ?? []).filter((p) => p.in === 'query');
  if (params.length === 0) return 'Record<string, never>';
  return schemaToTs(
    {
      type: 'object',
      properties: Object.fromEntries(params.map((p) => [p.name, { ...(p.schema ?? {}), ...(p.description && { description: p.description }) }])),
      required: params.filter((p) => p.required).map((p) => p.name),
    },
    indent,
  );
}

const jsonSchemaOf = (content: Record<string, { schema: Schema }> | undefined) => content?.['application/json']?.schema;

/** The view model of one function: one entry per method in the document. */
function functionView(name: string, path: string, doc: Doc) {
  const item = doc.paths[path] ?? {};
  const methods = ['get', 'post', 'put', 'delete']
    .filter((m) => item[m])
    .map((lower) => {
      const op = item[lower];
      const method = lower.toUpperCase();
      const body = jsonSchemaOf(op.requestBody?.content);
      const response = jsonSchemaOf(op.responses['200']?.content);
      const queryRequired = (op.parameters ?? []).some((p) => p.in === 'query' && p.required);
      const t = `Functions[${JSON.stringify(name)}][${JSON.stringify(method)}]`;
      const hasBody = lower === 'post' || lower === 'put';
      const bodyOptional = !body || !op.requestBody?.required;
      const queryArg = `query${queryRequired ? '' : '?'}: ${t}['query']`;
      const params = hasBody ? (bodyOptional ? `body?: ${t}['body'], query?: ${t}['query']` : `body: ${t}['body'], ${queryArg}`) : queryArg;
      return {
        method,
        lower,
        path,
        hasBody,
        queryType: queryType(op, '      '),
        bodyType: body ? schemaToTs(body, '      ') : 'unknown',
        responseType: response ? schemaToTs(response, '      ') : 'unknown',
        params,
        args: hasBody ? 'query, body' : 'query',
      };
    });
  return { key: propertyKey(name), methods };
}

/** The union of a collection's blob property names as a TypeScript type (`never` without any). */
function blobFields(manifest: AppManifest, collection: string): string {
  const names = manifest.collections.find((c) => c.name === collection)!.properties.filter((p) => p.type === 'blob');
  return names.length ? names.map((p) => JSON.stringify(p.name)).join(' | ') : 'never';
}

/**
 * Builds `client.ts`.
 * @param manifest - which names are collections, views, queries and functions
 * @param openapi - the document `emitOpenApi(manifest)` built (schemas and operations are read from it)
 * @returns the file text; deterministic for the same input
 * Source: SPEC §4.8 rule 8, §9.3 (generated client types follow `/api/_openapi`).
 */
export function emitClientTypes(manifest: AppManifest, openapi: object): string {
  const doc = openapi as Doc;
  const schemas = Object.entries(doc.components.schemas).map(([name, schema]) => ({
    key: JSON.stringify(name),
    doc: docComment(schema.description, '  '),
    type: schemaToTs(schema, '  '),
  }));
  const has = (name: string) => name in doc.components.schemas;
  const aliases = [
    ...manifest.collections.flatMap((c) => [
      { alias: c.name, name: c.name },
      { alias: `${c.name}Input`, name: `${c.name}Input` },
      { alias: `${c.name}Patch`, name: `${c.name}Patch` },
    ]),
    ...manifest.queries.filter((q) => has(q.name)).map((q) => ({ alias: q.name, name: q.name })),
  ].filter((a) => IDENTIFIER.test(a.alias) && !RESERVED.has(a.alias) && has(a.name));
  const functions = manifest.functions
    .filter((f) => f.enabled)
    .map((f) => functionView(f.name, f.functionTypeId === 1 ? `/${f.name}` : `/_invoke/${f.name}`, doc))
    .filter((f) => f.methods.length > 0);
  return renderTemplate('client.ts.hbs', {
    appName: manifest.name,
    schemas,
    aliases,
    functions,
    collections: manifest.collections.map((c) => ({
      key: propertyKey(c.name),
      row: c.name,
      input: `${c.name}Input`,
      patch: `${c.name}Patch`,
      files: blobFields(manifest, c.name),
      path: `/${c.name}`,
    })),
    views: manifest.views.map((v) => ({
      key: propertyKey(v.name),
      row: v.collection,
      input: `${v.collection}Input`,
      patch: `${v.collection}Patch`,
      files: blobFields(manifest, v.collection),
      path: `/${v.name}`,
    })),
    queries: manifest.queries.filter((q) => has(q.name)).map((q) => ({ key: propertyKey(q.name), row: q.name, path: `/${q.name}` })),
  });
}
