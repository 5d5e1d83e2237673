/**
 * @module The API tools of agent sessions, run in-process as the session's identity (DESIGN §7
 * `actAs`, SPEC §7 agent rules): a tool of `agent-tools.json` (or a dynamic meta-tool) becomes an
 * in-process API request, or a function call for a tool that names a function; `GET /_me` answers the
 * caller. Every outcome is the text the model reads (`toolOutput`), an error as `<status> …`.
 */
import { answerError, HttpError } from '../errors.js';
import { ANONYMOUS, type Caller } from '../auth/caller.js';
import type { AuthService } from '../auth/auth-service.js';
import { apiClientFor } from '../core/api-client.js';
import type { AppRuntime } from '../core/context.js';
import type { FunctionInvoker } from '../http/function-routes.js';
import type { Logger } from '../log.js';
import type { SessionOptions } from './host.js';
import { toolOutput, type ToolCaller } from './tools.js';

export interface ApiToolRunnerOptions {
  app: AppRuntime;
  auth: AuthService;
  /** The app's API tools (`agent-tools.json`). */
  tools: ToolCaller;
  /** Runs functions for API tools that name one. */
  invokeFunction?: FunctionInvoker;
  /** The server's own base URL (`http://host:port`), known once it listens. */
  baseUrl(): string;
  logger: Logger;
}

export class ApiToolRunner {
  constructor(private readonly options: ApiToolRunnerOptions) {}

  /** The caller of an identity id: a user, else a service account, else anonymous (DESIGN §7 `actAs`). */
  async callerOf(id: string): Promise<Caller> {
    const identities = this.options.auth.identities;
    return (await identities.get('user', id)) ?? (await identities.get('serviceAccount', id)) ?? ANONYMOUS;
  }

  /**
   * Runs one API tool (or, `dynamic`, one meta-tool) as the session's identity.
   * @returns the status and the text the model reads (`400 …` for an error); never throws
   */
  async runApiTool(options: SessionOptions, name: string, args: unknown, dynamic: boolean): Promise<{ status: number; output: string }> {
    try {
      if (dynamic) {
        const a = (args ?? {}) as { name?: unknown; search?: unknown; arguments?: unknown };
        if (name === 'list-api-endpoints') return { status: 200, output: this.options.tools.listEndpoints(a.search) };
        const tool = typeof a.name === 'string' ? this.options.tools.find(a.name) : undefined;
        if (!tool) throw new HttpError('NOT_FOUND', `no endpoint is named ${JSON.stringify(a.name)}: call list-api-endpoints`);
        if (name === 'get-api-endpoint-schema') return { status: 200, output: JSON.stringify(tool.parameters) };
        return await this.callTool(options, tool.name, a.arguments ?? {});
      }
      return await this.callTool(options, name, args);
    } catch (err) {
      const { status, body } = answerError(err);
      return { status, output: toolOutput(status, body) };
    }
  }

  private async callTool(options: SessionOptions, name: string, args: unknown): Promise<{ status: number; output: string }> {
    const tool = this.options.tools.find(name);
    if (!tool) throw new HttpError('NOT_FOUND', `no API tool is named ${JSON.stringify(name)}`);
    const call = this.options.tools.callOf(tool, args);
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
        if (!(err instanceof HttpError)) this.options.logger.error({ err, function: fn }, 'function called by an agent tool failed');
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
}

/** The function an API tool path names (`/_invoke/<name>` or `/<name>` of a type-1 function), or null. */
function functionNameOf(path: string, functions: { name: string; enabled: boolean; functionTypeId: number }[]): string | null {
  const m = /^\/_invoke\/([^/]+)$/.exec(path);
  if (m) return decodeURIComponent(m[1]);
  const name = path.slice(1);
  return functions.some((f) => f.name === name && f.enabled && f.functionTypeId === 1) ? name : null;
}
