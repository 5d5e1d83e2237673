/**
 * @module One identity's agent session on the main thread (SPEC §3, §6.3, DESIGN §7): the client
 * events of its channel. Events that change the conversation (`message`, `new-thread`,
 * `thread-resume`, `thread-delete`, `rollback`, `compact`, a backend `prompt`) run in order, each after the one before
 * has finished; `status`, `cancel`, `tool-result`, `approval` (approvals.ts), `effort`, `fast`, `thread-list` and `mcp-list` are
 * answered at once; `restart` is a lifecycle operation. The session is built in layers, one file each:
 * lifecycle (session-lifecycle.ts: state, MCP servers, idle timeout), tool calls
 * (session-tools.ts), the turn loop (session-turn.ts), and the client events here.
 */
import { randomUUID } from 'node:crypto';
import { modelHistory, SessionTurns, type TurnOutcome } from './session-turn.js';
import { AttachmentError, type UploadRow } from './uploads.js';

export type { AgentState } from './session-lifecycle.js';
export type { TurnOutcome } from './session-turn.js';

/** Message ids remembered per session for ack recovery. */
const SEEN_IDS = 1000;
/** A connect `message` equal to a socket message received this recently is the same message (ack recovery). */
const RESENT_WITHIN_MS = 60_000;

export class AgentSession extends SessionTurns {
  private readonly seen = new Map<string, { text: string; at: number }>();

  /** A client frame on the channel (already parsed, not the agent's own), sent by identity `from` (null: anonymous or server). */
  onClientEvent(ev: Record<string, unknown>, from: string | null = null): void {
    if (this.state === 'stopped') return;
    this.armIdle();
    switch (ev.type) {
      case 'message': {
        const text = typeof ev.text === 'string' ? ev.text : '';
        const id = typeof ev.id === 'string' ? ev.id : undefined;
        if (id !== undefined) {
          const repeated = this.seen.has(id);
          this.remember(id, text);
          this.emit({ type: 'ack', id });
          if (repeated) return;
        }
        const attachments = ev.attachments;
        const none = attachments === undefined || (Array.isArray(attachments) && attachments.length === 0);
        if (text.trim() === '' && none) return this.emit({ type: 'error', message: 'message.text must be a non-empty string' });
        this.guard(
          this.enqueue(async () => {
            // Checked in the chain: the thread a turn before this one runs on is the one the uploads may belong to.
            let uploads: UploadRow[];
            try {
              uploads = await this.host.uploads.claim(this.identityId, attachments, this.threadId);
            } catch (err) {
              if (err instanceof AttachmentError) return this.emit({ type: 'error', message: err.message });
              throw err;
            }
            await this.runTurn(text, undefined, uploads);
          }),
          'the turn',
        );
        return;
      }
      case 'status':
        this.guard(
          this.statusEvent().then((e) => this.emit(e)),
          'status',
        );
        return;
      case 'cancel':
        if (this.turn) this.host.pool.cancel(this.turn.id);
        return;
      case 'tool-result': {
        const wait = typeof ev.reqId === 'string' ? this.uiWaits.get(ev.reqId) : undefined;
        if (!wait) return;
        const error = ev.error === undefined || ev.error === null ? undefined : String(typeof ev.error === 'string' ? ev.error : JSON.stringify(ev.error));
        wait(
          error !== undefined ? { ok: false, output: `error: ${error}` } : { ok: true, output: ev.result === undefined ? 'done' : JSON.stringify(ev.result) },
        );
        return;
      }
      case 'approval': {
        const ignored = this.approvals.answer(ev, from);
        if (ignored !== null) this.host.logger.warn({ identityId: this.identityId, from }, `agent approval ignored: ${ignored}`);
        return;
      }
      case 'effort':
        if (ev.level === 'low' || ev.level === 'medium' || ev.level === 'high') this.effort = ev.level;
        else this.emit({ type: 'error', message: 'effort.level must be low, medium or high' });
        return;
      case 'fast':
        this.fastNext = true;
        return;
      case 'thread-list':
        this.guard(
          this.host.threads.list(this.identityId).then((threads) => this.emit({ type: 'thread-list', threads })),
          'thread-list',
        );
        return;
      case 'mcp-list':
        this.emit({ type: 'mcp-list', servers: this.mcp.list() });
        return;
      case 'restart':
        this.guard(this.restart(), 'restart');
        return;
      case 'new-thread':
        this.guard(
          this.enqueue(async () => {
            this.threadId = null;
            await this.host.threads.setCurrentThread(this.identityId, null);
            this.emit({ type: 'info', message: 'new thread' });
          }),
          'new-thread',
        );
        return;
      case 'thread-resume':
        this.guard(
          this.enqueue(() => this.resume(ev.threadId)),
          'thread-resume',
        );
        return;
      case 'thread-delete':
        this.guard(
          this.enqueue(() => this.deleteThread(ev.threadId)),
          'thread-delete',
        );
        return;
      case 'rollback':
        this.guard(
          this.enqueue(() => this.rollback(ev.turns)),
          'rollback',
        );
        return;
      case 'compact':
        this.guard(
          this.enqueue(() => this.compact()),
          'compact',
        );
        return;
    }
  }

  /** Starts a turn with `text` unless it is a message already received over the socket (ack recovery). */
  connectMessage(text: string): void {
    const now = Date.now();
    for (const [id, m] of this.seen) {
      if (m.text === text && now - m.at < RESENT_WITHIN_MS) {
        this.emit({ type: 'ack', id });
        return;
      }
    }
    this.remember(`connect:${randomUUID()}`, text);
    this.guard(
      this.enqueue(() => this.runTurn(text)),
      'the turn',
    );
  }

  /** Runs one turn from the backend and waits for it (`ctx.agent.prompt`). */
  prompt(text: string, model?: string): Promise<TurnOutcome> {
    return this.enqueue(() => this.runTurn(text, model));
  }

  private remember(id: string, text: string): void {
    this.seen.set(id, { text, at: Date.now() });
    if (this.seen.size > SEEN_IDS) this.seen.delete(this.seen.keys().next().value!);
  }

  private async resume(threadId: unknown): Promise<void> {
    const thread = typeof threadId === 'string' ? await this.host.threads.load(this.identityId, threadId) : null;
    if (!thread) return this.emit({ type: 'error', message: `no thread ${JSON.stringify(threadId)} of this identity` });
    this.threadId = thread.id;
    await this.host.threads.setCurrentThread(this.identityId, thread.id);
    this.emit({ type: 'history', threadId: thread.id, items: await this.storedItems(thread.turns) });
  }

  /** `thread-delete { threadId }`: deletes a thread of this identity, its turns and its attachments (bytes too). */
  private async deleteThread(threadId: unknown): Promise<void> {
    const deleted = typeof threadId === 'string' && (await this.host.threads.deleteThread(this.identityId, threadId));
    if (!deleted) return this.emit({ type: 'error', message: `no thread ${JSON.stringify(threadId)} of this identity` });
    await this.host.uploads.deleteThread(threadId);
    if (this.threadId === threadId) this.threadId = null;
    this.emit({ type: 'info', message: 'thread deleted' });
  }

  private async rollback(turns: unknown): Promise<void> {
    const n = turns === undefined ? 1 : Number(turns);
    if (!Number.isInteger(n) || n < 1) return this.emit({ type: 'error', message: 'rollback.turns must be a positive integer' });
    const removed = this.threadId ? await this.host.threads.rollback(this.threadId, n) : 0;
    this.emit({ type: 'info', message: `rolled back ${removed} turn${removed === 1 ? '' : 's'}` });
  }

  /** Summarises the thread with one model call, refused like a turn (paused, no balance, session limit). */
  private async compact(): Promise<void> {
    const refusal = await this.host.refuseTurn(this.identityId);
    if (refusal) return this.emit({ type: 'error', message: refusal });
    const thread = this.threadId ? await this.host.threads.load(this.identityId, this.threadId) : null;
    if (!thread || thread.turns.length === 0) return this.emit({ type: 'info', message: 'nothing to compact' });
    try {
      const summary = await this.host.summarise(this.identityId, this.options, modelHistory(thread));
      await this.host.threads.setSummary(thread.id, summary, thread.turns.length);
      this.emit({ type: 'compacted' });
    } catch (err) {
      this.emit({ type: 'error', message: `compact failed: ${(err as Error).message}` });
    }
  }
}
