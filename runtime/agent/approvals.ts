/**
 * @module Approval of agent tool calls (issue 34 §1, docs/agent.md "Approvals"): which calls need the
 * user's yes (`agent.approval`), the one-line summary a person reads, and the requests waiting for an
 * answer. A call that needs approval does not run until the client answers `approval { reqId,
 * approved, note? }` with `approved: true`; a denial or no answer within `agent.approvalTimeoutSeconds`
 * tells the model the user declined. A request is bound to its call: answered once, by the session's
 * own identity, while its turn waits; any other answer is ignored and logged.
 */
import type { AgentTool } from '../contract/agent-tools.js';
import type { ApprovalSettings } from '../contract/settings.js';

/** Seconds a call waits for its answer when `agent.approvalTimeoutSeconds` is unset. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 300;

/** Methods `ask-writes` asks for. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What is known of a tool call when deciding: its name as the settings name it, and for API tools the HTTP call. */
export interface ApprovalSubject {
  /** The tool's name; for an MCP tool `mcp:<server>/<tool>`. */
  key: string;
  kind: 'api' | 'mcp';
  /** The API tool's operation (absent for MCP tools and dynamic meta-tools that call nothing). */
  api?: AgentTool;
}

/** True when `name` matches `pattern`, where `*` stands for any characters and `?` for one. */
export function globMatches(pattern: string, name: string): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(name);
}

/**
 * Whether a call needs approval: an exact `tools` entry, else the longest matching glob, else the
 * default (`auto`: never; `ask`: always; `ask-writes`: POST/PUT/PATCH/DELETE API tools and every MCP tool).
 */
export function needsApproval(settings: ApprovalSettings | undefined, subject: ApprovalSubject): boolean {
  const tools = settings?.tools ?? {};
  let rule: string | undefined = tools[subject.key];
  if (rule === undefined) {
    const globs = Object.keys(tools).filter((p) => /[*?]/.test(p) && globMatches(p, subject.key));
    globs.sort((a, b) => b.length - a.length);
    if (globs.length > 0) rule = tools[globs[0]];
  }
  if (rule !== undefined) return rule === 'ask';
  const mode = settings?.default ?? 'auto';
  if (mode === 'ask') return true;
  if (mode === 'auto') return false;
  return subject.kind === 'mcp' || (subject.api !== undefined && WRITE_METHODS.has(subject.api.method.toUpperCase()));
}

const VERBS: Record<string, string> = { POST: 'Create', PUT: 'Replace', PATCH: 'Update', DELETE: 'Delete', GET: 'Read' };

/**
 * One line a person can read: "Delete order #10023", "Create order (customer: 7, total: 12.5)",
 * "Call files/remove". Built from the method, the collection (the path's first segment, singular for
 * one row) and the id or the first body fields; never longer than 160 characters.
 */
export function approvalSummary(subject: ApprovalSubject, args: unknown): string {
  if (subject.kind === 'mcp') return cut(`Call ${subject.key.slice('mcp:'.length)}`);
  const tool = subject.api;
  if (!tool) return cut(`Call ${subject.key}`);
  const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
  const segments = tool.path.split('/').filter(Boolean);
  const idParam = segments.map((s) => /^\{(.+)\}$/.exec(s)?.[1]).find((p) => p !== undefined);
  const collection = (segments.find((s) => !s.startsWith('{') && !s.startsWith('_')) ?? tool.name).toLowerCase();
  const one = idParam !== undefined && a[idParam] !== undefined;
  const noun = one ? singular(collection) : collection;
  let text = `${VERBS[tool.method.toUpperCase()] ?? tool.method} ${noun}${one ? ` #${scalar(a[idParam])}` : ''}`;
  const fields = Object.entries(a).filter(([k]) => k !== idParam && tool.argumentLocations[k] !== 'path');
  const body = fields.length === 1 && tool.argumentLocations[fields[0][0]] === 'body' ? fields[0][1] : Object.fromEntries(fields);
  const shown = body && typeof body === 'object' ? Object.entries(body as Record<string, unknown>).slice(0, 3) : [];
  if (shown.length > 0 && tool.method.toUpperCase() !== 'DELETE') text += ` (${shown.map(([k, v]) => `${k}: ${scalar(v)}`).join(', ')})`;
  return cut(text);
}

function singular(word: string): string {
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

function scalar(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

function cut(s: string): string {
  return s.length > 160 ? `${s.slice(0, 159)}…` : s;
}

/** The answer a waiting call gets: approved, or declined (denied or timed out) with the user's note. */
export type ApprovalAnswer = { approved: true } | { approved: false; reason: 'denied' | 'timeout'; note?: string };

/** What the model reads for a declined call. */
export function declinedOutput(answer: Extract<ApprovalAnswer, { approved: false }>): string {
  const why = answer.reason === 'timeout' ? 'the user declined (no answer in time); nothing was done' : 'the user declined; nothing was done';
  return answer.note ? `${why}. The user's note: ${answer.note}` : why;
}

interface Pending {
  identityId: string;
  resolve(answer: ApprovalAnswer): void;
}

/**
 * The approval requests of one session that wait for an answer, by `reqId`. `answer` settles one at
 * most once; everything else it is given is refused with the reason (for the log).
 */
export class ApprovalWaits {
  private readonly pending = new Map<string, Pending>();
  /** reqIds already answered (or timed out), so a replay is told apart from an unknown id. */
  private readonly used = new Set<string>();

  constructor(private readonly timeoutMs: number) {}

  /** Waits for the answer to `reqId`, asked of `identityId`; `ask` sends the request once the wait is in place. */
  wait(reqId: string, identityId: string, ask: () => void, signal?: AbortSignal): Promise<ApprovalAnswer> {
    return new Promise<ApprovalAnswer>((resolve) => {
      const settle = (answer: ApprovalAnswer): void => {
        if (!this.pending.delete(reqId)) return;
        clearTimeout(timer);
        this.used.add(reqId);
        if (this.used.size > 1000) this.used.delete(this.used.values().next().value!);
        resolve(answer);
      };
      const timer = setTimeout(() => settle({ approved: false, reason: 'timeout' }), this.timeoutMs);
      signal?.addEventListener('abort', () => settle({ approved: false, reason: 'timeout' }), { once: true });
      this.pending.set(reqId, { identityId, resolve: settle });
      ask();
    });
  }

  /**
   * Settles `reqId` with the client's answer.
   * @returns null when it was taken, else why it was ignored
   */
  answer(frame: Record<string, unknown>, fromIdentity: string | null): string | null {
    const reqId = frame.reqId;
    if (typeof reqId !== 'string') return 'approval.reqId must be a string';
    if (typeof frame.approved !== 'boolean') return 'approval.approved must be true or false';
    if (frame.note !== undefined && typeof frame.note !== 'string') return 'approval.note must be a string';
    const waiting = this.pending.get(reqId);
    if (!waiting) return this.used.has(reqId) ? `approval ${reqId} was already answered` : `no approval request ${reqId} is waiting`;
    if (fromIdentity !== waiting.identityId) return `approval ${reqId} answered by another identity (${fromIdentity ?? 'anonymous'})`;
    const note = typeof frame.note === 'string' && frame.note.trim() ? frame.note.slice(0, 1000) : undefined;
    waiting.resolve(frame.approved ? { approved: true } : { approved: false, reason: 'denied', ...(note !== undefined && { note }) });
    return null;
  }

  /** Declines every waiting request (the turn ended). */
  clear(): void {
    for (const p of [...this.pending.values()]) p.resolve({ approved: false, reason: 'timeout' });
  }
}
