/**
 * The running turn's log (runtime/agent/turn-log.ts, DESIGN §7a): consecutive `seq`s that keep
 * increasing on a thread across turns (even past the clock), the partial state in the `history`
 * vocabulary with deltas merged, and pending requests until settled.
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { TurnLog } from '../../../dist/runtime/agent/turn-log.js';

describe('TurnLog', () => {
  it('numbers frames one by one from at least the clock, and a later turn of the thread goes on above the last', () => {
    const threadId = randomUUID();
    const before = Date.now();
    const first = new TurnLog(threadId, 'hi', 0);
    const seqs = Array.from({ length: 5000 }, () => first.stamp({ type: 'text', delta: 'x' }).seq as number);
    expect(seqs[0]).toBeGreaterThanOrEqual(before);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
    // 5000 frames in far less than 5 s: the next turn starts above the last seq, not at the clock.
    const second = new TurnLog(threadId, 'again', 1);
    expect(second.stamp({ type: 'turn-started' }).seq).toBe(seqs.at(-1)! + 1);
    // Another thread starts from the clock.
    expect(new TurnLog(randomUUID(), 'other', 0).stamp({ type: 'turn-started' }).seq).toBeLessThan(seqs.at(-1)!);
  });

  it('folds frames into history items: deltas merged, envelopes left out, UI tool calls pending until settled', () => {
    const log = new TurnLog(randomUUID(), 'Show me', 2);
    log.stamp({ type: 'turn-started' });
    log.stamp({ type: 'thinking-start', id: 'r1' });
    log.stamp({ type: 'thinking', delta: 'Hm' });
    log.stamp({ type: 'thinking', delta: 'm.' });
    log.stamp({ type: 'thinking-end', id: 'r1' });
    log.stamp({ type: 'text', delta: 'Here ' });
    log.stamp({ type: 'status', agent: 'busy', credits: 1 });
    log.stamp({ type: 'text', delta: 'it is.' });
    log.stamp({ type: 'tool-call', tool: 'showBook', params: { id: 'b' }, reqId: 'q1' });
    log.stamp({ type: 'approval-request', reqId: 'a1', tool: 'deleteBook', params: {}, summary: 'delete' });
    const last = log.stamp({ type: 'text', delta: 'Waiting.' });
    const stored = [{ type: 'user-message', text: 'earlier' }];
    let h = log.historyFrame(stored);
    expect(h.seq).toBe(last.seq);
    expect(h.items).toEqual([
      ...stored,
      { type: 'user-message', text: 'Show me' },
      { type: 'turn-started' },
      { type: 'thinking-start', id: 'r1' },
      { type: 'thinking', delta: 'Hmm.' },
      { type: 'thinking-end', id: 'r1' },
      { type: 'text', delta: 'Here it is.' },
      { type: 'tool-start', name: 'showBook', id: 'q1' },
      { type: 'text', delta: 'Waiting.' },
    ]);
    expect(h.running.pending).toEqual([
      { type: 'tool-call', tool: 'showBook', params: { id: 'b' }, reqId: 'q1' },
      { type: 'approval-request', reqId: 'a1', tool: 'deleteBook', params: {}, summary: 'delete' },
    ]);
    log.settle('q1');
    log.settle('a1');
    log.settle('unknown');
    h = log.historyFrame([]);
    expect(h.running.pending).toEqual([]);
    expect(h.items.at(-1)).toEqual({ type: 'tool-end', id: 'q1' });
    // A snapshot is a copy: later frames do not change one already taken.
    log.stamp({ type: 'text', delta: ' more' });
    expect(h.items.at(-2)).toEqual({ type: 'text', delta: 'Waiting.' });
  });
});
