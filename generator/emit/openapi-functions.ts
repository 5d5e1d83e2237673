/**
 * @module OpenAPI paths and schemas of functions (SPEC §2 "Function definition", §4.8; DESIGN §3):
 * type 1 at `/<name>` (GET, POST) and again at `/_invoke/<name>`; type 2 only at `/_invoke/<name>`;
 * only the methods the `access` map names; `enabled: false` functions are left out.
 * Declared `queryParams` / `requestBody` are the enforced schema (with `required`); types read from code
 * (SPEC §4.8 rule 7) fill in what is not declared, as advisory fields; declared fields win. The 200
 * schema is `responseFields` merged the same way with the code's response type.
 * Components: `<name>.Body` and `<name>.Response` (a dot cannot occur in a collection name).
 */
import type { OpenApiBuilder, OperationObject, ParameterObject, SchemaObject } from 'openapi3-ts/oas31';
import type { AppManifest, FunctionDefinition, JsonSchema, TypedField } from '../../runtime/index.js';
import { behaviourOf } from '../../runtime/contract/index.js';
import { errorResponses, json, LIST_PARAMETERS, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

/** Methods per function type (DESIGN §3). */
const METHODS_OF = { 1: ['GET', 'POST'], 2: ['GET', 'POST', 'PUT', 'DELETE'] } as const;

/**
 * Parameters a GET function's operation always carries (SPEC §4.11): they reach the code in
 * `req.query` as strings; the function decides what they mean.
 */
export const FUNCTION_GET_PARAMETERS = ['filter', 'select', 'sortBy', 'pageNo', 'pageSize', 'count', 'include', 'lastKey'] as const;

/**
 * JSON Schema of a typed field (SPEC §2): a property type's `functionField` (`runtime/contract/property-types.ts`),
 * and for responses `object`; an unknown type reads as a string.
 */
export function typedFieldSchema(f: TypedField): SchemaObject {
  const base = (
    f.type === 'object' ? { type: 'object', additionalProperties: true } : (behaviourOf(f.type)?.functionField ?? { type: 'string' })
  ) as SchemaObject;
  return { ...base, ...(f.spec?.enum && { enum: structuredClone(f.spec.enum) }), ...(f.spec?.description && { description: f.spec.description }) };
}

const isObjectSchema = (s: JsonSchema | undefined): s is JsonSchema & { properties: Record<string, JsonSchema> } =>
  s !== undefined && s.type === 'object' && typeof s.properties === 'object' && s.properties !== null;

/**
 * Declared fields merged with a code type: declared fields first and winning, then the code's other
 * properties (advisory). Without declared fields the code type is used as it is.
 * @returns undefined when neither says anything
 */
export function mergeFields(declared: TypedField[], code: JsonSchema | undefined, what: string): SchemaObject | undefined {
  if (declared.length === 0) return code === undefined ? undefined : (structuredClone(code) as SchemaObject);
  const properties: Record<string, SchemaObject> = {};
  const required: string[] = declared.filter((f) => f.isRequired).map((f) => f.name);
  for (const f of declared) properties[f.name] = typedFieldSchema(f);
  const advisory: string[] = [];
  if (isObjectSchema(code)) {
    for (const [name, schema] of Object.entries(code.properties)) {
      if (name in properties) continue;
      properties[name] = structuredClone(schema) as SchemaObject;
      advisory.push(name);
      if (Array.isArray(code.required) && code.required.includes(name)) required.push(name);
    }
  }
  const description =
    advisory.length === 0
      ? `Declared ${what}`
      : `Declared ${what}; ${advisory.map((n) => `\`${n}\``).join(', ')} ${advisory.length === 1 ? 'comes' : 'come'} from the code's types (advisory, not enforced)`;
  return { type: 'object', description, properties, ...(required.length > 0 && { required }) };
}

/** Query parameters: declared (enforced), then advisory ones from a narrowed `TQuery`, then GET's auto parameters. */
function queryParameters(f: FunctionDefinition, method: string): ParameterObject[] {
  const params: ParameterObject[] = f.queryParams.map((q) => {
    const { description, ...schema } = typedFieldSchema(q);
    return { name: q.name, in: 'query', required: q.isRequired === true, ...(description && { description }), schema };
  });
  const seen = new Set(params.map((p) => p.name));
  const code = f.codeTypes?.query;
  if (isObjectSchema(code)) {
    for (const [name, schema] of Object.entries(code.properties)) {
      if (seen.has(name)) continue;
      seen.add(name);
      params.push({ name, in: 'query', description: "From the code's query type (advisory, not enforced)", schema: structuredClone(schema) as SchemaObject });
    }
  }
  if (method === 'GET') {
    for (const name of FUNCTION_GET_PARAMETERS) {
      const p = LIST_PARAMETERS.find((l) => l.name === name)!;
      if (!seen.has(name)) params.push({ ...p, description: `${p.description} — passed to the function in \`req.query\`` });
    }
  }
  return params;
}

const lower = (m: string) => m.toLowerCase() as 'get' | 'post' | 'put' | 'delete';

/** Every served function (see the module comment). */
export function functionsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const f of manifest.functions) {
    if (!f.enabled) continue;
    const methods = METHODS_OF[f.functionTypeId].filter((m) => f.access[m]);
    if (methods.length === 0) continue;
    const takesBody = methods.some((m) => m === 'POST' || m === 'PUT');
    const body = takesBody ? mergeFields(f.requestBody, f.codeTypes?.body, 'body fields are enforced for POST and PUT') : undefined;
    const response = mergeFields(f.responseFields, f.codeTypes?.response, 'response fields (advisory, never validated)');
    if (body) builder.addSchema(`${f.name}.Body`, body);
    if (response) builder.addSchema(`${f.name}.Response`, response);
    builder.addTag({ name: f.name, description: f.description ?? `Function ${f.name}` });
    const bodyRequired = f.requestBody.some((r) => r.isRequired);
    const operation = (method: string, operationId: string, aliasOf?: string): OperationObject => {
      const ext: SvcOperationExtensions = { 'x-svc-resource': f.name, ...(aliasOf && { 'x-svc-alias-of': aliasOf }) };
      return {
        tags: [f.name],
        operationId,
        summary: `${method} ${f.name}${f.description ? `: ${f.description}` : ''}`,
        parameters: queryParameters(f, method),
        ...(body && (method === 'POST' || method === 'PUT') && { requestBody: { required: bodyRequired, content: json(ref(`${f.name}.Body`)) } }),
        responses: {
          200: { description: 'What the function answers (status 200 unless the code sets another)', content: json(response ? ref(`${f.name}.Response`) : {}) },
          ...errorResponses(400, 401, 403, 500, 504),
        },
        security: securityFor(f.access[method]),
        ...ext,
      };
    };
    const primary = f.functionTypeId === 1 ? `/${f.name}` : `/_invoke/${f.name}`;
    builder.addPath(primary, Object.fromEntries(methods.map((m) => [lower(m), operation(m, `call_${f.name}_${lower(m)}`)])));
    if (f.functionTypeId === 1) {
      builder.addPath(
        `/_invoke/${f.name}`,
        Object.fromEntries(methods.map((m) => [lower(m), operation(m, `invoke_${f.name}_${lower(m)}`, `call_${f.name}_${lower(m)}`)])),
      );
    }
  }
}
