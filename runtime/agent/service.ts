/**
 * @module The embedded agent of one server (SPEC §4.11, §4.12, §6.3, §6.4; DESIGN §7): the registry of
 * sessions, one per identity (session.ts), and where each runs — a lease per identity (lease.ts), with
 * `ctx.agent` operations forwarded to the instance holding it, or a takeover when that instance is
 * gone; the client frames of session channels taken from the real-time service; and what a session
 * needs from the server (`AgentHost`), handed on to the API tool runner (api-tool-runner.ts), the
 * model calls and credits (model-calls.ts), or done here (sending frames, the stats callback). The
 * arguments of `ctx.agent` are checked in options.ts. Server frames are group messages whose `data`
 * is a JSON string carrying `_from: "agent"`. (A little over 300 lines: the registry, a session's
 * start under its lease, and the one-line `AgentHost` hand-offs read best together.)
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { answerError, HttpError } from '../errors.js';
import type { AuthService } from '../auth/auth-service.js';
import type { AgentTool, AgentToolsFile } from '../contract/agent-tools.js';
import type { AgentSettings, CreditsSettings } from '../contract/settings.js';
import type { AppRuntime } from '../core/context.js';
import type { AgentRequest, ApiReply } from '../functions/call-api.js';
import type { FunctionInvoker } from '../http/function-routes.js';
import { redactUrl, type Logger } from '../log.js';
import type { GroupMessage } from '../realtime/broker.js';
import { groupOfChannel } from '../realtime/channels.js';
import { FUNCTION_ACTOR, type RealtimeService } from '../realtime/service.js';
import { connectArgs, promptMessage, resolveAgentOptions, requireIdentityId, sessionCreditsLimit } from './options.js';
import { AgentSession } from './session.js';
import type { RunningHistory } from './turn-log.js';
import { traceTurn } from '../tracing/tracing.js';
import type { AgentHost, CreditFigures, SessionOptions, TurnReport } from './host.js';
import { ThreadStore } from './threads.js';
import { AgentUploads } from './uploads.js';
import { Leases, RENEW_MS } from './lease.js';
import { CreditLedger } from './credits.js';
import { MCP_PING_MS, type McpServerConfig, type McpServerStatus } from './mcp.js';
import { sessionTools, ToolCaller } from './tools.js';
import type { EngineEvent, TurnUsage } from './worker-protocol.js';
import { describeApp } from './describe.js';
import { ApiToolRunner } from './api-tool-runner.js';
import { ModelCalls } from './model-calls.js';
import { AgentWorkerPool, defaultWorkers } from './worker-pool.js';
import { Forwarding, FORWARDED_OPS, LeaseTaken, PING_TOPIC, TAKEOVER_WAIT_MS } from './forwarding.js';

/** The stats callback's time limit (SPEC §6.4 "about 2 seconds"), ms. */
export const CALLBACK_TIMEOUT_MS = 2000;

export interface AgentServiceOptions {
  app: AppRuntime;
  auth: AuthService;
  realtime: RealtimeService;
  /** The app's `.svc/` folder (for `agent-tools.json`). */
  svcDir: string;
  /** Runs functions for API tools that name one. */
  invokeFunction?: FunctionInvoker;
  /** The server's own base URL (`http://host:port`), known once it listens. */
  baseUrl(): string;
  /** `agent` settings with `${secrets.X}`/`${env.X}` resolved. */
  settings: AgentSettings;
  /** `agent.mcpServers` resolved (`resolveMcpServers`); default none. */
  mcpServers?: McpServerConfig[];
  /** How often sessions ping their MCP servers, ms. Default: `MCP_PING_MS`. */
  mcpPingMs?: number;
  /** `credits` settings (DESIGN §7). */
  credits: CreditsSettings;
  /** The clock of the credit months (tests inject one). Default: the system clock. */
  clock?: () => Date;
  logger: Logger;
}

/** The API tools of `.svc/agent-tools.json` (none when it is absent). */
function readTools(svcDir: string): AgentToolsFile {
  const file = join(svcDir, 'agent-tools.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AgentToolsFile) : { $comment: '', all: [], dynamic: [], explicit: {} };
}

export class AgentService implements AgentHost {
  readonly settings: AgentSettings;
  readonly mcpServers: McpServerConfig[];
  readonly mcpPingMs: number;
  readonly threads: ThreadStore;
  /** The attachments of messages and the upload endpoint's store (DESIGN §7a). */
  readonly uploads: AgentUploads;
  readonly logger: Logger;
  readonly pool: AgentWorkerPool;
  private readonly sessions = new Map<string, AgentSession>();
  private readonly byChannel = new Map<string, AgentSession>();
  private readonly starting = new Map<string, Promise<AgentSession>>();
  private readonly tools: ToolCaller;
  private readonly apiTools: ApiToolRunner;
  private readonly models: ModelCalls;
  private readonly leases: Leases;
  /** The app's credits (modes, balance, monthly cap, pause). */
  readonly ledger: CreditLedger;
  private readonly forwarding: Forwarding;
  private renewal?: NodeJS.Timeout;
  private appId = '';

  constructor(private readonly options: AgentServiceOptions) {
    this.settings = options.settings;
    this.mcpServers = options.mcpServers ?? [];
    this.mcpPingMs = options.mcpPingMs ?? MCP_PING_MS;
    this.logger = options.logger.child({ component: 'agent' });
    this.threads = new ThreadStore(options.app.db);
    this.uploads = new AgentUploads(options.app.db, options.app.blobs, this.settings.attachments, this.logger);
    this.pool = new AgentWorkerPool(this.settings.workers ?? defaultWorkers(), (err) => this.logger.error({ err }, 'agent worker failed'));
    this.tools = new ToolCaller(readTools(options.svcDir));
    this.leases = new Leases(options.app.db, this.threads, options.realtime.instanceId);
    this.ledger = new CreditLedger(options.app.db, options.credits, {
      now: options.clock,
      onUsageError: (err) => this.logger.warn({ err }, 'agent credit usage could not be recorded (the charge stands)'),
    });
    this.apiTools = new ApiToolRunner({ ...options, tools: this.tools, logger: this.logger });
    this.models = new ModelCalls(this.settings, this.ledger, this.threads);
    this.forwarding = new Forwarding({
      leases: this.leases,
      realtime: options.realtime,
      logger: this.logger,
      runsHere: (identityId) => this.sessions.has(identityId) || this.starting.has(identityId),
    });
  }

  /** Agent sessions running on this instance (the metrics' gauge). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Counts an ended turn in the metrics (docs/operations.md), when the server has them. */
  turnEnded(report: TurnReport): void {
    traceTurn({
      identityId: report.identityId,
      provider: report.provider,
      model: report.model,
      status: report.status,
      error: report.error,
      inputTokens: report.usage.inputTokens,
      outputTokens: report.usage.outputTokens,
      startedAt: report.startedAt,
      endedAt: report.endedAt,
      tools: report.toolCalls.map((c, i) => ({
        name: c.tool,
        server: c.server,
        error: c.error,
        ...(report.toolTimes[i] ?? { startedAt: report.endedAt, endedAt: report.endedAt }),
      })),
    });
    const m = this.options.app.metrics;
    if (!m) return;
    m.agentTurns.inc({ outcome: report.status === 'completed' ? 'ok' : 'error' });
    m.agentTokens.inc({ kind: 'input' }, report.usage.inputTokens);
    m.agentTokens.inc({ kind: 'output' }, report.usage.outputTokens);
    if (report.credits > 0) m.agentCredits.inc(report.credits);
  }

  /** Reads `agent-tools.json` again (`svc dev` swapped in a new version); running sessions keep theirs. */
  reloadTools(): void {
    this.tools.replace(readTools(this.options.svcDir));
  }

  /** Reads the app id and starts taking client frames of session channels. */
  async start(): Promise<void> {
    this.appId = await this.threads.appId();
    this.options.realtime.onGroupMessage((m) => this.onGroupMessage(m));
    // Calls forwarded by other instances for the sessions this one runs.
    this.options.realtime.onRpc('agent', (payload) => this.handle(payload as AgentRequest));
    this.options.realtime.onRpc(PING_TOPIC, () => Promise.resolve(true));
    this.renewal = setInterval(() => {
      this.leases.renew([...this.sessions.values()]).then(
        // A lease this instance lost (it froze, and another took the session over) stops its copy here, quietly.
        (lost) => lost.forEach((id) => void this.stopSession(id, 'taken-over')),
        (err: unknown) => this.logger.warn({ err }, 'agent leases could not be renewed'),
      );
    }, RENEW_MS);
    this.renewal.unref();
  }

  /** Stops every session (and gives up their leases), then the worker pool. */
  async close(): Promise<void> {
    clearInterval(this.renewal);
    await Promise.all([...this.sessions.keys()].map((id) => this.stopSession(id, 'stopped')));
    await this.pool.close();
  }

  /**
   * Answers one `ctx.agent.<op>` of function code: 200 and its result, or an error body. An operation
   * on a session another instance runs is forwarded to it over the bus. When that instance is gone,
   * this one takes the session over at once; when it is there but does not answer (frozen, killed
   * while Redis still counts it), this one waits for its lease to lapse and takes it over then. When
   * another instance is starting the session, the call joins it there. Either way within
   * `TAKEOVER_WAIT_MS`, else 503.
   */
  async handle(request: AgentRequest): Promise<ApiReply> {
    try {
      const a = (typeof request.args === 'object' && request.args !== null ? request.args : {}) as Record<string, unknown>;
      const identityId = typeof a.identityId === 'string' ? a.identityId : undefined;
      if (!identityId || !FORWARDED_OPS.has(request.op)) return { status: 200, body: await this.run(request) };
      const deadline = Date.now() + TAKEOVER_WAIT_MS;
      for (;;) {
        const forwarded = await this.forwarding.forward(identityId, request, deadline);
        if (forwarded) return forwarded;
        try {
          return { status: 200, body: await this.run(request) };
        } catch (err) {
          // Another instance took the lease first: forward to it (it is starting the session).
          if (!(err instanceof LeaseTaken) || Date.now() > deadline) throw err;
        }
      }
    } catch (err) {
      const { status, body } = answerError(err);
      if (status >= 500) this.logger.error({ err, op: request.op }, 'agent call failed');
      return { status, body };
    }
  }

  private async run({ op, args }: AgentRequest): Promise<unknown> {
    const a = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
    switch (op) {
      case 'connect':
        return this.connect(a);
      case 'wake': {
        const session = await this.session(requireIdentityId(a), a);
        return { agent: session.state };
      }
      case 'prompt': {
        const message = promptMessage(a);
        const session = await this.session(requireIdentityId(a), a);
        return session.prompt(message, typeof a.model === 'string' ? a.model : undefined);
      }
      case 'list': {
        const here = [...this.sessions.values()].map((s) => ({
          identityId: s.identityId,
          channel: s.channel,
          agent: s.state,
          threadId: s.threadId,
          startedAt: s.startedAt,
        }));
        const elsewhere = (await this.leases.others()).filter((l) => !this.sessions.has(l.identityId));
        const threads = await Promise.all(elsewhere.map((l) => this.threads.session(l.identityId)));
        return [
          ...here,
          ...elsewhere.map((l, i) => ({ identityId: l.identityId, channel: l.channel, agent: l.state, threadId: threads[i].threadId, startedAt: l.startedAt })),
        ];
      }
      case 'close':
        return { closed: await this.stopSession(requireIdentityId(a), 'stopped') };
      case 'setCredits': {
        const limit = sessionCreditsLimit(a);
        const row = await this.threads.setSessionCredits(requireIdentityId(a), limit, 'reset');
        return { sessionCredits: row.sessionCredits };
      }
      case 'ask':
        return this.models.ask(a);
      default:
        throw new HttpError('INVALID_PARAMETER', `unknown agent operation ${JSON.stringify(op)}`);
    }
  }

  /** `connect`: the session (started if needed), the connection joined read-write, an optional first turn. */
  private async connect(a: Record<string, unknown>): Promise<{ channel: string; credits: number }> {
    const { identityId, connectionId, message, sessionCredits } = connectArgs(a);
    // A connection joining while a turn runs gets that turn so far in one `history` (`welcome`, DESIGN §7a).
    const join = (channel: string, history?: RunningHistory) =>
      this.options.realtime.apply({
        op: 'join',
        connectionId,
        group: channel,
        readOnly: false,
        actor: FUNCTION_ACTOR,
        ...(history && { welcome: JSON.stringify({ ...history, _from: 'agent' }) }),
      });
    let joined = false;
    // A new session's `agent-event started` must reach this connection: it joins before the session starts.
    const session = await this.session(identityId, a, async (channel) => {
      await join(channel);
      joined = true;
    });
    if (!joined) await session.joinRunning((history) => join(session.channel, history));
    if (sessionCredits !== undefined && sessionCredits > 0) await this.threads.setSessionCredits(identityId, sessionCredits, 'seed');
    if (message !== undefined && message.trim() !== '') session.connectMessage(message);
    return { channel: session.channel, credits: (await this.credits(identityId)).credits };
  }

  /** The identity's running session, started from `a` (options of connect) when there is none. */
  private async session(identityId: string, a: Record<string, unknown>, beforeStart?: (channel: string) => Promise<void>): Promise<AgentSession> {
    const running = this.sessions.get(identityId);
    if (running) return running;
    const pending = this.starting.get(identityId);
    if (pending) return pending;
    const start = (async () => {
      const options = resolveAgentOptions(identityId, a);
      const channelName = typeof a.channelName === 'string' ? a.channelName : `agent:${identityId}`;
      const channel = groupOfChannel(this.options.realtime.rules, channelName, 'function', 'channelName');
      const session = new AgentSession(
        identityId,
        channel,
        options,
        sessionTools(this.tools.file, options.apiTools, options.apiToolsAllow, options.uiTools),
        this,
      );
      const from = this.forwarding.takeOver.get(identityId);
      this.forwarding.takeOver.delete(identityId);
      if (!(await this.leases.acquire(identityId, { channel, options, mcp: session.mcpList() }, from))) throw new LeaseTaken();
      await beforeStart?.(channel);
      await session.start();
      this.sessions.set(identityId, session);
      this.byChannel.set(channel, session);
      return session;
    })();
    this.starting.set(identityId, start);
    try {
      return await start;
    } finally {
      this.starting.delete(identityId);
    }
  }

  /** Stops the identity's session here and gives up its lease (`taken-over`: another instance holds it now). */
  async stopSession(identityId: string, reason: 'stopped' | 'idle-stopped' | 'taken-over'): Promise<boolean> {
    const session = this.sessions.get(identityId);
    if (!session) return false;
    this.sessions.delete(identityId);
    this.byChannel.delete(session.channel);
    await session.stop(reason);
    await this.leases.release(identityId).catch((err: unknown) => this.logger.warn({ err, identityId }, 'agent lease could not be released'));
    return true;
  }

  /** A group message anywhere on the bus: a client frame on a session channel goes to its session. */
  private onGroupMessage(m: GroupMessage): void {
    const session = this.byChannel.get(m.group);
    if (!session || m.dataType !== 'json') return;
    let data = m.data;
    if (typeof data === 'string') {
      try {
        data = JSON.parse(data) as unknown;
      } catch {
        return;
      }
    }
    if (typeof data !== 'object' || data === null || '_from' in data || typeof (data as { type?: unknown }).type !== 'string') return;
    session.onClientEvent(data as Record<string, unknown>, m.fromUserId);
  }

  // ---- AgentHost ---------------------------------------------------------------------------------

  mcpChanged(identityId: string, list: () => McpServerStatus[]): void {
    void this.leases.recordMcp(identityId, list, (err) => this.logger.warn({ err, identityId }, 'agent MCP statuses could not be recorded'));
  }

  send(channel: string, event: EngineEvent): void {
    this.options.realtime.send({
      group: channel,
      dataType: 'json',
      data: JSON.stringify({ ...event, _from: 'agent' }),
      fromConnectionId: null,
      fromUserId: null,
      noEcho: false,
    });
  }

  runApiTool(options: SessionOptions, name: string, args: unknown, dynamic: boolean): Promise<{ status: number; output: string }> {
    return this.apiTools.runApiTool(options, name, args, dynamic);
  }

  apiToolOf(name: string): AgentTool | undefined {
    return this.tools.find(name);
  }

  refuseTurn(identityId: string): Promise<string | null> {
    return this.models.refuseTurn(identityId);
  }

  meter(identityId: string, rung: string, usage: TurnUsage): Promise<number> {
    return this.models.meter(identityId, rung, usage);
  }

  credits(identityId: string): Promise<CreditFigures> {
    return this.models.credits(identityId);
  }

  summarise(identityId: string, options: SessionOptions, messages: unknown[]): Promise<string> {
    return this.models.summarise(identityId, options, messages);
  }

  callback(options: SessionOptions, payload: Record<string, unknown>): void {
    if (!options.callbackUrl) return;
    let url: string;
    try {
      url = new URL(options.callbackUrl, this.options.baseUrl()).href;
    } catch {
      this.logger.warn({ callbackUrl: redactUrl(options.callbackUrl) }, 'agent stats callback URL is not valid');
      return;
    }
    const body = JSON.stringify({ ...payload, apiId: this.appId, apiName: this.options.app.manifest.name });
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS) })
      .then(async (res) => {
        await res.body?.cancel();
        if (!res.ok) this.logger.warn({ url: redactUrl(url), status: res.status, event: payload.event }, 'agent stats callback answered an error');
      })
      .catch((err: unknown) => this.logger.warn({ url: redactUrl(url), err: (err as Error).message, event: payload.event }, 'agent stats callback failed'));
  }

  async systemPrompt(options: SessionOptions): Promise<string> {
    return describeApp(this.options.app.manifest, this.settings.instructions, await this.apiTools.callerOf(options.actAs));
  }
}
