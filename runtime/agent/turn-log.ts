/**
 * @module The running turn's log (DESIGN §7a "resumable turns"; docs/agent.md "Joining a running
 * turn"): every frame a session sends on its channel from `turn-started` to `turn-completed` gets the
 * next `seq` of its thread, and is folded into the turn's partial state — its items in the `history`
 * vocabulary (text and reasoning deltas merged, tool states, plan, errors) and what the client is
 * still asked to answer (`pending`: an open UI `tool-call`, an `approval-request`). A client that
 * joins mid-turn gets `historyFrame()`: the stored turns, this turn so far and the `seq` it covers;
 * the live frames it then receives start at `seq + 1`. Kept in memory on the instance that runs the
 * turn; nothing here awaits, so a snapshot is exact at the moment it is taken.
 */
import type { EngineEvent } from './worker-protocol.js';
import type { AttachmentView } from './uploads.js';

/** Frames about the session rather than the turn: they get a `seq` but are not part of the turn's state. */
const ENVELOPE = new Set(['ack', 'status', 'credits', 'info', 'idle-timeout', 'agent-event', 'mcp-list', 'mcp-status', 'thread-list', 'history']);
/** Frames whose `delta` is merged with the one before when it is of the same type. */
const DELTAS = new Set(['text', 'thinking', 'command-output', 'file-output']);
/** Frames that ask the client for an answer; open until `settle(reqId)`. */
const ASKS = new Set(['tool-call', 'approval-request']);

/**
 * The last `seq` used per thread on this instance: a new turn never goes below it, even when its
 * turn before sent frames faster than one a millisecond. Bounded: the oldest threads are forgotten
 * (their next turn starts from the clock, far past them).
 */
const lastSeqOf = new Map<string, number>();
/** Threads remembered in `lastSeqOf`. */
const SEQ_THREADS = 10_000;

/** The `history` frame a client joining a running turn receives (DESIGN §7a). */
export interface RunningHistory {
  type: 'history';
  threadId: string;
  /** The `seq` of the last frame this snapshot covers; live frames go on from `seq + 1`. */
  seq: number;
  /** The stored turns (`user-message` then their items), then this turn: `user-message`, `turn-started`, its items so far. */
  items: Record<string, unknown>[];
  /** Present while a turn runs: the frames still waiting for the client's answer, as sent (with their `reqId`). */
  running: { pending: Record<string, unknown>[] };
}

/** The `user-message` item of `history`: the text, and `attachments` when the message carried any (DESIGN §7a). */
export function userMessageItem(text: string, attachments: AttachmentView[]): Record<string, unknown> {
  return { type: 'user-message', text, ...(attachments.length > 0 && { attachments }) };
}

export class TurnLog {
  private seq: number;
  private readonly items: Record<string, unknown>[] = [];
  private readonly pending = new Map<string, Record<string, unknown>>();

  /**
   * @param threadId - the thread the turn runs on
   * @param userText - the turn's user message
   * @param storedTurns - how many stored turns the thread had when the turn started (a snapshot shows only those)
   * @param attachments - the user message's attachments, as `history` shows them
   */
  constructor(
    readonly threadId: string,
    userText: string,
    readonly storedTurns: number,
    attachments: AttachmentView[] = [],
  ) {
    // At least the wall clock (ms) at the start: increasing on the thread across sessions and instances too.
    this.seq = Math.max((lastSeqOf.get(threadId) ?? 0) + 1, Date.now()) - 1;
    this.items.push(userMessageItem(userText, attachments));
  }

  /** Gives `event` the next `seq` and folds it into the partial state. @returns the event as sent (with `seq`) */
  stamp(event: EngineEvent): EngineEvent {
    this.seq += 1;
    lastSeqOf.delete(this.threadId);
    lastSeqOf.set(this.threadId, this.seq);
    if (lastSeqOf.size > SEQ_THREADS) lastSeqOf.delete(lastSeqOf.keys().next().value!);
    const { type } = event;
    if (ENVELOPE.has(type)) return { ...event, seq: this.seq };
    if (ASKS.has(type)) {
      const reqId = typeof event.reqId === 'string' ? event.reqId : undefined;
      if (reqId !== undefined) this.pending.set(reqId, { ...event });
      // A UI tool call stays in the items as the stored history records it (`tool-start`, then `tool-end` once answered).
      if (type === 'tool-call') this.items.push({ type: 'tool-start', name: event.tool, id: reqId });
      return { ...event, seq: this.seq };
    }
    // An approval's outcome ends its request (approval-gate.ts sends it on answer, denial or timeout).
    if (type === 'approval-resolved' && typeof event.reqId === 'string') this.pending.delete(event.reqId);
    const last = this.items.at(-1);
    if (DELTAS.has(type) && last?.type === type) last.delta = String(last.delta) + String(event.delta);
    else this.items.push({ ...event });
    return { ...event, seq: this.seq };
  }

  /** The client answered (or the wait ended for) the request `reqId`: it is no longer pending. */
  settle(reqId: string): void {
    const asked = this.pending.get(reqId);
    if (!asked) return;
    this.pending.delete(reqId);
    if (asked.type === 'tool-call') this.items.push({ type: 'tool-end', id: reqId });
  }

  /** The `history` frame of this moment: `stored` (the thread's stored items, oldest first) plus this turn so far. */
  historyFrame(stored: Record<string, unknown>[]): RunningHistory {
    return {
      type: 'history',
      threadId: this.threadId,
      seq: this.seq,
      items: [...stored, ...this.items.map((i) => ({ ...i }))],
      running: { pending: [...this.pending.values()].map((p) => ({ ...p })) },
    };
  }
}
