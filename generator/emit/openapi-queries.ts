/**
 * @module The OpenAPI paths and row schemas of queries (DESIGN §3 "Query"): `GET /{query}` with the
 * list parameters that apply to output fields, `GET /{query}/{id}`, and a row schema with one
 * property per output field (typed as the manifest resolved it). Queries are read-only, so no other
 * operation is described.
 */
import type { OpenApiBuilder, ParameterObject, SchemaObject } from 'openapi3-ts/oas31';
import type { AppManifest, Query, QueryField } from '../../runtime/index.js';
import { isChildAggregate, typeBehaviour } from '../../runtime/contract/index.js';
import { errorResponses as errors, json, LIST_PARAMETERS, listResponse, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

/**
 * The schema of one output field (the type's `queryField`, `runtime/contract/property-types.ts`). A
 * child count is never null (a row without children counts 0), so it is a plain integer.
 */
function fieldSchema(f: QueryField): SchemaObject {
  if (isChildAggregate(f) && f.aggregate === 'count') return { type: 'integer' };
  return typeBehaviour(f.type).queryField('collection' in f ? f.collection : '') as SchemaObject;
}

function describeField(f: QueryField): string {
  if (isChildAggregate(f)) {
    const none = f.aggregate === 'count' ? '0' : 'null';
    return `${f.aggregate}(${f.path}) of the ${f.of} rows whose ${f.via} is this row${f.filter ? ` and that match ${f.filter}` : ''} (${none} when there are none)`;
  }
  return 'aggregate' in f ? `${f.aggregate}(${f.path})` : f.path;
}

/** The row schema of a query: `id` (row id or group key) and each output field. */
export function queryRowSchema(q: Query): SchemaObject {
  const grouped = !!q.groupBy?.length;
  const properties: Record<string, SchemaObject> = {
    id: grouped
      ? {
          type: ['string', 'null'] as SchemaObject['type'],
          description: `The group key (${q.groupBy!.join(', ')}; several keys are joined with "|")`,
          ...(q.idType === 'guid' && { format: 'uuid' }),
        }
      : { type: 'string', format: 'uuid', description: `The ${q.from} row's id` },
  };
  for (const [name, f] of Object.entries(q.fields)) properties[name] = { ...fieldSchema(f), description: describeField(f) };
  const joins = q.joins === 'caller' ? 'Rows reached through lookups are read as the caller could GET them: a hidden one reads null.' : undefined;
  const description = [q.description, joins].filter(Boolean).join(' ');
  return { type: 'object', ...(description && { description }), properties, required: ['id', ...Object.keys(q.fields)] };
}

/** Parameters whose description names the query's fields, so a reader (or an agent's tool, `agent-tools.ts`) knows what to filter, sort and select. */
const FIELD_PARAMETERS = new Set(['filter', 'sortBy', 'select']);

/** The list parameters of query `q`: `filter`, `sortBy` and `select` list its fields (child aggregates included). */
function queryParameters(q: Query, parameters: readonly ParameterObject[]): ParameterObject[] {
  const fields = `Fields of ${q.name}: ${['id', ...Object.keys(q.fields)].join(', ')}`;
  return parameters.map((p) => (FIELD_PARAMETERS.has(p.name) ? { ...p, description: `${p.description}. ${fields}` } : p));
}

/**
 * Adds the paths, tag and row schema of every query (a `PATH_BUILDERS` entry). Of the list
 * parameters, those that do not apply to queries (`lookups`, `include`, `search`) are left out.
 */
export function queriesOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  const parameters = LIST_PARAMETERS.filter((p) => !['lookups', 'include', 'search'].includes(p.name));
  for (const q of manifest.queries) {
    const n = q.name;
    const ext: SvcOperationExtensions = { 'x-svc-resource': n };
    const own = queryParameters(q, parameters);
    const security = securityFor(q.access.find((r) => r.method === 'GET')?.roleNames);
    builder.addTag({ name: n, description: q.description ?? `Query over ${q.from}${q.groupBy?.length ? `, grouped by ${q.groupBy.join(', ')}` : ''}` });
    builder.addSchema(n, queryRowSchema(q));
    builder.addPath(`/${n}`, {
      get: {
        operationId: `list${n}`,
        tags: [n],
        summary: `List ${n} rows (read-only query)`,
        parameters: own,
        security,
        ...ext,
        responses: {
          200: listResponse(ref(n)),
          ...errors(400, 401, 403),
        },
      },
    });
    builder.addPath(`/${n}/{id}`, {
      parameters: [
        { name: 'id', in: 'path', required: true, description: q.groupBy?.length ? 'The group key' : `The ${q.from} row's id`, schema: { type: 'string' } },
      ],
      get: {
        operationId: `get${n}`,
        tags: [n],
        summary: `Read one ${n} row`,
        parameters: own.filter((p) => p.name === 'select'),
        security,
        ...ext,
        responses: { 200: { description: 'The row', content: json(ref(n)) }, ...errors(400, 401, 403, 404) },
      },
    });
  }
}
