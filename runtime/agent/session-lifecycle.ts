/**
 * @module The lifecycle of one identity's agent session on the main thread (SPEC §6.3, DESIGN §7):
 * its state (`starting`, `idle`, `busy`, `stopped`), its MCP servers (mcp.ts) and the idle timeout.
 * A session holds no thread: its turns run in the server's worker pool (worker-pool.ts). Start,
 * `restart`, stop (close, idle stop, a takeover elsewhere) and handing a turn to the pool run one at
 * a time, in one chain, so a burst of `restart` frames ends one turn and leaves one set of MCP
 * servers. Tool calls (session-tools.ts), the turn loop (session-turn.ts) and the client events
 * (session.ts) build on it.
 */
import type { AgentHost, SessionOptions } from './host.js';
import type { EngineEvent } from './worker-protocol.js';
import { McpServers, type McpServerStatus } from './mcp.js';

/** The state of `status.agent` (DESIGN §7). */
export type AgentState = 'starting' | 'idle' | 'busy' | 'stopped';

export abstract class SessionLifecycle {
  state: AgentState = 'starting';
  readonly startedAt = Math.floor(Date.now() / 1000);
  threadId: string | null = null;
  /** Lifecycle operations (start, restart, stop, handing a turn to the pool) run one at a time, in this chain. */
  private lifecycle: Promise<unknown> = Promise.resolve();
  /** A restart waiting in `lifecycle`: restarts asked for meanwhile are the same restart. */
  private pendingRestart?: Promise<void>;
  /** The turn running when the last restart was asked for (the one that restart ends), if any. */
  private restartEnds?: string;
  private idleTimer?: NodeJS.Timeout;
  private warnTimer?: NodeJS.Timeout;
  protected mcp: McpServers;

  constructor(
    readonly identityId: string,
    /** Wire name of the session channel (`<api-name>:<channelName>`). */
    readonly channel: string,
    readonly options: SessionOptions,
    protected readonly host: AgentHost,
  ) {
    this.mcp = this.mcpServers();
  }

  /** Reads the identity's current thread and connects the MCP servers; `agent-event started`. */
  start(): Promise<void> {
    return this.serially(async () => {
      this.threadId = (await this.host.threads.session(this.identityId)).threadId;
      if (this.state === 'stopped') return;
      // The lease row got the servers (all `connecting`) when the lease was taken; changes follow.
      this.mcp.start();
      this.state = 'idle';
      this.emit({ type: 'agent-event', event: { name: 'started', at: unixNow() } });
      this.armIdle();
    });
  }

  /**
   * Stops the session (after the lifecycle operations before it); any running turn fails (`cancelled`).
   * `taken-over` (another instance holds the session now) stops it without a word on the channel.
   */
  stop(reason: 'stopped' | 'idle-stopped' | 'taken-over'): Promise<void> {
    return this.serially(async () => {
      if (this.state === 'stopped') return;
      this.clearIdle();
      this.state = 'stopped';
      this.failTurn('cancelled');
      await this.mcp.close();
      // The instance that took the session over speaks on the channel now.
      if (reason === 'taken-over') return;
      this.emit({ type: 'agent-event', event: { name: reason, at: unixNow() } });
      this.emit(await this.statusEvent());
    });
  }

  /** The statuses of the session's MCP servers now (`mcp-list`; the lease row's `mcp`). */
  mcpList(): McpServerStatus[] {
    return this.mcp.list();
  }

  /** `status`: state, the app's credit figure and the identity's session credits. */
  async statusEvent(): Promise<EngineEvent> {
    const credits = await this.host.credits(this.identityId);
    return { type: 'status', agent: this.state, ...credits };
  }

  /** Runs `work` without waiting; a failure (the database is down, …) is logged and told to the client, never thrown. */
  protected guard(work: Promise<unknown>, what: string): void {
    work.catch((err: unknown) => {
      this.host.logger.error({ err, identityId: this.identityId }, `agent ${what} failed`);
      this.emit({ type: 'error', message: `${what} failed on the server; try again` });
    });
  }

  /** Runs a lifecycle operation after the ones before it (a burst of `restart` frames never runs two at once). */
  protected serially(work: () => Promise<void>): Promise<void> {
    const next = this.lifecycle.then(work, work);
    this.lifecycle = next.catch(() => {});
    return next;
  }

  protected emit(event: EngineEvent): void {
    this.host.send(this.channel, event);
  }

  /**
   * The session's MCP servers, reporting their status changes as `mcp-status` events and to the host
   * (the lease row records them).
   */
  private mcpServers(): McpServers {
    return new McpServers(
      this.host.mcpServers,
      this.host.logger.child({ identityId: this.identityId }),
      {
        status: (name, status) => {
          this.emit({ type: 'mcp-status', name, status });
          this.mcpChanged();
        },
      },
      this.host.mcpPingMs,
    );
  }

  private mcpChanged(): void {
    if (this.host.mcpServers.length > 0) this.host.mcpChanged(this.identityId, () => this.mcp.list());
  }

  /**
   * Ends the running turn (its worker aborts it) and makes new MCP connections (stdio servers are
   * started again), after the lifecycle operations before it. Restarts asked for while one waits to
   * run join it: one restart, one event.
   */
  protected restart(): Promise<void> {
    // A restart ends the turn running when it was asked for, never a turn started while it waited to
    // run (that turn is handed to the pool after this restart in the chain).
    this.restartEnds = this.runningTurnId();
    if (this.pendingRestart) return this.pendingRestart;
    const restart = this.serially(async () => {
      this.pendingRestart = undefined;
      const ends = this.restartEnds;
      this.restartEnds = undefined;
      if (this.state === 'stopped') return;
      if (ends !== undefined) this.failTurn('restarted', ends);
      await this.mcp.close();
      this.mcp = this.mcpServers();
      this.mcp.start();
      this.mcpChanged();
      if (this.state !== 'busy') this.state = 'idle';
      this.emit({ type: 'agent-event', event: { name: 'restarted', at: unixNow() } });
    });
    this.pendingRestart = restart;
    return restart;
  }

  protected armIdle(): void {
    this.clearIdle();
    if (this.state === 'busy' || this.state === 'stopped') return;
    const timeoutMs = this.host.settings.idleTimeoutSeconds * 1000;
    const warnMs = Math.min(60_000, timeoutMs / 2);
    this.warnTimer = setTimeout(() => this.emit({ type: 'idle-timeout', deadline: Math.floor((Date.now() + warnMs) / 1000), timeoutMs }), timeoutMs - warnMs);
    this.idleTimer = setTimeout(() => this.guard(this.host.stopSession(this.identityId, 'idle-stopped'), 'idle stop'), timeoutMs);
    this.warnTimer.unref();
    this.idleTimer.unref();
  }

  protected clearIdle(): void {
    clearTimeout(this.warnTimer);
    clearTimeout(this.idleTimer);
  }

  /**
   * Ends the running turn as failed with `error` (worker crash, restart, stop); its worker aborts it.
   * @param turnId - only if the running turn is this one (a restart asked for during it)
   */
  protected abstract failTurn(error: string, turnId?: string): void;

  /** The id of the turn running now, if any. */
  protected abstract runningTurnId(): string | undefined;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
