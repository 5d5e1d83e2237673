/**
 * @module The MCP servers of one agent session (DESIGN §7 `agent.mcpServers`; SPEC §6.3 `mcp-list`,
 * `mcp-status`, `mcp-tool-start`/`mcp-tool-end`; SPEC §7 agent rule 4). Each configured server is
 * connected per session through `@modelcontextprotocol/sdk`, over Streamable HTTP (`url`, `headers`)
 * or as a child process over stdio (`command`, `args`, `env`, started in the app folder). Connecting
 * never blocks a turn: a turn offers the tools of the servers connected when it starts. A server that
 * fails is retried in the background with a growing delay; one that is lost (its process exits, a
 * call or the periodic ping cannot reach it) goes `reconnecting` until it is back.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerSettings } from '../contract/settings.js';
import type { Logger } from '../log.js';
import { resolveRefs } from '../secret-refs.js';
import type { ToolSpec } from './worker-protocol.js';

/**
 * A server's liveness as `mcp-list` and `mcp-status` report it: `connecting` (first attempt under
 * way), `connected`, `reconnecting` (was connected, was lost, is being connected again) or `failed`
 * (the last attempt failed; retried in the background unless its settings cannot be resolved).
 */
export type McpStatus = 'connecting' | 'connected' | 'reconnecting' | 'failed';

/** One server of a session as `mcp-list` shows it (and as the session's lease row records it, lease.ts). */
export interface McpServerStatus {
  name: string;
  status: McpStatus;
}

/** How an MCP server is reached: Streamable HTTP (`url`) or a child process over stdio (`command`). */
export type McpTransport = 'http' | 'stdio';

/** One `agent.mcpServers` entry with its `${secrets.X}`/`${env.X}` references resolved, or why it cannot be used. */
export type McpServerConfig =
  | { name: string; timeoutMs: number; url: URL; headers: Record<string, string> }
  | { name: string; timeoutMs: number; command: string; args: string[]; env: Record<string, string>; cwd: string }
  | { name: string; timeoutMs: number; transport: McpTransport; problem: string };

/** A tool call's default time limit, ms (an MCP server may set its own `timeoutMs`). */
export const MCP_TOOL_TIMEOUT_MS = 30_000;
/** How long connecting (the MCP handshake and the tool list) may take, ms. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Delays between attempts to reach a server, ms: doubling from the first to the last. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
/** How often a connected server is pinged, so a server that goes away is reported without waiting for a call, ms. */
export const MCP_PING_MS = 15_000;
/** How long a ping may take before the server counts as lost, ms. */
const PING_TIMEOUT_MS = 5000;
/** How much of a tool call's arguments `mcp-tool-start.argsPreview` shows, characters. */
const ARGS_PREVIEW = 200;

/**
 * Resolves the references of every `agent.mcpServers` entry at start. An entry whose reference is
 * not set, or whose `url` is not a URL, is kept with a `problem` (listed as `failed`, never
 * connected) and logged, so the rest of the app still starts.
 * @param appDir - the app folder: stdio servers run there, so `args` may be relative to it
 */
export function resolveMcpServers(servers: Record<string, McpServerSettings>, env: NodeJS.ProcessEnv, appDir: string, logger: Logger): McpServerConfig[] {
  return Object.entries(servers).map(([name, s]) => {
    const where = `agent.mcpServers.${name}`;
    const timeoutMs = s.timeoutMs ?? MCP_TOOL_TIMEOUT_MS;
    try {
      if ('url' in s) {
        const raw = resolveRefs(s.url, env, `${where}.url`);
        if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw new Error(`${where}.url is not an http(s) URL: ${JSON.stringify(raw)}`);
        const headers = Object.fromEntries(Object.entries(s.headers ?? {}).map(([k, v]) => [k, resolveRefs(v, env, `${where}.headers.${k}`)]));
        return { name, timeoutMs, url: new URL(raw), headers };
      }
      return {
        name,
        timeoutMs,
        command: resolveRefs(s.command, env, `${where}.command`),
        args: (s.args ?? []).map((a, i) => resolveRefs(a, env, `${where}.args[${i}]`)),
        env: Object.fromEntries(Object.entries(s.env ?? {}).map(([k, v]) => [k, resolveRefs(v, env, `${where}.env.${k}`)])),
        cwd: appDir,
      };
    } catch (err) {
      const problem = (err as Error).message;
      logger.warn(`${problem}: the agent cannot use MCP server ${name} until it is set`);
      return { name, timeoutMs, transport: 'url' in s ? 'http' : 'stdio', problem };
    }
  });
}

/** What the session hears from its servers. */
export interface McpEvents {
  /** A server's status changed to `connected`, `failed` or `reconnecting` (the `mcp-status` event). */
  status(name: string, status: McpStatus): void;
}

/** The outcome of one MCP tool call: what the model reads, and the error the events and the callback report. */
export interface McpCallResult {
  server: string;
  tool: string;
  output: string;
  error?: string;
}

/** The MCP servers of one session: their connections, their tools under model-facing names, and calls. */
export class McpServers {
  private readonly connections: McpConnection[];

  /** @param pingMs - how often connected servers are pinged (default `MCP_PING_MS`) */
  constructor(configs: McpServerConfig[], logger: Logger, events: McpEvents, pingMs = MCP_PING_MS) {
    this.connections = configs.map((c) => new McpConnection(c, logger, events, pingMs));
  }

  /** Starts connecting every server; returns at once. */
  start(): void {
    for (const c of this.connections) c.start();
  }

  /** `mcp-list`'s `servers`, in the order of `agent.mcpServers`. */
  list(): McpServerStatus[] {
    return this.connections.map((c) => ({ name: c.config.name, status: c.status }));
  }

  /** Waits until no server is on its first attempt, or `waitMs` has passed (a slow server never holds a turn longer). */
  async settled(waitMs: number): Promise<void> {
    const pending = this.connections.filter((c) => c.status === 'connecting').map((c) => c.firstAttempt);
    if (pending.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending), new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }

  /**
   * The tools of the connected servers, named `<server>__<tool>` (characters outside `[A-Za-z0-9_-]`
   * become `_`, at most 64 characters); a name already `taken` (an API or UI tool) is left out.
   */
  tools(taken: ReadonlySet<string>): ToolSpec[] {
    const specs: ToolSpec[] = [];
    for (const c of this.connections) {
      if (c.status !== 'connected') continue;
      for (const [name, t] of c.tools) {
        if (taken.has(name) || specs.some((s) => s.name === name)) continue;
        specs.push({
          name,
          description: `[${c.config.name}] ${t.description ?? t.title ?? t.name}`,
          parameters: t.inputSchema as Record<string, unknown>,
          kind: 'mcp',
        });
      }
    }
    return specs;
  }

  /** The server and tool a model-facing name stands for, or undefined. */
  find(name: string): { server: string; tool: string } | undefined {
    for (const c of this.connections) {
      const t = c.tools.get(name);
      if (t) return { server: c.config.name, tool: t.name };
    }
    return undefined;
  }

  /** Calls a tool by its model-facing name; never throws (a failure is `error`, told to the model too). */
  async call(name: string, args: unknown, signal: AbortSignal): Promise<McpCallResult> {
    const target = this.find(name);
    const connection = target && this.connections.find((c) => c.config.name === target.server);
    if (!target || !connection) return { server: 'mcp', tool: name, output: `error: no MCP tool ${name}`, error: `no MCP tool ${name}` };
    const error = (message: string): McpCallResult => ({ ...target, output: `error: ${message}`, error: message });
    if (connection.status !== 'connected' || !connection.client) return error(`the MCP server ${target.server} is not connected (${connection.status})`);
    try {
      const result = (await connection.client.callTool({ name: target.tool, arguments: (args ?? {}) as Record<string, unknown> }, undefined, {
        timeout: connection.config.timeoutMs,
        signal,
      })) as CallToolResult;
      const output = resultText(result);
      return result.isError ? error(output.slice(0, 500) || `${target.tool} failed`) : { ...target, output };
    } catch (err) {
      const code = mcpCode(err);
      if (code === sdk?.ErrorCode.RequestTimeout) return error(`${target.server}.${target.tool} did not answer within ${connection.config.timeoutMs} ms`);
      if (signal.aborted) return error('cancelled');
      if (code !== undefined && code !== sdk?.ErrorCode.ConnectionClosed) return error((err as Error).message.slice(0, 500));
      connection.lost(err);
      return error(`the MCP server ${target.server} could not be reached`);
    }
  }

  /** Closes every connection (stdio servers are stopped) and stops retrying. */
  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}

/** The parts of the MCP SDK used here, loaded on the first connection (not at start-up: half a second). */
interface McpSdk {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
  McpError: typeof import('@modelcontextprotocol/sdk/types.js').McpError;
  ErrorCode: typeof import('@modelcontextprotocol/sdk/types.js').ErrorCode;
}
let sdk: McpSdk | undefined;

async function loadSdk(): Promise<McpSdk> {
  if (!sdk) {
    const [client, stdio, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    sdk = {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      McpError: types.McpError,
      ErrorCode: types.ErrorCode,
    };
  }
  return sdk;
}

/** The code of an MCP protocol error (`McpError`), or undefined for any other error. */
function mcpCode(err: unknown): number | undefined {
  return sdk && err instanceof sdk.McpError ? err.code : undefined;
}

/** One server's connection: its client, status, tool list and retries. */
class McpConnection {
  status: McpStatus = 'connecting';
  client?: Client;
  /** The server's tools by their model-facing name (`toolName`), from the last listing. */
  tools = new Map<string, Tool>();
  /** Settles when the first attempt has ended (either way). */
  firstAttempt: Promise<void> = Promise.resolve();
  private retryMs = RETRY_FIRST_MS;
  private retry?: NodeJS.Timeout;
  private pinger?: NodeJS.Timeout;
  private closed = false;

  constructor(
    readonly config: McpServerConfig,
    private readonly logger: Logger,
    private readonly events: McpEvents,
    private readonly pingMs: number,
  ) {}

  start(): void {
    if ('problem' in this.config) return this.set('failed');
    this.firstAttempt = this.connect();
  }

  /** The connection was found broken (a call could not reach the server, the process exited). */
  lost(err: unknown): void {
    if (this.closed || this.status !== 'connected') return;
    this.logger.warn({ err, server: this.config.name }, 'MCP server lost; reconnecting');
    clearInterval(this.pinger);
    const client = this.client;
    // `tools` stays: a turn that was offered them still gets "not connected" for a call, not "no such tool".
    this.client = undefined;
    this.set('reconnecting');
    void client?.close().catch(() => {});
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.pinger);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed || 'problem' in this.config) return;
    const { Client } = await loadSdk();
    if (this.closed) return;
    const client = new Client(
      { name: 'svc-agent', version: '1.0.0' },
      {
        listChanged: {
          tools: { onChanged: (err, tools) => void (!err && tools && this.client === client && (this.tools = this.named(tools))) },
        },
      },
    );
    try {
      await client.connect(this.transport(), { timeout: CONNECT_TIMEOUT_MS });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: CONNECT_TIMEOUT_MS });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      if (this.closed) return void (await client.close().catch(() => {}));
      this.client = client;
      this.tools = this.named(tools);
      this.retryMs = RETRY_FIRST_MS;
      // A stdio server's process exiting (or a transport giving up) closes the client.
      client.onclose = () => this.lost(new Error('the connection closed'));
      this.pinger = setInterval(() => void this.ping(client), this.pingMs);
      this.pinger.unref();
      this.set('connected');
    } catch (err) {
      await client.close().catch(() => {});
      if (this.closed) return;
      if (this.status !== 'failed') this.logger.warn({ err, server: this.config.name }, `MCP server could not be connected: ${(err as Error).message}`);
      this.set('failed');
      this.retry = setTimeout(() => void this.connect(), this.retryMs);
      this.retry.unref();
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    }
  }

  /** A ping that fails to arrive (not one the server answers with an error) means the server is lost. */
  private async ping(client: Client): Promise<void> {
    if (this.client !== client) return;
    try {
      await client.ping({ timeout: PING_TIMEOUT_MS });
    } catch (err) {
      const code = mcpCode(err);
      if (code !== undefined && code !== sdk?.ErrorCode.ConnectionClosed && code !== sdk?.ErrorCode.RequestTimeout) return;
      if (this.client === client) this.lost(err);
    }
  }

  private named(tools: Tool[]): Map<string, Tool> {
    return new Map(tools.map((t) => [toolName(this.config.name, t.name), t]));
  }

  private transport(): Transport {
    const c = this.config;
    if ('url' in c) return new sdk!.StreamableHTTPClientTransport(c.url, { requestInit: { headers: c.headers } });
    if ('command' in c) {
      const transport = new sdk!.StdioClientTransport({ command: c.command, args: c.args, env: c.env, cwd: c.cwd, stderr: 'pipe' });
      transport.stderr?.on('data', (chunk: Buffer) => this.logger.info({ server: c.name }, `MCP server stderr: ${chunk.toString('utf8').trimEnd()}`));
      return transport;
    }
    throw new Error(c.problem);
  }

  private set(status: McpStatus): void {
    if (this.status === status) return;
    this.status = status;
    if (!this.closed) this.events.status(this.config.name, status);
  }
}

/** How a resolved server is reached (a server with a `problem` keeps the kind its settings name). */
export function mcpTransport(config: McpServerConfig): McpTransport {
  if ('url' in config) return 'http';
  if ('command' in config) return 'stdio';
  return config.transport;
}

/** `<server>__<tool>` as the model sees it (OpenAI function names: `[A-Za-z0-9_-]{1,64}`). */
export function toolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/** `mcp-tool-start.argsPreview`: the arguments as JSON, cut to 200 characters. */
export function argsPreview(args: unknown): string {
  const json = JSON.stringify(args ?? {});
  return json.length > ARGS_PREVIEW ? `${json.slice(0, ARGS_PREVIEW - 1)}…` : json;
}

/** A tool result as the model reads it: text parts joined; other parts named; structured content as JSON when there is no text. */
function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map((p) => {
    if (p.type === 'text') return p.text;
    if (p.type === 'resource') return 'text' in p.resource ? p.resource.text : `[resource ${p.resource.uri}]`;
    if (p.type === 'resource_link') return `[resource ${p.uri}]`;
    return `[${p.type} ${p.mimeType}]`;
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
