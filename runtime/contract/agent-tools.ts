/**
 * @module The shape of `.svc/agent-tools.json` (SPEC §4.11 "Tools the agent may call", DESIGN §7):
 * written by the generator (`generator/emit/agent-tools.ts`) from the OpenAPI document, read by the
 * runtime's agent sessions.
 */
import type { JsonSchema } from './manifest.js';

/** Where a tool argument goes in the HTTP request; `body` carries the whole request body. */
export type ArgumentLocation = 'path' | 'query' | 'body-field' | 'body';

/** One API tool (apiTools `all`): one backend operation. */
export interface AgentTool {
  /** The operationId, fitted to `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  description: string;
  /** Upper-case HTTP method. */
  method: string;
  /** Relative to `/api`, with `{param}` placeholders. */
  path: string;
  operationId: string;
  /** JSON Schema of the arguments object (`additionalProperties: false`: undeclared arguments are refused). */
  parameters: JsonSchema;
  /** Argument name → where it goes. */
  argumentLocations: Record<string, ArgumentLocation>;
}

/** A meta-tool of apiTools `dynamic` (`list-api-endpoints`, `get-api-endpoint-schema`, `invoke-api-endpoint`). */
export interface DynamicAgentTool {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** `.svc/agent-tools.json`. */
export interface AgentToolsFile {
  $comment: string;
  /** apiTools `all`, in document order. */
  all: AgentTool[];
  /** apiTools `dynamic`. */
  dynamic: DynamicAgentTool[];
  /** apiTools `explicit`: `<METHOD>-<name>` (the form of `apiToolsAllow`) → tool names in `all`. */
  explicit: Record<string, string[]>;
}
