/**
 * @module The tool calls of an agent session's turn, answered on the main thread for its worker
 * (SPEC §6.3, §8; DESIGN §7): API tools run as the session's identity (`tool-start`/`tool-end`), UI
 * tools sent to the client as `tool-call` and answered by its `tool-result` (or failed after
 * `UI_TOOL_TIMEOUT_MS`), MCP tools wrapped in `mcp-tool-start`/`mcp-tool-end`. Each is recorded in the
 * turn's history items and in the stats callback's `toolCalls`.
 */
import { approvalGate, type GateContext } from './approval-gate.js';
import { ApprovalWaits, DEFAULT_APPROVAL_TIMEOUT_SECONDS } from './approvals.js';
import { argsPreview } from './mcp.js';
import { SessionLifecycle } from './session-lifecycle.js';
import type { TurnUsage } from './worker-protocol.js';
import type { TurnLog } from './turn-log.js';

/** How long a UI tool call waits for the client's `tool-result` (SPEC §8), ms. */
export const UI_TOOL_TIMEOUT_MS = 30_000;

/** The state of the running turn that tool calls record into (session-turn.ts runs it). */
export interface RunningTurn {
  id: string;
  text: string;
  items: Record<string, unknown>[];
  pendingText: string;
  startedAt: number;
  /** Aborted when the turn ends: stops its MCP calls still under way. */
  abort: AbortController;
  toolCalls: { server: string; tool: string; durationMs: number; error?: string }[];
  /** When each of `toolCalls` ran (`performance.now()`), for the turn's trace. */
  toolTimes: { startedAt: number; endedAt: number }[];
  /** What the worker last reported the turn has used (charged if the worker is stopped mid-turn). */
  usage: TurnUsage;
  done(outcome: { status: 'completed' | 'failed'; error: string | null; messages: unknown[]; usage: TurnUsage }): void;
}

export abstract class SessionTools extends SessionLifecycle {
  /** UI tool calls waiting for the client's `tool-result`, by `reqId`. */
  protected readonly uiWaits = new Map<string, (r: { ok: boolean; output: string }) => void>();
  /** The running turn's `seq` and partial state, from `turn-started` to `turn-completed` (turn-log.ts). */
  protected turnLog?: TurnLog;
  /** API and MCP tool calls waiting for the user's approval (approvals.ts), by `reqId`. */
  protected readonly approvals = new ApprovalWaits((this.host.settings.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS) * 1000);

  protected record(turn: RunningTurn, item: Record<string, unknown>): void {
    if (turn.pendingText) turn.items.push({ type: 'text', delta: turn.pendingText });
    turn.pendingText = '';
    turn.items.push(item);
  }

  protected async answerTool(turn: RunningTurn, callId: string, name: string, kind: string, args: unknown): Promise<{ ok: boolean; output: string }> {
    const started = performance.now();
    if (kind === 'ui') {
      this.record(turn, { type: 'tool-start', name, id: callId });
      const answer = await new Promise<{ ok: boolean; output: string }>((resolve) => {
        const timer = setTimeout(
          () => resolve({ ok: false, output: `error: the client did not answer ${name} within ${UI_TOOL_TIMEOUT_MS / 1000} seconds` }),
          UI_TOOL_TIMEOUT_MS,
        );
        this.uiWaits.set(callId, (r) => {
          clearTimeout(timer);
          resolve(r);
        });
        this.emit({ type: 'tool-call', tool: name, params: args ?? {}, reqId: callId });
      });
      this.uiWaits.delete(callId);
      this.turnLog?.settle(callId);
      turn.items.push({ type: 'tool-end', id: callId });
      turn.toolCalls.push({ server: 'ui', tool: name, durationMs: Math.round(performance.now() - started), ...(!answer.ok && { error: answer.output }) });
      turn.toolTimes.push({ startedAt: started, endedAt: performance.now() });
      return answer;
    }
    const declined = await approvalGate(this.gate(turn), callId, name, kind, args);
    if (declined !== null) return { ok: false, output: declined };
    if (kind === 'mcp') return this.callMcp(turn, callId, name, args, started);
    this.emit({ type: 'tool-start', name, id: callId });
    this.record(turn, { type: 'tool-start', name, id: callId });
    const answer = await this.host.runApiTool(this.options, name, args, kind === 'dynamic');
    this.emit({ type: 'tool-end', id: callId });
    turn.items.push({ type: 'tool-end', id: callId });
    turn.toolCalls.push({
      server: 'api',
      tool: name,
      durationMs: Math.round(performance.now() - started),
      ...(answer.status >= 400 && { error: answer.output.slice(0, 200) }),
    });
    turn.toolTimes.push({ startedAt: started, endedAt: performance.now() });
    return { ok: answer.status < 400, output: answer.output };
  }

  private gate(turn: RunningTurn): GateContext {
    return {
      settings: this.host.settings,
      identityId: this.identityId,
      waits: this.approvals,
      apiToolOf: (n) => this.host.apiToolOf?.(n),
      mcpFind: (n) => this.mcp.find(n),
      emit: (e) => this.emit(e),
      record: (item) => this.record(turn, item),
      signal: turn.abort.signal,
    };
  }

  /** An MCP tool call wrapped in `mcp-tool-start`/`mcp-tool-end`; a failure goes to the model, the event and `toolCalls`. */
  private async callMcp(turn: RunningTurn, callId: string, name: string, args: unknown, started: number): Promise<{ ok: boolean; output: string }> {
    const target = this.mcp.find(name) ?? { server: 'mcp', tool: name };
    const start = { type: 'mcp-tool-start', id: callId, server: target.server, tool: target.tool, argsPreview: argsPreview(args) };
    this.emit(start);
    this.record(turn, start);
    const result = await this.mcp.call(name, args, turn.abort.signal);
    const durationMs = Math.round(performance.now() - started);
    const end = { type: 'mcp-tool-end', id: callId, durationMs, ...(result.error !== undefined && { error: result.error }) };
    this.emit(end);
    turn.items.push(end);
    turn.toolCalls.push({ server: result.server, tool: result.tool, durationMs, ...(result.error !== undefined && { error: result.error }) });
    turn.toolTimes.push({ startedAt: started, endedAt: performance.now() });
    return { ok: result.error === undefined, output: result.output };
  }
}
