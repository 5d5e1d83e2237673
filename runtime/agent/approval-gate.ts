/**
 * @module The approval step of a session's API and MCP tool calls (issue 34 §1; approvals.ts has the
 * rules): a call that needs approval sends `approval-request { reqId, tool, params, summary }` and waits;
 * its outcome is sent as `approval-resolved` and kept in the thread's transcript as an `approval` item.
 */
import type { AgentTool } from '../contract/agent-tools.js';
import type { AgentSettings } from '../contract/settings.js';
import { approvalSummary, declinedOutput, needsApproval, type ApprovalSubject, type ApprovalWaits } from './approvals.js';
import type { EngineEvent } from './worker-protocol.js';

/** What the gate needs of the session and its running turn. */
export interface GateContext {
  settings: AgentSettings;
  identityId: string;
  waits: ApprovalWaits;
  apiToolOf(name: string): AgentTool | undefined;
  mcpFind(name: string): { server: string; tool: string } | undefined;
  emit(event: EngineEvent): void;
  /** Adds an item to the turn's transcript (thread history). */
  record(item: Record<string, unknown>): void;
  /** Aborted when the turn ends (cancel, restart): a waiting request is then declined. */
  signal: AbortSignal;
}

/** The call as the approval rules see it, or null for a call that never asks (UI tools, meta-tools that call nothing). */
function subjectOf(ctx: GateContext, name: string, kind: string, args: unknown): { subject: ApprovalSubject; params: unknown } | null {
  if (kind === 'mcp') {
    const target = ctx.mcpFind(name);
    return { subject: { key: `mcp:${target ? `${target.server}/${target.tool}` : name}`, kind: 'mcp' }, params: args ?? {} };
  }
  if (kind === 'api') return { subject: { key: name, kind: 'api', api: ctx.apiToolOf(name) }, params: args ?? {} };
  if (kind === 'dynamic' && name === 'invoke-api-endpoint') {
    const a = (args ?? {}) as { name?: unknown; arguments?: unknown };
    const api = typeof a.name === 'string' ? ctx.apiToolOf(a.name) : undefined;
    return api ? { subject: { key: api.name, kind: 'api', api }, params: a.arguments ?? {} } : null;
  }
  return null;
}

/**
 * Asks for approval when the settings say so and waits for the answer.
 * @returns null when the call may run, else the text the model reads instead of the tool's answer
 */
export async function approvalGate(ctx: GateContext, callId: string, name: string, kind: string, args: unknown): Promise<string | null> {
  const found = subjectOf(ctx, name, kind, args);
  if (!found || !needsApproval(ctx.settings.approval, found.subject)) return null;
  const { subject, params } = found;
  const summary = approvalSummary(subject, params);
  const tool = subject.key;
  const answer = await ctx.waits.wait(callId, ctx.identityId, () => ctx.emit({ type: 'approval-request', reqId: callId, tool, params, summary }), ctx.signal);
  const outcome = answer.approved ? { approved: true } : { approved: false, reason: answer.reason, ...(answer.note !== undefined && { note: answer.note }) };
  ctx.emit({ type: 'approval-resolved', reqId: callId, ...outcome });
  ctx.record({ type: 'approval', reqId: callId, tool, summary, ...outcome });
  return answer.approved ? null : declinedOutput(answer);
}
