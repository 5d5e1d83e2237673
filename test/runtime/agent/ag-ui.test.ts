/**
 * The AG-UI adapter (runtime/agent/ag-ui.ts): a recorded svc agent session — the frames of one turn
 * with reasoning, an API tool, a UI tool, a plan and streamed text, then a failed turn — fed through
 * the adapter; every event it gives must parse with `@ag-ui/core`'s own schemas, and the sequence must
 * tell an AG-UI client the same story (runs, messages, tool calls, state).
 */
import { describe, expect, it } from 'vitest';
import { EventSchemas } from '@ag-ui/core/schemas';
import { agUiAdapter, type AgentFrame } from '../../../dist/runtime/index.js';

/** Frames as a session channel carries them (`data` strings, parsed), in order. */
const RECORDED: string[] = [
  '{"type":"status","agent":"idle","credits":0,"sessionCredits":0,"_from":"agent"}',
  '{"type":"turn-started","_from":"agent"}',
  '{"type":"thinking-start","id":"r1","_from":"agent"}',
  '{"type":"thinking","delta":"The user wants ","_from":"agent"}',
  '{"type":"thinking","delta":"a book.","_from":"agent"}',
  '{"type":"thinking-end","id":"r1","_from":"agent"}',
  '{"type":"plan-updated","steps":[{"step":"Find the book","status":"inProgress"}],"_from":"agent"}',
  '{"type":"text","delta":"Looking it up","_from":"agent"}',
  '{"type":"tool-start","name":"listBook","id":"c1","_from":"agent"}',
  '{"type":"tool-end","id":"c1","_from":"agent"}',
  '{"type":"tool-call","tool":"showBook","params":{"id":"b-1"},"reqId":"u1","_from":"agent"}',
  '{"type":"text","delta":"Here is ","_from":"agent"}',
  '{"type":"text","delta":"Dune.","_from":"agent","future":"ignored"}',
  '{"type":"turn-completed","status":"completed","_from":"agent"}',
  '{"type":"credits","credits":12,"sessionCredits":0,"_from":"agent"}',
  '{"type":"turn-started","_from":"agent"}',
  '{"type":"error","message":"the model provider answered 503; retrying","willRetry":true,"_from":"agent"}',
  '{"type":"turn-completed","status":"failed","error":"the model provider answered 500","_from":"agent"}',
];

describe('AG-UI adapter', () => {
  const events = (() => {
    const adapt = agUiAdapter('thread-1');
    return RECORDED.flatMap((data) => adapt(JSON.parse(data) as AgentFrame));
  })();

  it('gives only events that @ag-ui/core accepts', () => {
    for (const e of events) expect(() => EventSchemas.parse(e), JSON.stringify(e)).not.toThrow();
  });

  it('maps the recorded session to runs, messages, reasoning, tool calls and state', () => {
    expect(events.map((e) => e.type)).toEqual([
      'CUSTOM',
      'RUN_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'STATE_SNAPSHOT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
      'CUSTOM',
      'RUN_STARTED',
      'CUSTOM',
      'RUN_ERROR',
    ]);
    const e = events as any[];
    expect(e[1]).toMatchObject({ threadId: 'thread-1' });
    expect(e[21]).toMatchObject({ threadId: 'thread-1', runId: e[1].runId });
    expect(e[8].snapshot).toEqual({ plan: { steps: [{ step: 'Find the book', status: 'inProgress' }] } });
    expect(e[12]).toMatchObject({ toolCallName: 'listBook', toolCallId: 'c1' });
    expect(e[14]).toMatchObject({ toolCallName: 'showBook', toolCallId: 'u1' });
    expect(JSON.parse(e[15].delta)).toEqual({ id: 'b-1' });
    expect(e[18].messageId).toBe(e[17].messageId);
    expect(e[18].delta + e[19].delta).toBe('Here is Dune.');
    expect(e[22]).toMatchObject({ name: 'svc.credits', value: { type: 'credits', credits: 12 } });
    expect(e[22].value._from).toBeUndefined();
    expect(e[24]).toMatchObject({ name: 'svc.retry' });
    expect(e[25]).toMatchObject({ message: 'the model provider answered 500' });
  });

  it('a history of a running turn (joined mid-turn, DESIGN §7a) gives the events of the turn so far, then the live frames go on', () => {
    const adapt = agUiAdapter('thread-2');
    const history = {
      type: 'history',
      threadId: 't',
      seq: 7,
      items: [
        { type: 'user-message', text: 'earlier' },
        { type: 'text', delta: 'Earlier answer.' },
        { type: 'user-message', text: 'Show me Dune' },
        { type: 'turn-started' },
        { type: 'text', delta: 'Here is ' },
        { type: 'tool-start', name: 'showBook', id: 'u1' },
      ],
      running: { pending: [{ type: 'tool-call', tool: 'showBook', params: { id: 'b-1' }, reqId: 'u1' }] },
      _from: 'agent',
    };
    const out = [history, { type: 'text', delta: 'Dune.', seq: 8 }, { type: 'turn-completed', status: 'completed', seq: 9 }].flatMap((f) =>
      adapt(f as AgentFrame),
    ) as any[];
    for (const e of out) expect(() => EventSchemas.parse(e), JSON.stringify(e)).not.toThrow();
    expect(out.map((e) => e.type)).toEqual([
      'CUSTOM',
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(out[0]).toMatchObject({ name: 'svc.history', value: { seq: 7 } });
    expect(out[5]).toMatchObject({ toolCallId: 'u1', toolCallName: 'showBook' });
    expect(out[11]).toMatchObject({ threadId: 'thread-2', runId: out[1].runId });
    // A history after thread-resume (nothing running) stays one CUSTOM event.
    expect(agUiAdapter('t')({ type: 'history', items: history.items } as AgentFrame).map((e) => e.type)).toEqual(['CUSTOM']);
  });
});
