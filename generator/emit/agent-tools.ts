/**
 * @module Emits `.svc/agent-tools.json` from the OpenAPI document alone (SPEC §4.11 "Tools the agent
 * may call"; DESIGN §7): the tool lists an agent session reads for each `apiTools` mode.
 * - `all`: one tool per backend operation (not the second `/_invoke` address of a type 1 function, not
 *   sign-in or document endpoints), whose parameters are exactly the operation's declared path and query
 *   parameters plus its request body: the fields of an object body, or one `body` argument otherwise.
 *   `additionalProperties: false`: an undeclared argument is refused (SPEC §7, 400).
 * - `dynamic`: the meta-tools `list-api-endpoints`, `get-api-endpoint-schema`, `invoke-api-endpoint`.
 * - `explicit`: `<METHOD>-<name>` (the form of `apiToolsAllow`) → the names of its tools in `all`.
 * Tool names are the operationIds, made to fit `^[a-zA-Z0-9_-]{1,64}$` (OpenAI-style function names).
 */
import { createHash } from 'node:crypto';
import type { AgentTool, AgentToolsFile, ArgumentLocation, JsonSchema } from '../../runtime/index.js';

export type { AgentTool, AgentToolsFile, ArgumentLocation };

const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** The operationId when it is a valid tool name; else a sanitised prefix and a hash of the full id (stable, unique). */
export function toolName(operationId: string): string {
  if (NAME_PATTERN.test(operationId)) return operationId;
  const hash = createHash('sha256').update(operationId).digest('hex').slice(0, 8);
  return `${operationId.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55)}_${hash}`;
}

type Doc = { paths: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, JsonSchema> } };
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: JsonSchema };
type Operation = {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  'x-svc-resource'?: string;
  'x-svc-alias-of'?: string;
  'x-svc-agent'?: boolean;
};

/** Inlines `#/components/schemas/*` references (our documents have no cycles; depth-guarded anyway). */
function deref(schema: unknown, doc: Doc, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((s) => deref(s, doc, depth));
  if (typeof schema !== 'object' || schema === null) return schema;
  const { $ref, ...rest } = schema as Record<string, unknown>;
  if (typeof $ref === 'string' && depth < 20) {
    const target = doc.components?.schemas?.[$ref.replace('#/components/schemas/', '')] ?? {};
    return deref({ ...target, ...rest }, doc, depth + 1);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, deref(v, doc, depth)]));
}

function toolOf(path: string, method: string, op: Operation, pathParams: Parameter[], doc: Doc): AgentTool {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const argumentLocations: Record<string, ArgumentLocation> = {};
  for (const p of [...pathParams, ...(op.parameters ?? [])]) {
    properties[p.name] = deref({ ...(p.schema ?? {}), ...(p.description && { description: p.description }) }, doc);
    argumentLocations[p.name] = p.in === 'path' ? 'path' : 'query';
    if (p.required) required.push(p.name);
  }
  const content = op.requestBody?.content['application/json'];
  if (content) {
    const body = deref(content.schema, doc) as JsonSchema;
    const fields = body.type === 'object' && typeof body.properties === 'object' ? (body.properties as Record<string, unknown>) : undefined;
    const clash = fields && Object.keys(fields).some((k) => k in properties);
    if (fields && Object.keys(fields).length > 0 && !clash) {
      const bodyRequired = Array.isArray(body.required) ? (body.required as string[]) : [];
      for (const [name, schema] of Object.entries(fields)) {
        properties[name] = schema;
        argumentLocations[name] = 'body-field';
        if (bodyRequired.includes(name)) required.push(name);
      }
    } else {
      properties.body = body;
      argumentLocations.body = 'body';
      if (op.requestBody?.required) required.push('body');
    }
  }
  return {
    name: toolName(op.operationId),
    description: op.summary ?? op.description ?? `${method.toUpperCase()} ${path}`,
    method: method.toUpperCase(),
    path,
    operationId: op.operationId,
    parameters: { type: 'object', properties, ...(required.length > 0 && { required }), additionalProperties: false },
    argumentLocations,
  };
}

const DYNAMIC: AgentToolsFile['dynamic'] = [
  {
    name: 'list-api-endpoints',
    description: 'Lists the API endpoints you may call: tool name, method, path and what it does.',
    parameters: {
      type: 'object',
      properties: { search: { type: 'string', description: 'Only endpoints whose name, path or description contains this text (case-insensitive)' } },
      additionalProperties: false,
    },
  },
  {
    name: 'get-api-endpoint-schema',
    description: 'The JSON Schema of the arguments of one endpoint from list-api-endpoints.',
    parameters: {
      type: 'object',
      properties: { name: { type: 'string', description: 'Tool name from list-api-endpoints' } },
      required: ['name'],
      additionalProperties: false,
    },
  },
  {
    name: 'invoke-api-endpoint',
    description: 'Calls one endpoint from list-api-endpoints with arguments matching its schema, as the current user.',
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Tool name from list-api-endpoints' },
        arguments: { type: 'object', description: 'Arguments matching get-api-endpoint-schema' },
      },
      required: ['name'],
      additionalProperties: false,
    },
  },
];

/**
 * Builds the agent tool manifest from an OpenAPI document (the one `emitOpenApi` built).
 * @returns the file's object, in document order; deterministic for the same document
 * Source: SPEC §4.11 (apiTools `all`, `dynamic`, `explicit`; parameters only as declared), §7 (400 on an undeclared argument).
 */
export function emitAgentTools(openapi: object): AgentToolsFile {
  const doc = openapi as Doc;
  const all: AgentTool[] = [];
  const explicit: Record<string, string[]> = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    const pathParams = (item.parameters ?? []) as Parameter[];
    for (const method of METHODS) {
      const op = item[method] as Operation | undefined;
      if (!op || op['x-svc-alias-of'] || op['x-svc-agent'] === false) continue;
      const tool = toolOf(path, method, op, pathParams, doc);
      all.push(tool);
      const key = `${tool.method}-${op['x-svc-resource'] ?? path.split('/')[1]}`;
      (explicit[key] ??= []).push(tool.name);
    }
  }
  return { $comment: 'generated by `svc generate` from openapi.json: do not edit', all, dynamic: DYNAMIC, explicit };
}
