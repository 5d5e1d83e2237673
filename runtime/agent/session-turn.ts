/**
 * @module The turn loop of an agent session (SPEC §6.3, §6.4; DESIGN §7): turns run one after another;
 * each is refused when the credits say so, loads its thread, hands the model request to the worker pool,
 * relays and records the worker's events, has its tool calls answered (session-tools.ts), and ends
 * once: stored in the thread, charged, and reported in `turn-completed`, `credits` and the stats
 * callback.
 */
import { randomUUID } from 'node:crypto';
import type { AgentHost, SessionOptions } from './host.js';
import type { EngineEvent, FromSessionWorker, ToolSpec } from './worker-protocol.js';
import { RungNotConfiguredError, resolveRung } from './rungs.js';
import { SessionTools, type RunningTurn } from './session-tools.js';
import { TurnLog, userMessageItem, type RunningHistory } from './turn-log.js';
import type { StoredTurn } from './threads.js';
import type { UploadRow } from './uploads.js';
import { threadParts, userContent, type UserPart } from './attachment-parts.js';

/** How long a turn waits for MCP servers still on their first attempt before it starts without them, ms. */
const MCP_FIRST_CONNECT_WAIT_MS = 3000;

/** The outcome of one turn (`prompt`'s result). */
export interface TurnOutcome {
  status: 'completed' | 'failed';
  text: string;
  error?: string;
}

export abstract class SessionTurns extends SessionTools {
  protected turn?: RunningTurn;
  private chain: Promise<unknown> = Promise.resolve();
  protected effort?: 'low' | 'medium' | 'high';
  protected fastNext = false;
  /** Names of the session's own tools, which an MCP tool may not take. */
  private readonly toolNames: ReadonlySet<string>;

  constructor(
    identityId: string,
    channel: string,
    options: SessionOptions,
    private readonly tools: ToolSpec[],
    host: AgentHost,
  ) {
    super(identityId, channel, options, host);
    this.toolNames = new Set(tools.map((t) => t.name));
  }

  protected enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }

  protected runningTurnId(): string | undefined {
    return this.turn?.id;
  }

  /** While a turn runs, every frame gets the thread's next `seq` and is folded into the turn's log (DESIGN §7a). */
  protected override emit(event: EngineEvent): void {
    super.emit(this.turnLog ? this.turnLog.stamp(event) : event);
  }

  /**
   * Calls `join` with the `history` frame of the running turn (none when no turn runs), taken in the
   * same synchronous step: `join` must send the join at once, so no frame falls between the snapshot
   * and the membership (DESIGN §7a; docs/agent.md "Joining a running turn").
   */
  async joinRunning(join: (history?: RunningHistory) => Promise<void>): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const log = this.turnLog;
      if (!log) return join();
      const thread = await this.host.threads.load(this.identityId, log.threadId);
      // The turn ended (and maybe another began) during the read: read again for the turn running now.
      if (this.turnLog !== log) continue;
      const stored = await this.storedItems((thread?.turns ?? []).slice(0, log.storedTurns));
      if (this.turnLog !== log) continue;
      return join(log.historyFrame(stored));
    }
    return join();
  }

  /** The `history` items of stored turns: each `user-message` (with its attachments, urls signed now), then the turn's items. */
  protected async storedItems(turns: StoredTurn[]): Promise<Record<string, unknown>[]> {
    const views = new Map((await this.host.uploads.views(turns.flatMap((t) => t.attachments))).map((v) => [v.uploadId, v]));
    return turns.flatMap((t) => [
      userMessageItem(
        t.userText,
        t.attachments.flatMap((id) => views.get(id) ?? []),
      ),
      ...t.items,
    ]);
  }

  /** Ends the running turn as failed with `error` (worker crash, restart, stop); see the base class. */
  protected failTurn(error: string, turnId?: string): void {
    if (turnId !== undefined && this.turn?.id !== turnId) return;
    for (const wait of this.uiWaits.values()) wait({ ok: false, output: error });
    this.uiWaits.clear();
    if (!this.turn) return;
    this.host.pool.forget(this.turn.id);
    this.turn.done({ status: 'failed', error, messages: [], usage: this.turn.usage });
  }

  protected onWorker(m: FromSessionWorker): void {
    const turn = this.turn;
    if (!turn || m.turnId !== turn.id) return;
    if (m.type === 'event') return this.relay(turn, m.event);
    if (m.type === 'usage') {
      turn.usage = m.usage;
      return;
    }
    if (m.type === 'done') return turn.done(m);
    if (m.type === 'provider-problem') {
      this.host.logger.warn({ identityId: this.identityId, problem: m.detail }, 'the model provider could not be reached');
      return;
    }
    this.answerTool(turn, m.callId, m.name, m.kind, m.args)
      .catch((err: unknown) => {
        this.host.logger.error({ err, identityId: this.identityId, tool: m.name }, 'agent tool call failed');
        return { ok: false, output: '500 the tool call failed' };
      })
      .then((r) => this.host.pool.toolResult(turn.id, m.callId, r.ok, r.output));
  }

  /** Sends a worker event to the client and records it for `history`. */
  private relay(turn: RunningTurn, event: EngineEvent): void {
    this.emit(event);
    if (event.type === 'text') {
      turn.text += String(event.delta);
      turn.pendingText += String(event.delta);
    } else if (event.type === 'plan-updated') this.record(turn, event);
  }

  /** One turn: thread, model request in the worker, persisted result, events and callbacks. */
  protected async runTurn(text: string, model?: string, attachments: UploadRow[] = []): Promise<TurnOutcome> {
    if (this.state === 'stopped') return { status: 'failed', text: '', error: 'the session was closed' };
    const refusal = await this.host.refuseTurn(this.identityId);
    if (refusal) {
      this.emit({ type: 'error', message: refusal });
      return { status: 'failed', text: '', error: refusal };
    }
    if (this.threadId === null) this.threadId = await this.host.threads.createThread(this.identityId, text.trim() || attachments.map((a) => a.name).join(', '));
    const threadId = this.threadId;
    const attachmentIds = attachments.map((a) => a.id);
    await this.host.uploads.bind(attachmentIds, threadId);
    const thread = await this.host.threads.load(this.identityId, threadId);
    this.state = 'busy';
    this.clearIdle();
    const turn: RunningTurn = {
      id: randomUUID(),
      text: '',
      items: [],
      pendingText: '',
      startedAt: performance.now(),
      abort: new AbortController(),
      toolCalls: [],
      toolTimes: [],
      usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 },
      done: () => {},
    };
    let ended = false;
    const finished = new Promise<Parameters<RunningTurn['done']>[0]>(
      (resolve) =>
        (turn.done = (outcome) => {
          ended = true;
          resolve(outcome);
        }),
    );
    this.turn = turn;
    const log = new TurnLog(
      threadId,
      text,
      thread?.turns.length ?? 0,
      attachments.map((a) => this.host.uploads.view(a)),
    );
    this.turnLog = log;
    let completed = false;
    try {
      this.emit({ type: 'turn-started' });
      // The figures cost two reads: only for a session with a stats callback.
      if (this.options.callbackUrl)
        this.host.callback(this.options, { event: 'turn-started', identityId: this.identityId, threadId, ...(await this.host.credits(this.identityId)) });
      let rungName = 'base';
      let modelOf: { provider?: string; model?: string } = {};
      try {
        const rung = resolveRung(this.host.settings, model ?? this.options.model);
        rungName = rung.name;
        modelOf = { provider: rung.providerName, model: rung.rung.model };
        const effort = this.fastNext ? 'low' : this.effort;
        this.fastNext = false;
        await this.mcp.settled(MCP_FIRST_CONNECT_WAIT_MS);
        const system = await this.host.systemPrompt(this.options);
        const parts = await threadParts(this.host.uploads, thread, attachments, rung.rung.files !== false, (err, uploadId) =>
          this.host.logger.warn({ err, identityId: this.identityId, uploadId }, 'agent attachment could not be read'),
        );
        // Handed over as a lifecycle step: a restart or stop meanwhile has ended the turn already.
        await this.serially(async () => {
          if (ended) return;
          this.host.pool.startTurn(
            turn.id,
            {
              baseURL: rung.provider.baseURL,
              apiKey: rung.provider.apiKey,
              providerName: rung.providerName,
              modelId: rung.rung.model,
              system,
              messages: [
                ...modelHistory(thread, parts),
                {
                  role: 'user',
                  content: userContent(
                    text,
                    attachmentIds.flatMap((id) => parts.get(id) ?? []),
                  ),
                },
              ],
              tools: [...this.tools, ...this.mcp.tools(this.toolNames)],
              ...(effort && { reasoningEffort: effort }),
              maxSteps: this.host.settings.maxStepsPerTurn,
            },
            { message: (m) => this.onWorker(m), lost: (error) => this.failTurn(error, turn.id) },
          );
        });
      } catch (err) {
        if (!(err instanceof RungNotConfiguredError)) throw err;
        turn.done({ status: 'failed', error: err.message, messages: [], usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 } });
      }
      const outcome = await finished;
      this.turn = undefined;
      if (turn.pendingText) turn.items.push({ type: 'text', delta: turn.pendingText });
      if (outcome.status === 'failed' && outcome.error !== 'cancelled') this.emit({ type: 'error', message: outcome.error ?? 'the turn failed' });
      const turnCreditsConsumed = await this.host.meter(this.identityId, rungName, outcome.usage);
      this.host.turnEnded?.({
        identityId: this.identityId,
        rung: rungName,
        ...modelOf,
        status: outcome.status,
        error: outcome.error,
        usage: outcome.usage,
        credits: turnCreditsConsumed,
        startedAt: turn.startedAt,
        endedAt: performance.now(),
        toolCalls: turn.toolCalls,
        toolTimes: turn.toolTimes,
      });
      await this.host.threads
        .appendTurn(
          threadId,
          { userText: text, attachments: attachmentIds, messages: outcome.messages, items: turn.items, status: outcome.status, error: outcome.error },
          turnCreditsConsumed,
        )
        .catch((err: unknown) => this.host.logger.error({ err, identityId: this.identityId }, 'agent turn could not be stored'));
      if (this.state === 'busy') this.state = 'idle';
      completed = true;
      this.emit({ type: 'turn-completed', status: outcome.status, ...(outcome.status === 'failed' && { error: outcome.error ?? 'failed' }) });
      this.turnLog = undefined;
      const credits = await this.host.credits(this.identityId);
      this.emit({ type: 'credits', ...credits });
      this.host.callback(this.options, {
        event: 'turn-completed',
        identityId: this.identityId,
        threadId,
        status: outcome.status,
        error: outcome.status === 'failed' ? (outcome.error ?? 'failed') : null,
        ...credits,
        turnCreditsConsumed,
        turnDurationMs: Math.round(performance.now() - turn.startedAt),
        toolCalls: turn.toolCalls,
      });
      return { status: outcome.status, text: turn.text, ...(outcome.status === 'failed' && { error: outcome.error ?? 'failed' }) };
    } catch (err) {
      // The database or the server failed mid-turn: the client still gets the end of its turn.
      this.host.logger.error({ err, identityId: this.identityId }, 'agent turn failed on the server');
      const error = 'the server failed during this turn; try again';
      if (!completed) this.emit({ type: 'turn-completed', status: 'failed', error });
      if (this.turnLog === log) this.turnLog = undefined;
      return { status: 'failed', text: turn.text, error };
    } finally {
      turn.abort.abort();
      if (this.turnLog === log) this.turnLog = undefined;
      if (this.turn === turn) this.turn = undefined;
      if (this.state === 'busy') this.state = 'idle';
      this.armIdle();
    }
  }
}

/**
 * The model messages of a thread: its summary (if compacted), then every later turn, each user message
 * with the parts of its attachments (`parts` by upload id; without them, the text alone).
 */
export function modelHistory(
  thread: { summary: string | null; summaryTurns: number; turns: { userText: string; attachments?: string[]; messages: unknown[] }[] } | null,
  parts?: Map<string, UserPart[]>,
): unknown[] {
  if (!thread) return [];
  const out: unknown[] = [];
  if (thread.summary)
    out.push({ role: 'user', content: `Summary of our conversation so far:\n${thread.summary}` }, { role: 'assistant', content: 'Understood.' });
  for (const t of thread.turns.slice(thread.summaryTurns))
    out.push(
      {
        role: 'user',
        content: userContent(
          t.userText,
          (t.attachments ?? []).flatMap((id) => parts?.get(id) ?? []),
        ),
      },
      ...t.messages,
    );
  return out;
}
