/**
 * @module What an agent session needs from the server (session.ts ↔ service.ts): the worker pool that
 * runs its turns, sending events on
 * its channel, running API tools as its identity, credits, the stats callback, the system prompt,
 * summaries for `compact`, and stopping itself when idle.
 */
import type { AgentTool } from '../contract/agent-tools.js';
import type { AgentSettings } from '../contract/settings.js';
import type { AgentUiTool } from '../functions/context.js';
import type { Logger } from '../log.js';
import type { McpServerConfig, McpServerStatus } from './mcp.js';
import type { ThreadStore } from './threads.js';
import type { AgentUploads } from './uploads.js';
import type { ApiToolMode } from './tools.js';
import type { AgentWorkerPool } from './worker-pool.js';
import type { EngineEvent, TurnUsage } from './worker-protocol.js';

/** What a session was started with (read once: a later connect does not change a running session). */
export interface SessionOptions {
  identityId: string;
  /** The identity API tools run as (`actAs`, default `identityId`). */
  actAs: string;
  model?: string;
  callbackUrl?: string;
  uiTools?: Record<string, AgentUiTool>;
  apiTools: ApiToolMode;
  apiToolsAllow?: string[];
}

/** The credit figures of `status`, `credits` and the callback (the credits issue makes them move). */
export interface CreditFigures {
  credits: number;
  sessionCredits: number;
  sessionCreditsLimit: number;
  sessionCreditsUsed: number;
}

export interface AgentHost {
  settings: AgentSettings;
  /** `agent.mcpServers`, resolved; each session connects its own. */
  mcpServers: McpServerConfig[];
  /** How often a session pings its connected MCP servers, ms. */
  mcpPingMs: number;
  threads: ThreadStore;
  /** The attachments of messages (uploads.ts). */
  uploads: AgentUploads;
  /** The worker threads that run the turns of every session (worker-pool.ts). */
  pool: AgentWorkerPool;
  logger: Logger;
  /** Publishes a server frame on a session channel (`data` a JSON string with `_from: "agent"`). */
  send(channel: string, event: EngineEvent): void;
  /**
   * Runs one API tool (or, `dynamic`, one meta-tool) as the session's identity.
   * @returns the status and the text the model reads (`400 …` for an error)
   */
  runApiTool(options: SessionOptions, name: string, args: unknown, dynamic: boolean): Promise<{ status: number; output: string }>;
  /** The API tool (operation) of that name in `agent-tools.json`, for approvals; undefined when none. */
  apiToolOf?(name: string): AgentTool | undefined;
  /** A message refusing a new turn of this identity (credits exhausted, paused), or null. */
  refuseTurn(identityId: string): Promise<string | null>;
  /** Charges a turn's usage; returns the credits it cost. */
  meter(identityId: string, rung: string, usage: TurnUsage): Promise<number>;
  credits(identityId: string): Promise<CreditFigures>;
  /** POSTs the stats callback (SPEC §6.4) when the session has a `callbackUrl`; never throws. */
  callback(options: SessionOptions, payload: Record<string, unknown>): void;
  /** Instructions plus a short description of the app and the caller. */
  systemPrompt(options: SessionOptions): Promise<string>;
  /** One model call that summarises `messages` (for `compact`). */
  summarise(identityId: string, options: SessionOptions, messages: unknown[]): Promise<string>;
  stopSession(identityId: string, reason: 'stopped' | 'idle-stopped' | 'taken-over'): Promise<boolean>;
  /**
   * Told when a session's MCP servers changed (a status, or new connections after a restart), so the
   * session's lease row records them for the admins of every instance; `list` gives the current
   * statuses when the row is written. Never throws.
   */
  mcpChanged(identityId: string, list: () => McpServerStatus[]): void;
  /** Told when a turn has ended and been charged (metrics and traces, docs/operations.md); never throws. */
  turnEnded?(report: TurnReport): void;
}

/** One ended turn as the metrics and traces see it. */
export interface TurnReport {
  identityId: string;
  /** The rung's provider name and model id (unknown rung: `rung` only). */
  rung: string;
  provider?: string;
  model?: string;
  status: 'completed' | 'failed';
  error?: string | null;
  usage: TurnUsage;
  credits: number;
  /** `performance.now()` at the turn's start and end. */
  startedAt: number;
  endedAt: number;
  toolCalls: TurnToolCall[];
  /** When each tool call ran (`performance.now()`), in the order of `toolCalls`. */
  toolTimes: { startedAt: number; endedAt: number }[];
}

/** A tool call of a turn, as in the stats callback. */
export interface TurnToolCall {
  server: string;
  tool: string;
  durationMs: number;
  error?: string;
}
