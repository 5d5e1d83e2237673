/**
 * @module The embedded agent of one server (SPEC §4.11, §4.12, §6.3, §6.4; DESIGN §7): one session per
 * identity (session.ts), the client frames of session channels taken from the real-time service,
 * `ctx.agent` operations for function code, API tools run in-process as the session's identity, the
 * stats callback, and `ask`. Server frames are group messages whose `data` is a JSON string carrying
 * `_from: "agent"`.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { generateText, type ModelMessage } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HttpError, toErrorBody } from '../errors.js';
import { ANONYMOUS, type Caller } from '../auth/caller.js';
import type { AuthService } from '../auth/auth-service.js';
import type { AgentToolsFile } from '../contract/agent-tools.js';
import type { AgentSettings, CreditsSettings } from '../contract/settings.js';
import { apiClientFor } from '../core/api-client.js';
import type { AppRuntime } from '../core/context.js';
import type { AgentRequest, ApiReply } from '../functions/call-api.js';
import type { FunctionInvoker } from '../http/function-routes.js';
import type { Logger } from '../log.js';
import type { GroupMessage } from '../realtime/broker.js';
import { groupOfChannel } from '../realtime/channels.js';
import { FUNCTION_ACTOR, type RealtimeService } from '../realtime/service.js';
import { resolveAgentOptions, parseAskMessages, requireIdentityId } from './options.js';
import { AgentSession } from './session.js';
import type { AgentHost, CreditFigures, SessionOptions } from './host.js';
import { creditsOf, resolveRung, type ResolvedRung } from './rungs.js';
import { ThreadStore } from './threads.js';
import { LEASE_MS, Leases, RENEW_MS } from './lease.js';
import { CreditLedger } from './credits.js';
import { MCP_PING_MS, type McpServerConfig } from './mcp.js';
import { sessionTools, toolOutput, ToolCaller } from './tools.js';
import type { EngineEvent, TurnUsage } from './worker-protocol.js';
import { describeApp } from './describe.js';

/** `ctx.agent` operations that act on one identity's session, run where that session runs. */
const FORWARDED_OPS = new Set(['connect', 'wake', 'prompt', 'close']);
/** How long a forwarded operation may take, ms (a `prompt` waits for its whole turn). */
const RPC_MS = 10_000;
const PROMPT_RPC_MS = 10 * 60_000;
/** The bus topic of the liveness ping a call sends a session's holder before forwarding to it. */
const PING_TOPIC = 'agent-ping';
/** How long a holder has to answer that ping before it is thought gone (or frozen), ms. */
const PING_MS = 2000;
/**
 * How long a call waits for a holder that does not answer — until its lease lapses and this instance
 * takes the session over — or for a session another instance is starting, ms. A lease lapses at most
 * `LEASE_MS` after its holder died.
 */
const TAKEOVER_WAIT_MS = LEASE_MS + 10_000;

/** The identity's lease was taken by another instance first (it is starting the session there). */
class LeaseTaken extends HttpError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'this agent session is starting on another instance: try again');
  }
}

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

export class AgentService implements AgentHost {
  readonly settings: AgentSettings;
  readonly mcpServers: McpServerConfig[];
  readonly mcpPingMs: number;
  readonly threads: ThreadStore;
  readonly logger: Logger;
  private readonly sessions = new Map<string, AgentSession>();
  private readonly byChannel = new Map<string, AgentSession>();
  private readonly starting = new Map<string, Promise<AgentSession>>();
  private readonly tools: ToolCaller;
  private readonly leases: Leases;
  /** The app's credits (modes, balance, monthly cap, pause). */
  readonly ledger: CreditLedger;
  /** Identities whose lease this instance may take from an instance that no longer answers. */
  private readonly takeOver = new Map<string, string>();
  private renewal?: NodeJS.Timeout;
  private appId = '';

  constructor(private readonly options: AgentServiceOptions) {
    this.settings = options.settings;
    this.mcpServers = options.mcpServers ?? [];
    this.mcpPingMs = options.mcpPingMs ?? MCP_PING_MS;
    this.logger = options.logger.child({ component: 'agent' });
    this.threads = new ThreadStore(options.app.db);
    const file = join(options.svcDir, 'agent-tools.json');
    const tools: AgentToolsFile = existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as AgentToolsFile)
      : { $comment: '', all: [], dynamic: [], explicit: {} };
    this.tools = new ToolCaller(tools);
    this.leases = new Leases(options.app.db, this.threads, options.realtime.instanceId);
    this.ledger = new CreditLedger(options.app.db, options.credits, options.clock);
  }

  /** Reads the app id and starts taking client frames of session channels. */
  async start(): Promise<void> {
    this.appId = await this.threads.appId();
    this.options.realtime.onGroupMessage((m) => this.onGroupMessage(m));
    // Calls forwarded by other instances for the sessions this one runs.
    this.options.realtime.onRpc('agent', (payload) => this.handle(payload as AgentRequest));
    this.options.realtime.onRpc(PING_TOPIC, () => Promise.resolve(true));
    this.renewal = setInterval(() => {
      const states = new Map([...this.sessions.values()].map((s) => [s.identityId, s.state] as [string, string]));
      this.leases.renew(states).then(
        // A lease this instance lost (it froze, and another took the session over) stops its copy here, quietly.
        (lost) => lost.forEach((id) => void this.stopSession(id, 'taken-over')),
        (err: unknown) => this.logger.warn({ err }, 'agent leases could not be renewed'),
      );
    }, RENEW_MS);
    this.renewal.unref();
  }

  /** Stops every session (and gives up their leases). */
  async close(): Promise<void> {
    clearInterval(this.renewal);
    await Promise.all([...this.sessions.keys()].map((id) => this.stopSession(id, 'stopped')));
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
        const forwarded = await this.forward(identityId, request, deadline);
        if (forwarded) return forwarded;
        try {
          return { status: 200, body: await this.run(request) };
        } catch (err) {
          // Another instance took the lease first: forward to it (it is starting the session).
          if (!(err instanceof LeaseTaken) || Date.now() > deadline) throw err;
        }
      }
    } catch (err) {
      const { status, body } = toErrorBody(err);
      if (status >= 500) this.logger.error({ err, op: request.op }, 'agent call failed');
      return { status, body };
    }
  }

  /**
   * Forwards `request` to the instance holding the identity's session and answers its reply, or null
   * when this instance is to run it (no live holder, or the holder is gone: then marked for takeover).
   * A holder that does not answer its ping is asked again until its lease lapses or `deadline`.
   * @throws HttpError SERVICE_UNAVAILABLE (503) when the holder neither answers nor lets its lease lapse in time
   */
  private async forward(identityId: string, request: AgentRequest, deadline: number): Promise<ApiReply | null> {
    const bus = this.options.realtime;
    let warned = false;
    for (;;) {
      if (this.sessions.has(identityId) || this.starting.has(identityId)) return null;
      const holder = await this.leases.holder(identityId);
      if (!holder) return null;
      const ping = await bus.rpc(holder, PING_TOPIC, null, PING_MS);
      const answer = ping.delivered && !ping.timedOut ? await bus.rpc(holder, 'agent', request, request.op === 'prompt' ? PROMPT_RPC_MS : RPC_MS) : ping;
      if (!answer.delivered) {
        this.logger.warn({ identityId, instance: holder }, 'the instance running this agent session is gone: taking it over');
        this.takeOver.set(identityId, holder);
        return null;
      }
      if (!answer.timedOut) return answer.reply as ApiReply;
      // A prompt's turn may run long; any other answer comes at once from a live holder.
      if ((ping.delivered && !ping.timedOut && request.op === 'prompt') || Date.now() > deadline)
        throw new HttpError('SERVICE_UNAVAILABLE', 'the instance running this agent session did not answer in time');
      if (!warned)
        this.logger.warn({ identityId, instance: holder }, 'the instance running this agent session does not answer: waiting for its lease to lapse');
      warned = true;
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
        if (typeof a.message !== 'string' || a.message.trim() === '') throw new HttpError('INVALID_PARAMETER', 'message must be a non-empty string');
        const session = await this.session(requireIdentityId(a), a);
        return session.prompt(a.message, typeof a.model === 'string' ? a.model : undefined);
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
        const limit = a.sessionCredits;
        if (!Number.isInteger(limit) || (limit as number) < 0) throw new HttpError('INVALID_PARAMETER', 'sessionCredits must be an integer ≥ 0 (0 = no limit)');
        const row = await this.threads.setSessionCredits(requireIdentityId(a), limit as number, 'reset');
        return { sessionCredits: row.sessionCredits };
      }
      case 'ask':
        return this.ask(a);
      default:
        throw new HttpError('INVALID_PARAMETER', `unknown agent operation ${JSON.stringify(op)}`);
    }
  }

  /** `connect`: the session (started if needed), the connection joined read-write, an optional first turn. */
  private async connect(a: Record<string, unknown>): Promise<{ channel: string; credits: number }> {
    const identityId = requireIdentityId(a);
    if (typeof a.connectionId !== 'string' || a.connectionId === '') throw new HttpError('INVALID_PARAMETER', 'connectionId must be a non-empty string');
    if (a.message !== undefined && typeof a.message !== 'string') throw new HttpError('INVALID_PARAMETER', 'message must be a string');
    if (a.sessionCredits !== undefined && (!Number.isInteger(a.sessionCredits) || (a.sessionCredits as number) < 0))
      throw new HttpError('INVALID_PARAMETER', 'sessionCredits must be an integer ≥ 0');
    const connectionId = a.connectionId;
    const join = (channel: string) => this.options.realtime.apply({ op: 'join', connectionId, group: channel, readOnly: false, actor: FUNCTION_ACTOR });
    let joined = false;
    // A new session's `agent-event started` must reach this connection: it joins before the session starts.
    const session = await this.session(identityId, a, async (channel) => {
      await join(channel);
      joined = true;
    });
    if (!joined) await join(session.channel);
    if (typeof a.sessionCredits === 'number' && a.sessionCredits > 0) await this.threads.setSessionCredits(identityId, a.sessionCredits, 'seed');
    if (typeof a.message === 'string' && a.message.trim() !== '') session.connectMessage(a.message);
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
      const from = this.takeOver.get(identityId);
      this.takeOver.delete(identityId);
      if (!(await this.leases.acquire(identityId, { channel, options }, from))) throw new LeaseTaken();
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
    session.onClientEvent(data as Record<string, unknown>);
  }

  // ---- AgentHost ---------------------------------------------------------------------------------

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

  /** The caller of an identity id: a user, else a service account, else anonymous (DESIGN §7 `actAs`). */
  private async callerOf(id: string): Promise<Caller> {
    const identities = this.options.auth.identities;
    return (await identities.get('user', id)) ?? (await identities.get('serviceAccount', id)) ?? ANONYMOUS;
  }

  async runApiTool(options: SessionOptions, name: string, args: unknown, dynamic: boolean): Promise<{ status: number; output: string }> {
    try {
      if (dynamic) {
        const a = (args ?? {}) as { name?: unknown; search?: unknown; arguments?: unknown };
        if (name === 'list-api-endpoints') return { status: 200, output: this.tools.listEndpoints(a.search) };
        const tool = typeof a.name === 'string' ? this.tools.find(a.name) : undefined;
        if (!tool) throw new HttpError('NOT_FOUND', `no endpoint is named ${JSON.stringify(a.name)}: call list-api-endpoints`);
        if (name === 'get-api-endpoint-schema') return { status: 200, output: JSON.stringify(tool.parameters) };
        return await this.callTool(options, tool.name, a.arguments ?? {});
      }
      return await this.callTool(options, name, args);
    } catch (err) {
      const { status, body } = toErrorBody(err);
      return { status, output: toolOutput(status, body) };
    }
  }

  private async callTool(options: SessionOptions, name: string, args: unknown): Promise<{ status: number; output: string }> {
    const tool = this.tools.find(name);
    if (!tool) throw new HttpError('NOT_FOUND', `no API tool is named ${JSON.stringify(name)}`);
    const call = this.tools.callOf(tool, args);
    const caller = await this.callerOf(options.actAs);
    if (call.path === '/_me') {
      if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', 'GET /_me requires authentication');
      return { status: 200, output: toolOutput(200, { id: caller.id, username: caller.username, roles: caller.roles }) };
    }
    const fn = functionNameOf(call.path, this.options.app.manifest.functions);
    if (fn !== null) {
      if (!this.options.invokeFunction) throw new HttpError('NOT_FOUND', `function ${fn} is not served here`);
      try {
        const answer = await this.options.invokeFunction(fn, {
          method: call.method,
          caller,
          query: call.query,
          bodyJson: call.body ?? null,
          bodyRaw: call.body === undefined ? '' : JSON.stringify(call.body),
          headers: {},
          baseUrl: `${this.options.baseUrl()}/api`,
          reqId: `agent-${options.identityId}`,
        });
        return { status: answer.status, output: toolOutput(answer.status, answer.bodyText === undefined ? '' : (JSON.parse(answer.bodyText) as unknown)) };
      } catch (err) {
        if (!(err instanceof HttpError)) this.logger.error({ err, function: fn }, 'function called by an agent tool failed');
        throw err;
      }
    }
    const answer = await apiClientFor(this.options.app, caller, { reqId: `agent-${options.identityId}` }).request({
      method: call.method as 'GET',
      path: call.path,
      query: call.query,
      body: call.body,
    });
    return { status: answer.status, output: toolOutput(answer.status, answer.body) };
  }

  async refuseTurn(identityId: string): Promise<string | null> {
    const app = await this.ledger.refusal();
    if (app) return app;
    const row = await this.threads.session(identityId);
    return row.sessionCredits > 0 && row.sessionCreditsUsed >= row.sessionCredits ? 'Session credit limit reached' : null;
  }

  async meter(identityId: string, rung: string, usage: TurnUsage): Promise<number> {
    let resolved: ResolvedRung;
    try {
      resolved = resolveRung(this.settings, rung);
    } catch {
      return 0;
    }
    const cost = creditsOf(resolved, usage);
    if (cost > 0) await Promise.all([this.ledger.charge(cost), this.threads.addSessionCreditsUsed(identityId, cost)]);
    return cost;
  }

  async credits(identityId: string): Promise<CreditFigures> {
    const [row, app] = await Promise.all([this.threads.session(identityId), this.ledger.state()]);
    return {
      credits: app.credits,
      sessionCredits: row.sessionCredits === 0 ? 0 : Math.max(0, row.sessionCredits - row.sessionCreditsUsed),
      sessionCreditsLimit: row.sessionCredits,
      sessionCreditsUsed: row.sessionCreditsUsed,
    };
  }

  callback(options: SessionOptions, payload: Record<string, unknown>): void {
    if (!options.callbackUrl) return;
    let url: string;
    try {
      url = new URL(options.callbackUrl, this.options.baseUrl()).href;
    } catch {
      this.logger.warn({ callbackUrl: options.callbackUrl }, 'agent stats callback URL is not valid');
      return;
    }
    const body = JSON.stringify({ ...payload, apiId: this.appId, apiName: this.options.app.manifest.name });
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS) })
      .then(async (res) => {
        await res.body?.cancel();
        if (!res.ok) this.logger.warn({ url, status: res.status, event: payload.event }, 'agent stats callback answered an error');
      })
      .catch((err: unknown) => this.logger.warn({ url, err: (err as Error).message, event: payload.event }, 'agent stats callback failed'));
  }

  async systemPrompt(options: SessionOptions): Promise<string> {
    return describeApp(this.options.app.manifest, this.settings.instructions, await this.callerOf(options.actAs));
  }

  async summarise(identityId: string, options: SessionOptions, messages: unknown[]): Promise<string> {
    const rung = resolveRung(this.settings, options.model);
    const { text, usage } = await generateText({
      model: modelOf(rung),
      system: 'Summarise the conversation so far for yourself: the facts, decisions and open questions you need to continue it. Be brief.',
      messages: [...(messages as ModelMessage[]), { role: 'user', content: 'Summarise our conversation so far.' }],
      maxRetries: 1,
    });
    await this.meter(identityId, rung.name, usageOf(usage));
    return text;
  }

  /** `ctx.agent.ask`: one completion, no session, no tools, no streaming. */
  private async ask(a: Record<string, unknown>): Promise<unknown> {
    const messages = parseAskMessages(a.messages);
    const refusal = await this.ledger.refusal();
    if (refusal) throw new HttpError('FORBIDDEN', refusal);
    let rung: ResolvedRung;
    try {
      rung = resolveRung(this.settings, a.model);
    } catch (err) {
      throw new HttpError('SERVICE_UNAVAILABLE', (err as Error).message);
    }
    let result: Awaited<ReturnType<typeof generateText>>;
    try {
      result = await generateText({ model: modelOf(rung), messages: messages as ModelMessage[], maxRetries: 1 });
    } catch (err) {
      const e = err as { statusCode?: unknown; message?: string };
      throw new HttpError(
        'BAD_GATEWAY',
        typeof e.statusCode === 'number' ? `the model provider answered ${e.statusCode}` : `the model provider failed: ${e.message ?? String(err)}`,
      );
    }
    const usage = usageOf(result.usage);
    await this.ledger.charge(creditsOf(rung, usage));
    return { text: result.text, usage, credits: (await this.ledger.state()).credits, model: rung.name };
  }
}

function modelOf(rung: ResolvedRung) {
  return createOpenAICompatible({ name: rung.providerName, baseURL: rung.provider.baseURL, apiKey: rung.provider.apiKey, includeUsage: true }).chatModel(
    rung.rung.model,
  );
}

function usageOf(u: { inputTokens?: number; outputTokens?: number; inputTokenDetails?: { cacheReadTokens?: number } }): TurnUsage {
  const cached = u.inputTokenDetails?.cacheReadTokens ?? 0;
  return { inputTokens: Math.max(0, (u.inputTokens ?? 0) - cached), cachedInputTokens: cached, outputTokens: u.outputTokens ?? 0 };
}

/** The function an API tool path names (`/_invoke/<name>` or `/<name>` of a type-1 function), or null. */
function functionNameOf(path: string, functions: { name: string; enabled: boolean; functionTypeId: number }[]): string | null {
  const m = /^\/_invoke\/([^/]+)$/.exec(path);
  if (m) return decodeURIComponent(m[1]);
  const name = path.slice(1);
  return functions.some((f) => f.name === name && f.enabled && f.functionTypeId === 1) ? name : null;
}
