/**
 * @module AG-UI adapter (issue 13 "Beyond the seed"): turns the agent's SPEC §6.3 frames into AG-UI
 * events (`@ag-ui/core` 1.x), so AG-UI front ends (CopilotKit, assistant-ui) can follow an svc agent
 * session. Feed it each parsed server frame of the session channel, in order; it returns the AG-UI
 * events that frame stands for (often none, sometimes several). Stateful: one adapter per channel.
 *
 * Mapping (docs/agent.md "AG-UI"):
 * | svc frame | AG-UI events |
 * |---|---|
 * | `turn-started` | `RUN_STARTED { threadId, runId }` |
 * | `text { delta }` | `TEXT_MESSAGE_START` (first delta of a message), `TEXT_MESSAGE_CONTENT { delta }` |
 * | `thinking-start` / `thinking` / `thinking-end` | `REASONING_START`, `REASONING_MESSAGE_START`, `REASONING_MESSAGE_CONTENT`, `REASONING_MESSAGE_END`, `REASONING_END` |
 * | `tool-start { name, id }` / `tool-end { id }` | `TOOL_CALL_START { toolCallId, toolCallName }` / `TOOL_CALL_END` (an open text message ends first) |
 * | `tool-call { tool, params, reqId }` (UI tool) | `TOOL_CALL_START`, `TOOL_CALL_ARGS { delta: JSON }`, `TOOL_CALL_END` — answer it with svc's `tool-result` |
 * | `plan-updated { steps, explanation? }` | `STATE_SNAPSHOT { snapshot: { plan } }` |
 * | `turn-completed { status: completed }` | `TEXT_MESSAGE_END` (if open), `RUN_FINISHED` |
 * | `turn-completed { status: failed, error }` | `TEXT_MESSAGE_END` (if open), `RUN_ERROR { message: error }` |
 * | `approval-request { reqId, tool, params, summary }` | `CUSTOM { name: "approval-request", value: Interrupt }` — an AG-UI 1.0 `Interrupt` (`id` = reqId, `reason: "tool_approval"`, `message` = summary, `toolCallId`, `metadata: { tool, params }`); the svc run goes on waiting, so it is not a `RUN_FINISHED` interrupt outcome. Answer with svc's `approval` |
 * | `error { willRetry: true }` | `CUSTOM { name: "svc.retry", value: { message } }` |
 * | `history` | `CUSTOM { name: "svc.history", value: frame }`; joined mid-turn (`running`), then the events of that turn so far |
 * | anything else (`status`, `credits`, `info`, …) | `CUSTOM { name: "svc.<type>", value: frame }` |
 */
import { randomUUID } from 'node:crypto';
import type {
  BaseEvent,
  CustomEvent,
  ReasoningMessageContentEvent,
  RunErrorEvent,
  RunFinishedEvent,
  RunStartedEvent,
  StateSnapshotEvent,
  TextMessageContentEvent,
  ToolCallArgsEvent,
  ToolCallEndEvent,
  ToolCallStartEvent,
} from '@ag-ui/core';

/** An AG-UI event as this adapter emits it (`type` is the `EventType` string). */
export type AgUiEvent =
  | RunStartedEvent
  | RunFinishedEvent
  | RunErrorEvent
  | TextMessageContentEvent
  | ToolCallStartEvent
  | ToolCallArgsEvent
  | ToolCallEndEvent
  | ReasoningMessageContentEvent
  | StateSnapshotEvent
  | CustomEvent
  | BaseEvent;

/** A server frame of the agent protocol, parsed (SPEC §6.3); `_from` and unknown fields are ignored. */
export type AgentFrame = { type: string } & Record<string, unknown>;

/**
 * Converts one session's frames to AG-UI events.
 * @param threadId - the AG-UI thread id of the runs (e.g. the session channel, or the svc thread id)
 */
export function agUiAdapter(threadId: string): (frame: AgentFrame) => AgUiEvent[] {
  let runId: string | null = null;
  let messageId: string | null = null;
  let reasoningId: string | null = null;
  const ev = (type: string, fields: Record<string, unknown>) => ({ type, ...fields }) as unknown as AgUiEvent;
  const endMessage = (): AgUiEvent[] => {
    if (messageId === null) return [];
    const id = messageId;
    messageId = null;
    return [ev('TEXT_MESSAGE_END', { messageId: id })];
  };
  const endReasoning = (): AgUiEvent[] => {
    if (reasoningId === null) return [];
    const id = reasoningId;
    reasoningId = null;
    return [ev('REASONING_MESSAGE_END', { messageId: id }), ev('REASONING_END', { messageId: id })];
  };
  const adapt = (frame: AgentFrame): AgUiEvent[] => {
    switch (frame.type) {
      case 'turn-started':
        runId = randomUUID();
        return [ev('RUN_STARTED', { threadId, runId })];
      case 'text': {
        const out: AgUiEvent[] = [...endReasoning()];
        if (messageId === null) {
          messageId = randomUUID();
          out.push(ev('TEXT_MESSAGE_START', { messageId, role: 'assistant' }));
        }
        if (typeof frame.delta === 'string' && frame.delta !== '') out.push(ev('TEXT_MESSAGE_CONTENT', { messageId, delta: frame.delta }));
        return out;
      }
      case 'thinking-start':
        reasoningId = randomUUID();
        return [ev('REASONING_START', { messageId: reasoningId }), ev('REASONING_MESSAGE_START', { messageId: reasoningId, role: 'reasoning' })];
      case 'thinking':
        return reasoningId !== null && typeof frame.delta === 'string' && frame.delta !== ''
          ? [ev('REASONING_MESSAGE_CONTENT', { messageId: reasoningId, delta: frame.delta })]
          : [];
      case 'thinking-end':
        return endReasoning();
      case 'tool-start':
        return [...endMessage(), ev('TOOL_CALL_START', { toolCallId: String(frame.id), toolCallName: String(frame.name) })];
      case 'tool-end':
        return [ev('TOOL_CALL_END', { toolCallId: String(frame.id) })];
      case 'tool-call': {
        const toolCallId = String(frame.reqId ?? randomUUID());
        return [
          ...endMessage(),
          ev('TOOL_CALL_START', { toolCallId, toolCallName: String(frame.tool) }),
          ev('TOOL_CALL_ARGS', { toolCallId, delta: JSON.stringify(frame.params ?? {}) }),
          ev('TOOL_CALL_END', { toolCallId }),
        ];
      }
      case 'plan-updated':
        return [
          ev('STATE_SNAPSHOT', { snapshot: { plan: { steps: frame.steps, ...(frame.explanation !== undefined && { explanation: frame.explanation }) } } }),
        ];
      case 'turn-completed': {
        const out = [...endReasoning(), ...endMessage()];
        const id = runId ?? randomUUID();
        runId = null;
        if (frame.status === 'completed') out.push(ev('RUN_FINISHED', { threadId, runId: id }));
        else out.push(ev('RUN_ERROR', { message: String(frame.error ?? 'failed') }));
        return out;
      }
      case 'approval-request':
        return [...endMessage(), ev('CUSTOM', { name: 'approval-request', value: approvalInterrupt(frame) })];
      case 'error':
        if (frame.willRetry === true) return [ev('CUSTOM', { name: 'svc.retry', value: { message: frame.message } })];
        return [ev('CUSTOM', { name: 'svc.error', value: { message: frame.message } })];
      case 'history':
        return [ev('CUSTOM', { name: 'svc.history', value: withoutMarker(frame) }), ...replayRunning(frame, adapt)];
      default:
        return [ev('CUSTOM', { name: `svc.${frame.type}`, value: withoutMarker(frame) })];
    }
  };
  return adapt;
}

const withoutMarker = (frame: AgentFrame) => Object.fromEntries(Object.entries(frame).filter(([k]) => k !== '_from'));

/**
 * The running turn of a `history` a client got on joining mid-turn (DESIGN §7a), as the events its
 * live frames gave: its items from `turn-started` on, then the requests still pending (a waiting UI
 * tool call told once, whole, from `pending`). None for a `history` without `running`.
 */
function replayRunning(frame: AgentFrame, adapt: (frame: AgentFrame) => AgUiEvent[]): AgUiEvent[] {
  const running = frame.running as { pending?: AgentFrame[] } | undefined;
  if (!running || !Array.isArray(frame.items)) return [];
  const items = frame.items as AgentFrame[];
  const from = items.map((i) => i.type).lastIndexOf('turn-started');
  if (from < 0) return [];
  const pending = running.pending ?? [];
  const waiting = new Set(pending.map((p) => p.reqId));
  return [...items.slice(from).filter((i) => !(i.type === 'tool-start' && waiting.has(i.id))), ...pending].flatMap(adapt);
}

/** An `approval-request` frame as an AG-UI 1.0 `Interrupt` (a tool approval). */
function approvalInterrupt(frame: AgentFrame): Record<string, unknown> {
  const id = String(frame.reqId);
  return {
    id,
    reason: 'tool_approval',
    message: String(frame.summary ?? ''),
    toolCallId: id,
    responseSchema: { type: 'object', properties: { approved: { type: 'boolean' }, note: { type: 'string' } }, required: ['approved'] },
    metadata: { tool: frame.tool, params: frame.params ?? {} },
  };
}
