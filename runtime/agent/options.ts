/**
 * @module Checks the options of `ctx.agent` calls (SPEC §4.11 connect table, DESIGN §7 "Function
 * context") into a session's `SessionOptions`; every refusal is a 400 naming the option.
 */
import { HttpError } from '../errors.js';
import type { AgentUiTool } from '../functions/context.js';
import type { SessionOptions } from './host.js';
import { API_TOOL_MODES, type ApiToolMode } from './tools.js';

/**
 * `identityId` of the options.
 * @throws HttpError INVALID_PARAMETER (400) when it is missing or not a non-empty string
 */
export function requireIdentityId(a: Record<string, unknown>): string {
  if (typeof a.identityId !== 'string' || a.identityId === '') throw new HttpError('INVALID_PARAMETER', 'identityId must be a non-empty string');
  return a.identityId;
}

/**
 * `connect`'s own arguments (beside the session options).
 * @throws HttpError INVALID_PARAMETER (400) naming `identityId`, `connectionId`, `message` or `sessionCredits`
 */
export function connectArgs(a: Record<string, unknown>): { identityId: string; connectionId: string; message?: string; sessionCredits?: number } {
  const identityId = requireIdentityId(a);
  if (typeof a.connectionId !== 'string' || a.connectionId === '') throw new HttpError('INVALID_PARAMETER', 'connectionId must be a non-empty string');
  if (a.message !== undefined && typeof a.message !== 'string') throw new HttpError('INVALID_PARAMETER', 'message must be a string');
  if (a.sessionCredits !== undefined && (!Number.isInteger(a.sessionCredits) || (a.sessionCredits as number) < 0))
    throw new HttpError('INVALID_PARAMETER', 'sessionCredits must be an integer ≥ 0');
  return { identityId, connectionId: a.connectionId, message: a.message, sessionCredits: a.sessionCredits as number | undefined };
}

/**
 * `prompt`'s `message`.
 * @throws HttpError INVALID_PARAMETER (400) when it is not a non-empty string
 */
export function promptMessage(a: Record<string, unknown>): string {
  if (typeof a.message !== 'string' || a.message.trim() === '') throw new HttpError('INVALID_PARAMETER', 'message must be a non-empty string');
  return a.message;
}

/**
 * `setCredits`' `sessionCredits`: the identity's new session limit (0 = none).
 * @throws HttpError INVALID_PARAMETER (400) when it is not an integer ≥ 0
 */
export function sessionCreditsLimit(a: Record<string, unknown>): number {
  const limit = a.sessionCredits;
  if (!Number.isInteger(limit) || (limit as number) < 0) throw new HttpError('INVALID_PARAMETER', 'sessionCredits must be an integer ≥ 0 (0 = no limit)');
  return limit as number;
}

/**
 * The session options of connect (or wake/prompt) options.
 * @throws HttpError INVALID_PARAMETER (400) for a wrong-typed option
 */
export function resolveAgentOptions(identityId: string, a: Record<string, unknown>): SessionOptions {
  const str = (name: string): string | undefined => {
    const v = a[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw new HttpError('INVALID_PARAMETER', `${name} must be a string`);
    return v;
  };
  const apiTools = (str('apiTools') ?? 'all') as ApiToolMode;
  if (!API_TOOL_MODES.includes(apiTools)) throw new HttpError('INVALID_PARAMETER', `apiTools must be one of ${API_TOOL_MODES.join(', ')}`);
  const allow = a.apiToolsAllow;
  if (allow !== undefined && (!Array.isArray(allow) || allow.some((x) => typeof x !== 'string')))
    throw new HttpError('INVALID_PARAMETER', 'apiToolsAllow must be an array of "<METHOD>-<name>" strings');
  const uiTools = a.uiTools;
  if (uiTools !== undefined && (typeof uiTools !== 'object' || uiTools === null || Array.isArray(uiTools)))
    throw new HttpError('INVALID_PARAMETER', 'uiTools must be an object of tool name → { description, params?, required?, returns? }');
  const callbackUrl = str('callbackUrl');
  if (callbackUrl !== undefined && !callbackUrl.startsWith('/') && !/^https?:\/\//.test(callbackUrl))
    throw new HttpError('INVALID_PARAMETER', 'callbackUrl must be an absolute http(s) URL or start with "/"');
  return {
    identityId,
    actAs: str('actAs') ?? identityId,
    model: str('model'),
    callbackUrl,
    uiTools: uiTools as Record<string, AgentUiTool> | undefined,
    apiTools,
    apiToolsAllow: allow as string[] | undefined,
  };
}

/**
 * `ask`'s messages: a non-empty array of `{ role: system|user|assistant, content: string }`.
 * @throws HttpError INVALID_PARAMETER (400) naming the first bad entry
 */
export function parseAskMessages(messages: unknown): { role: string; content: string }[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new HttpError('INVALID_PARAMETER', 'messages must be a non-empty array of { role, content }');
  messages.forEach((m: { role?: unknown; content?: unknown }, i) => {
    if (!['system', 'user', 'assistant'].includes(String(m?.role)) || typeof m?.content !== 'string')
      throw new HttpError('INVALID_PARAMETER', `messages[${i}] must be { role: "system" | "user" | "assistant", content: string }`);
  });
  return messages as { role: string; content: string }[];
}
