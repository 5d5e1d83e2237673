/**
 * @module One identity's agent session on the main thread (SPEC §3, §6.3, DESIGN §7): its worker
 * thread, its state (`starting`, `idle`, `busy`, `stopped`), the client events of its channel, turns
 * (queued one after another, persisted in its thread), tool calls answered for the worker, the idle
 * timeout, the stats callback and the session's MCP servers (mcp.ts). Events that change the
 * conversation (`message`, `new-thread`, `thread-resume`, `rollback`, `compact`, a backend `prompt`)
 * run in order, each after the one before has finished; `status`, `cancel`, `tool-result`, `effort`,
 * `fast`, `thread-list` and `mcp-list` are answered at once. Lifecycle operations — start, `restart`,
 * stop (close, idle stop, a takeover elsewhere) and handing a turn to the worker — run one at a time
 * in their own chain, so a burst of `restart` frames leaves one worker and one set of MCP servers.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { AgentHost, SessionOptions } from './host.js';
import type { EngineEvent, FromSessionWorker, ToolSpec, TurnUsage } from './worker-protocol.js';
import { RungNotConfiguredError, resolveRung } from './rungs.js';
import { argsPreview, McpServers } from './mcp.js';

/** The state of `status.agent` (DESIGN §7). */
export type AgentState = 'starting' | 'idle' | 'busy' | 'stopped';

/** How long a UI tool call waits for the client's `tool-result` (SPEC §8), ms. */
export const UI_TOOL_TIMEOUT_MS = 30_000;
/** Message ids remembered per session for ack recovery. */
const SEEN_IDS = 1000;
/** A connect `message` equal to a socket message received this recently is the same message (ack recovery). */
const RESENT_WITHIN_MS = 60_000;
/** How long a turn waits for MCP servers still on their first attempt before it starts without them, ms. */
const MCP_FIRST_CONNECT_WAIT_MS = 3000;

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** The outcome of one turn (`prompt`'s result). */
export interface TurnOutcome {
  status: 'completed' | 'failed';
  text: string;
  error?: string;
}

interface RunningTurn {
  id: string;
  text: string;
  items: Record<string, unknown>[];
  pendingText: string;
  startedAt: number;
  /** Aborted when the turn ends: stops its MCP calls still under way. */
  abort: AbortController;
  toolCalls: { server: string; tool: string; durationMs: number; error?: string }[];
  /** What the worker last reported the turn has used (charged if the worker is stopped mid-turn). */
  usage: TurnUsage;
  done(outcome: { status: 'completed' | 'failed'; error: string | null; messages: unknown[]; usage: TurnUsage }): void;
}

export class AgentSession {
  state: AgentState = 'starting';
  readonly startedAt = Math.floor(Date.now() / 1000);
  threadId: string | null = null;
  private worker?: Worker;
  private turn?: RunningTurn;
  private chain: Promise<unknown> = Promise.resolve();
  /** Lifecycle operations (start, restart, stop, spawning a worker for a turn) run one at a time, in this chain. */
  private lifecycle: Promise<unknown> = Promise.resolve();
  /** A restart waiting in `lifecycle`: restarts asked for meanwhile are the same restart. */
  private pendingRestart?: Promise<void>;
  private readonly seen = new Map<string, { text: string; at: number }>();
  private readonly uiWaits = new Map<string, (r: { ok: boolean; output: string }) => void>();
  private effort?: 'low' | 'medium' | 'high';
  private fastNext = false;
  private idleTimer?: NodeJS.Timeout;
  private warnTimer?: NodeJS.Timeout;
  private mcp: McpServers;
  /** Names of the session's own tools, which an MCP tool may not take. */
  private readonly toolNames: ReadonlySet<string>;

  constructor(
    readonly identityId: string,
    /** Wire name of the session channel (`<api-name>:<channelName>`). */
    readonly channel: string,
    readonly options: SessionOptions,
    private readonly tools: ToolSpec[],
    private readonly host: AgentHost,
  ) {
    this.mcp = this.mcpServers();
    this.toolNames = new Set(tools.map((t) => t.name));
  }

  /** Reads the identity's current thread and starts the worker; `agent-event started`. */
  start(): Promise<void> {
    return this.serially(async () => {
      this.threadId = (await this.host.threads.session(this.identityId)).threadId;
      if (this.state === 'stopped') return;
      this.spawn();
      this.mcp.start();
      this.state = 'idle';
      this.emit({ type: 'agent-event', event: { name: 'started', at: unixNow() } });
      this.armIdle();
    });
  }

  /**
   * Stops the worker (after the lifecycle operations before it); any running turn fails (`cancelled`).
   * `taken-over` (another instance holds the session now) stops it without a word on the channel.
   */
  stop(reason: 'stopped' | 'idle-stopped' | 'taken-over'): Promise<void> {
    return this.serially(async () => {
      if (this.state === 'stopped') return;
      this.clearIdle();
      this.state = 'stopped';
      this.failTurn('cancelled');
      const worker = this.worker;
      this.worker = undefined;
      await Promise.all([worker?.terminate(), this.mcp.close()]);
      // The instance that took the session over speaks on the channel now.
      if (reason === 'taken-over') return;
      this.emit({ type: 'agent-event', event: { name: reason, at: unixNow() } });
      this.emit(await this.statusEvent());
    });
  }

  /** A client frame on the channel (already parsed, not the agent's own). */
  onClientEvent(ev: Record<string, unknown>): void {
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
        if (text.trim() === '') return this.emit({ type: 'error', message: 'message.text must be a non-empty string' });
        this.guard(
          this.enqueue(() => this.runTurn(text)),
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
        if (this.turn) this.worker?.postMessage({ type: 'cancel', turnId: this.turn.id });
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

  /** `status`: state, the app's credit figure and the identity's session credits. */
  async statusEvent(): Promise<EngineEvent> {
    const credits = await this.host.credits(this.identityId);
    return { type: 'status', agent: this.state, ...credits };
  }

  /** Runs `work` without waiting; a failure (the database is down, …) is logged and told to the client, never thrown. */
  private guard(work: Promise<unknown>, what: string): void {
    work.catch((err: unknown) => {
      this.host.logger.error({ err, identityId: this.identityId }, `agent ${what} failed`);
      this.emit({ type: 'error', message: `${what} failed on the server; try again` });
    });
  }

  /** Runs a lifecycle operation after the ones before it (a burst of `restart` frames never runs two at once). */
  private serially(work: () => Promise<void>): Promise<void> {
    const next = this.lifecycle.then(work, work);
    this.lifecycle = next.catch(() => {});
    return next;
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => {});
    return next;
  }

  private remember(id: string, text: string): void {
    this.seen.set(id, { text, at: Date.now() });
    if (this.seen.size > SEEN_IDS) this.seen.delete(this.seen.keys().next().value!);
  }

  private emit(event: EngineEvent): void {
    this.host.send(this.channel, event);
  }

  private spawn(): void {
    const worker = new Worker(WORKER_URL);
    this.worker = worker;
    worker.on('message', (m: FromSessionWorker) => this.onWorker(m));
    worker.on('error', (err) => {
      this.host.logger.error({ err, identityId: this.identityId }, 'agent worker failed');
      if (this.worker === worker) this.failTurn(`the agent worker failed: ${err.message}`);
    });
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failTurn(`the agent worker stopped (exit code ${code})`);
    });
  }

  /** The session's MCP servers, reporting their status changes as `mcp-status` events. */
  private mcpServers(): McpServers {
    return new McpServers(
      this.host.mcpServers,
      this.host.logger.child({ identityId: this.identityId }),
      { status: (name, status) => this.emit({ type: 'mcp-status', name, status }) },
      this.host.mcpPingMs,
    );
  }

  /**
   * A new worker and new MCP connections (stdio servers are started again), after the lifecycle
   * operations before it. Restarts asked for while one waits to run join it: one restart, one event.
   */
  private restart(): Promise<void> {
    if (this.pendingRestart) return this.pendingRestart;
    const restart = this.serially(async () => {
      this.pendingRestart = undefined;
      if (this.state === 'stopped') return;
      this.failTurn('restarted');
      const old = this.worker;
      this.worker = undefined;
      await Promise.all([old?.terminate(), this.mcp.close()]);
      this.mcp = this.mcpServers();
      this.mcp.start();
      this.spawn();
      if (this.state !== 'busy') this.state = 'idle';
      this.emit({ type: 'agent-event', event: { name: 'restarted', at: unixNow() } });
    });
    this.pendingRestart = restart;
    return restart;
  }

  /** Ends the running turn as failed with `error` (worker crash, restart, stop). */
  private failTurn(error: string): void {
    for (const wait of this.uiWaits.values()) wait({ ok: false, output: error });
    this.uiWaits.clear();
    if (this.turn) this.turn.done({ status: 'failed', error, messages: [], usage: this.turn.usage });
  }

  private onWorker(m: FromSessionWorker): void {
    const turn = this.turn;
    if (!turn || m.turnId !== turn.id) return;
    if (m.type === 'event') return this.relay(turn, m.event);
    if (m.type === 'usage') {
      turn.usage = m.usage;
      return;
    }
    if (m.type === 'done') return turn.done(m);
    this.answerTool(turn, m.callId, m.name, m.kind, m.args)
      .catch((err: unknown) => {
        this.host.logger.error({ err, identityId: this.identityId, tool: m.name }, 'agent tool call failed');
        return { ok: false, output: '500 the tool call failed' };
      })
      .then((r) => this.worker?.postMessage({ type: 'tool-result', callId: m.callId, ...r }));
  }

  /** Sends a worker event to the client and records it for `history`. */
  private relay(turn: RunningTurn, event: EngineEvent): void {
    this.emit(event);
    if (event.type === 'text') {
      turn.text += String(event.delta);
      turn.pendingText += String(event.delta);
    } else if (event.type === 'plan-updated') this.record(turn, event);
  }

  private record(turn: RunningTurn, item: Record<string, unknown>): void {
    if (turn.pendingText) turn.items.push({ type: 'text', delta: turn.pendingText });
    turn.pendingText = '';
    turn.items.push(item);
  }

  private async answerTool(turn: RunningTurn, callId: string, name: string, kind: string, args: unknown): Promise<{ ok: boolean; output: string }> {
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
      turn.items.push({ type: 'tool-end', id: callId });
      turn.toolCalls.push({ server: 'ui', tool: name, durationMs: Math.round(performance.now() - started), ...(!answer.ok && { error: answer.output }) });
      return answer;
    }
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
    return { ok: answer.status < 400, output: answer.output };
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
    return { ok: result.error === undefined, output: result.output };
  }

  /** One turn: thread, model request in the worker, persisted result, events and callbacks. */
  private async runTurn(text: string, model?: string): Promise<TurnOutcome> {
    if (this.state === 'stopped') return { status: 'failed', text: '', error: 'the session was closed' };
    const refusal = await this.host.refuseTurn(this.identityId);
    if (refusal) {
      this.emit({ type: 'error', message: refusal });
      return { status: 'failed', text: '', error: refusal };
    }
    if (this.threadId === null) this.threadId = await this.host.threads.createThread(this.identityId, text);
    const threadId = this.threadId;
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
    let completed = false;
    try {
      this.emit({ type: 'turn-started' });
      this.host.callback(this.options, { event: 'turn-started', identityId: this.identityId, threadId, ...(await this.host.credits(this.identityId)) });
      let rungName = 'base';
      try {
        const rung = resolveRung(this.host.settings, model ?? this.options.model);
        rungName = rung.name;
        const effort = this.fastNext ? 'low' : this.effort;
        this.fastNext = false;
        await this.mcp.settled(MCP_FIRST_CONNECT_WAIT_MS);
        const system = await this.host.systemPrompt(this.options);
        // Posted as a lifecycle step: never to a worker a restart is replacing. A restart or stop
        // meanwhile has ended the turn already; a worker that crashed is replaced here.
        await this.serially(async () => {
          if (ended) return;
          if (!this.worker) this.spawn();
          this.worker!.postMessage({
            type: 'turn',
            turnId: turn.id,
            request: {
              baseURL: rung.provider.baseURL,
              apiKey: rung.provider.apiKey,
              providerName: rung.providerName,
              modelId: rung.rung.model,
              system,
              messages: [...modelHistory(thread), { role: 'user', content: text }],
              tools: [...this.tools, ...this.mcp.tools(this.toolNames)],
              ...(effort && { reasoningEffort: effort }),
              maxSteps: this.host.settings.maxStepsPerTurn,
            },
          });
        });
      } catch (err) {
        if (!(err instanceof RungNotConfiguredError)) throw err;
        turn.done({ status: 'failed', error: err.message, messages: [], usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 } });
      }
      const outcome = await finished;
      this.turn = undefined;
      if (turn.pendingText) turn.items.push({ type: 'text', delta: turn.pendingText });
      if (outcome.status === 'failed' && outcome.error !== 'cancelled') this.emit({ type: 'error', message: outcome.error ?? 'the turn failed' });
      await this.host.threads
        .appendTurn(threadId, { userText: text, messages: outcome.messages, items: turn.items, status: outcome.status, error: outcome.error })
        .catch((err: unknown) => this.host.logger.error({ err, identityId: this.identityId }, 'agent turn could not be stored'));
      const turnCreditsConsumed = await this.host.meter(this.identityId, rungName, outcome.usage);
      if (this.state === 'busy') this.state = 'idle';
      completed = true;
      this.emit({ type: 'turn-completed', status: outcome.status, ...(outcome.status === 'failed' && { error: outcome.error ?? 'failed' }) });
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
      return { status: 'failed', text: turn.text, error };
    } finally {
      turn.abort.abort();
      if (this.turn === turn) this.turn = undefined;
      if (this.state === 'busy') this.state = 'idle';
      this.armIdle();
    }
  }

  private async resume(threadId: unknown): Promise<void> {
    const thread = typeof threadId === 'string' ? await this.host.threads.load(this.identityId, threadId) : null;
    if (!thread) return this.emit({ type: 'error', message: `no thread ${JSON.stringify(threadId)} of this identity` });
    this.threadId = thread.id;
    await this.host.threads.setCurrentThread(this.identityId, thread.id);
    this.emit({ type: 'history', threadId: thread.id, items: thread.turns.flatMap((t) => [{ type: 'user-message', text: t.userText }, ...t.items]) });
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

  private armIdle(): void {
    this.clearIdle();
    if (this.state === 'busy' || this.state === 'stopped') return;
    const timeoutMs = this.host.settings.idleTimeoutSeconds * 1000;
    const warnMs = Math.min(60_000, timeoutMs / 2);
    this.warnTimer = setTimeout(() => this.emit({ type: 'idle-timeout', deadline: Math.floor((Date.now() + warnMs) / 1000), timeoutMs }), timeoutMs - warnMs);
    this.idleTimer = setTimeout(() => this.guard(this.host.stopSession(this.identityId, 'idle-stopped'), 'idle stop'), timeoutMs);
    this.warnTimer.unref();
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    clearTimeout(this.warnTimer);
    clearTimeout(this.idleTimer);
  }
}

/** The model messages of a thread: its summary (if compacted), then every later turn. */
export function modelHistory(thread: { summary: string | null; summaryTurns: number; turns: { userText: string; messages: unknown[] }[] } | null): unknown[] {
  if (!thread) return [];
  const out: unknown[] = [];
  if (thread.summary)
    out.push({ role: 'user', content: `Summary of our conversation so far:\n${thread.summary}` }, { role: 'assistant', content: 'Understood.' });
  for (const t of thread.turns.slice(thread.summaryTurns)) out.push({ role: 'user', content: t.userText }, ...t.messages);
  return out;
}

function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
