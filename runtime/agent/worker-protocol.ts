/**
 * @module The messages between the agent sessions (session.ts, main thread) and the pool's worker
 * threads (worker-pool.ts, worker.ts), all structured-clone safe (DESIGN §7). Every message names its
 * turn, so one worker runs the turns of many sessions. The worker drives the model through the AI
 * SDK; tools that touch the app or the world (API tools, UI tools, MCP tools) are executed by the
 * main thread and answered with `tool-result`.
 */

/** Where a tool runs: the app's API (`api`, `dynamic`), the client (`ui`), an MCP server (`mcp`), or the worker itself (`plan`). */
export type ToolKind = 'api' | 'dynamic' | 'ui' | 'mcp' | 'plan';

/** A tool offered to the model: its JSON Schema parameters and where it runs. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  kind: ToolKind;
}

/** One model turn: the whole request the worker sends (history included). */
export interface TurnRequest {
  baseURL: string;
  apiKey?: string;
  /** The provider's key in `agent.providers`. */
  providerName: string;
  modelId: string;
  /** Instructions and the app description, sent as the system message. */
  system: string;
  /** AI SDK model messages: earlier turns (or their summary) and the new user message. */
  messages: unknown[];
  tools: ToolSpec[];
  /** `reasoning_effort` of this turn's requests, when set. */
  reasoningEffort?: 'low' | 'medium' | 'high';
  maxSteps: number;
}

/** Token counts summed over the turn's model calls; `inputTokens` excludes the cached ones. */
export interface TurnUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

export type ToSessionWorker =
  | { type: 'turn'; turnId: string; request: TurnRequest }
  | { type: 'tool-result'; callId: string; ok: boolean; output: string }
  | { type: 'cancel'; turnId: string };

/** A protocol event for the client (SPEC §6.3 engine events), without `_from`. */
export type EngineEvent = Record<string, unknown> & { type: string };

export type FromSessionWorker =
  | { type: 'event'; turnId: string; event: EngineEvent }
  /** What the turn has used so far (finished calls plus the one in flight, estimated until its usage arrives). */
  | { type: 'usage'; turnId: string; usage: TurnUsage }
  | { type: 'tool'; turnId: string; callId: string; name: string; kind: ToolKind; args: unknown }
  /** Why the provider could not be reached (its address, the network error): for the server log only. */
  | { type: 'provider-problem'; turnId: string; detail: string }
  | {
      type: 'done';
      turnId: string;
      status: 'completed' | 'failed';
      error: string | null;
      /** The AI SDK response messages the turn added (assistant and tool), empty when it failed. */
      messages: unknown[];
      usage: TurnUsage;
    };
