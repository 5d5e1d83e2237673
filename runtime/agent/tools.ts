/**
 * @module The tools of an agent session (SPEC §4.11 "Tools the agent may call", DESIGN §7): API tools
 * from `.svc/agent-tools.json` for `apiTools` `all`, `dynamic` (three meta-tools) and `explicit`
 * (`apiToolsAllow` entries `<METHOD>-<name>`), the client's uiTools, and the built-in `update_plan`.
 * API tools run in-process as the session's identity through the same core as HTTP (STYLE §10.15):
 * collections, views, queries and externals through the in-process API client, functions through the
 * function invoker, `/_me` from the caller. Arguments are checked against the tool's JSON Schema first:
 * an undeclared or wrong-typed argument answers the model `400 …` without calling the API.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { AgentTool, AgentToolsFile } from '../contract/agent-tools.js';
import type { AgentUiTool } from '../functions/context.js';
import type { ToolSpec } from './worker-protocol.js';
import { HttpError } from '../errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Most characters of a tool's answer the model sees; longer answers are cut with a note. */
export const MAX_TOOL_OUTPUT_CHARS = 60_000;

/** The built-in plan tool: every call replaces the plan the client shows (`plan-updated`). */
export const UPDATE_PLAN: ToolSpec = {
  name: 'update_plan',
  kind: 'plan',
  description: 'Shows the user your plan for this request. Call it with the whole plan each time a step starts or finishes.',
  parameters: {
    type: 'object',
    properties: {
      steps: {
        type: 'array',
        items: {
          type: 'object',
          properties: { step: { type: 'string' }, status: { type: 'string', enum: ['pending', 'inProgress', 'completed'] } },
          required: ['step', 'status'],
          additionalProperties: false,
        },
      },
      explanation: { type: 'string' },
    },
    required: ['steps'],
    additionalProperties: false,
  },
};

/** apiTools values (SPEC §4.11). */
export const API_TOOL_MODES = ['all', 'dynamic', 'explicit', 'none'] as const;
export type ApiToolMode = (typeof API_TOOL_MODES)[number];

/**
 * The JSON Schema object of a uiTools entry's `params` (SPEC §2: a map of name → `{ type, description?,
 * enum? }`, or a full schema with `type: object`), `required` from the entry when the map form is used.
 */
export function uiToolParameters(entry: AgentUiTool): Record<string, unknown> {
  const params = entry.params as Record<string, unknown> | undefined;
  if (params && params.type === 'object' && typeof params.properties === 'object') return params;
  return { type: 'object', properties: params ?? {}, ...(entry.required && { required: entry.required }) };
}

/**
 * The tools a session offers, in order: API tools of the mode, uiTools, `update_plan`.
 * @throws HttpError INVALID_PARAMETER (400) for an unknown mode, an `apiToolsAllow` entry that names
 *   nothing, or a uiTools entry without a description
 */
export function sessionTools(
  file: AgentToolsFile,
  mode: ApiToolMode,
  allow: string[] | undefined,
  uiTools: Record<string, AgentUiTool> | undefined,
): ToolSpec[] {
  const specs: ToolSpec[] = [];
  const api = (t: AgentTool): ToolSpec => ({ name: t.name, description: t.description, parameters: t.parameters, kind: 'api' });
  if (mode === 'all') specs.push(...file.all.map(api));
  else if (mode === 'dynamic') specs.push(...file.dynamic.map((t) => ({ ...t, kind: 'dynamic' as const })));
  else if (mode === 'explicit') {
    for (const entry of allow ?? []) {
      const names = file.explicit[entry];
      if (!names)
        throw new HttpError('INVALID_PARAMETER', `apiToolsAllow entry ${JSON.stringify(entry)} names no operation (form: <METHOD>-<name>, e.g. GET-Product)`);
      for (const name of names) specs.push(api(file.all.find((t) => t.name === name)!));
    }
  }
  for (const [name, entry] of Object.entries(uiTools ?? {})) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new HttpError('INVALID_PARAMETER', `uiTools name ${JSON.stringify(name)} must match ^[a-zA-Z0-9_-]{1,64}$`);
    if (typeof entry?.description !== 'string') throw new HttpError('INVALID_PARAMETER', `uiTools.${name}.description must be a string`);
    const at = specs.findIndex((s) => s.name === name);
    if (at >= 0) specs.splice(at, 1);
    specs.push({ name, description: entry.description, parameters: uiToolParameters(entry), kind: 'ui' });
  }
  specs.push(UPDATE_PLAN);
  return specs;
}

/** An HTTP-shaped call of one API tool: method, path under `/api`, query and body. */
export interface ToolCall {
  tool: AgentTool;
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

/** Checks tool arguments and builds calls; one per session (schemas compiled on first use). */
export class ToolCaller {
  /** Made on the first tool call, not at start-up. */
  private ajv?: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(public file: AgentToolsFile) {}

  /** Serves the tools of a new version of the app (`svc dev`); sessions started later offer them. */
  replace(file: AgentToolsFile): void {
    this.file = file;
    this.compiled.clear();
  }

  /** The API tool of that name, or undefined. */
  find(name: string): AgentTool | undefined {
    return this.file.all.find((t) => t.name === name);
  }

  /**
   * The HTTP call an API tool's arguments make.
   * @throws HttpError INVALID_PARAMETER (400) naming the argument that is undeclared or of the wrong type
   */
  callOf(tool: AgentTool, args: unknown): ToolCall {
    let validate = this.compiled.get(tool.name);
    if (!validate) {
      this.ajv ??= addFormats(new Ajv({ allErrors: false, strict: false }));
      this.compiled.set(tool.name, (validate = this.ajv.compile(tool.parameters)));
    }
    const input = args ?? {};
    if (!validate(input)) {
      const e = validate.errors![0];
      const where = e.instancePath ? `argument ${e.instancePath.slice(1).replace(/\//g, '.')}` : 'arguments';
      const extra = e.keyword === 'additionalProperties' ? ` (undeclared argument "${String(e.params.additionalProperty)}")` : '';
      throw new HttpError('INVALID_PARAMETER', `${where} ${e.message ?? 'is not valid'}${extra}; nothing was called`);
    }
    let path = tool.path;
    const query: Record<string, string> = {};
    let body: unknown;
    const fields: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(input as Record<string, unknown>)) {
      switch (tool.argumentLocations[name]) {
        case 'path':
          path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
          break;
        case 'query':
          query[name] = typeof value === 'string' ? value : JSON.stringify(value);
          break;
        case 'body':
          body = value;
          break;
        case 'body-field':
          fields[name] = value;
          break;
      }
    }
    if (Object.keys(fields).length > 0) body = { ...(typeof body === 'object' && body !== null ? body : {}), ...fields };
    return { tool, method: tool.method, path, query, body };
  }

  /** `list-api-endpoints`: name, method, path and description of every API tool, filtered by `search`. */
  listEndpoints(search: unknown): string {
    const needle = typeof search === 'string' ? search.toLowerCase() : '';
    const rows = this.file.all
      .filter((t) => !needle || `${t.name} ${t.path} ${t.description}`.toLowerCase().includes(needle))
      .map((t) => ({ name: t.name, method: t.method, path: t.path, description: t.description }));
    return JSON.stringify(rows);
  }
}

/** A tool answer as the model reads it: the body as JSON, prefixed by the status when it is an error. */
export function toolOutput(status: number, body: unknown): string {
  const text = body === undefined || body === null ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  const out = status >= 200 && status < 300 ? text || String(status) : `${status} ${text}`;
  return out.length > MAX_TOOL_OUTPUT_CHARS ? `${out.slice(0, MAX_TOOL_OUTPUT_CHARS)}… (cut at ${MAX_TOOL_OUTPUT_CHARS} characters; ask for fewer rows)` : out;
}
