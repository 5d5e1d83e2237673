/**
 * @module What function code sees (SPEC §4.8 rule 2, DESIGN §3): the context of the default-export form
 * (`export default (ctx) => …`), whose fields are also the names in scope of the script form.
 */

/** The request as function code sees it. */
/**
 * The default query type: string values keyed by name (coerced per declared `queryParams`). The
 * generator reads a function's query type from code only when it is narrowed from this one.
 */
export interface FunctionQuery {
  [name: string]: unknown;
}

export interface FunctionRequest<TBody = unknown, TQuery = FunctionQuery> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Request headers, lower-case names, without `cookie`, `authorization` and `proxy-authorization`. */
  headers: Record<string, string | string[]>;
  /** Query parameters: declared ones coerced to their type, others as sent (string, or array when repeated). */
  query: TQuery;
  /** The parsed body of a JSON request (`Content-Type: application/json`), else null. */
  bodyJson: TBody | null;
  /** The body exactly as sent, as a string ('' without a body). */
  bodyRaw: string;
}

/** The response a function sets; `status` defaults to 200, `bodyJson` is sent as JSON. */
export interface FunctionResponse<TRes = unknown> {
  status?: number;
  bodyJson?: TRes;
}

/** The authenticated caller (`/api/_me` shape), or null for anonymous calls. */
export interface FunctionCaller {
  id: string;
  username: string | null;
  roles: string[];
}

/** One `validationErrors` entry: a message, or a field pointer and a message. */
export type ValidationEntry = string | { path: string; message: string };

/** List parameters of `get` (SPEC §4.2): `filter`, `sortBy`, `select`, `pageNo`, `pageSize`, `count`, … */
export type GetParams = Record<string, string | number | boolean | undefined>;

/** `rt.join` arguments (DESIGN §4 "Function details"). */
export interface RealtimeJoin {
  /** A Web PubSub or hub connection id (from the client's `connected` event or negotiate). */
  connectionId: string;
  /** The channel without the `<api-name>:` prefix; a name with `:` is private (only functions may use it). */
  channel: string;
  /** True: the connection only receives on this channel. Default false. */
  readOnly?: boolean;
}

/** `rt.send` arguments. */
export interface RealtimeSend {
  channel: string;
  /** Any JSON value; it reaches every joined connection as the message's `data`. */
  body: unknown;
}

/**
 * Real-time from function code (SPEC §4.7 channel table, DESIGN §4): joins any connection to any
 * channel, private ones included, and sends to channels. Both resolve once done on whichever
 * instance holds the connection, and throw a `FunctionApiError` (404 unknown connection, 400 bad
 * channel name) otherwise.
 */
export interface FunctionRealtime {
  /** Joins a connection to a channel; resolves `{ group }`, the wire name (`<api-name>:<channel>`). */
  join(args: RealtimeJoin): Promise<{ group: string }>;
  /** Sends `body` to every connection joined to the channel; resolves `{ group }`. */
  send(args: RealtimeSend): Promise<{ group: string }>;
}

/**
 * `get`, `post`, `patch` of function code: `ctx.get/post/patch` act as the caller, `ctx.app.get/post/patch`
 * with the app's rights. Each throws a `FunctionApiError` (`status`, `body`: the DESIGN §4 error body)
 * for a non-2xx answer, and a `FunctionUsageError` for a name that is not a collection, view or query.
 */
export interface FunctionApiClient {
  /** GET `/api/<collection>` (collection, view or query) → `{ data: [...] }`. */
  get<T = any>(collection: string, params?: GetParams): Promise<T>;
  /** POST `/api/<collection>` with one object or an array → `{ data: [ids] }`. */
  post<T = any>(collection: string, body: unknown): Promise<T>;
  /** PATCH `/api/<collection>/<id>` → the item as it now stands. */
  patch<T = any>(collection: string, id: string, body: unknown): Promise<T>;
}

/**
 * The context of a function call. In the default-export form it is the argument; in the script form each
 * field is a global of the same name. `get`, `post` and `patch` call the app's own API as the caller
 * (same access rules, policies and result shapes as HTTP) and throw a `FunctionApiError` for a non-2xx answer.
 */
export interface FunctionContext<TBody = unknown, TRes = unknown, TQuery = FunctionQuery> {
  req: FunctionRequest<TBody, TQuery>;
  /** Assign or mutate it; in the default-export form, returning a value without touching it answers that value. */
  res: FunctionResponse<TRes>;
  me: FunctionCaller | null;
  /** The api-name and the public base URL of the API (`http://host:port/api`). */
  api: { name: string; baseUrl: string };
  /** `SVC_SECRET_<NAME>` environment variables, as `secrets.<NAME>`. */
  secrets: Record<string, string>;
  /** GET `/api/<collection>` (collection, view or query) → `{ data: [...] }`. */
  get<T = any>(collection: string, params?: GetParams): Promise<T>;
  /** POST `/api/<collection>` with one object or an array → `{ data: [ids] }`. */
  post<T = any>(collection: string, body: unknown): Promise<T>;
  /** PATCH `/api/<collection>/<id>` → the item as it now stands. */
  patch<T = any>(collection: string, id: string, body: unknown): Promise<T>;
  /**
   * The app's own API with the app's full rights (issue 31 §2, docs/functions.md; like a service role):
   * the same `get`/`post`/`patch` as above, but access rules, `_CREATOR` and policies do not apply.
   * Rows it creates get `createdBy` = the function's caller (null for an anonymous call). Each call is
   * logged with the function's name. Agent tools never reach it; use it only where the code itself
   * decides what the caller may learn (e.g. a count over everyone's rows).
   */
  app: FunctionApiClient;
  /** The platform `fetch`, when `functions.allowFetch` is on in svc.json; otherwise calling it throws. */
  fetch: typeof fetch;
  /** Push entries here; when any are present after the code, the answer is 400 with them in `details`. */
  validationErrors: ValidationEntry[];
  /** Channels: `rt.join({ connectionId, channel, readOnly })`, `rt.send({ channel, body })`. */
  rt: FunctionRealtime;
  /** The embedded agent: `agent.connect`, `wake`, `prompt`, `list`, `close`, `setCredits`, `ask`. */
  agent: FunctionAgent;
  /** Background jobs (DESIGN §12): `ctx.jobs.enqueue('sendMail', { to }, { delaySeconds: 60 })`. */
  jobs: FunctionJobs;
  /** Mail through the app's mail settings (svc.json `mail`): `mail.send({ to, subject, text })`. */
  mail: FunctionMail;
  /** Set when this call runs as a job (a trigger, a schedule or `jobs.enqueue`); null for a request. */
  job: { id: string; task: string; attempt: number } | null;
  /** A trigger's event (DESIGN §12): `{ id, trigger, op, collection, rowId, before, after, at, callerId, attempt }`; null otherwise. */
  event: TriggerEvent | null;
  /** A scheduled run's tick (ISO 8601); null otherwise. */
  schedule: { tick: string } | null;
}

/** The event a trigger delivers (DESIGN §12): `before`/`after` as a GET by the app answers, null where none. */
export interface TriggerEvent {
  /** The same on every attempt: use it as the idempotency key. */
  id: string;
  trigger: string;
  op: 'create' | 'update' | 'delete';
  collection: string;
  rowId: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** ISO 8601 time of the change. */
  at: string;
  callerId: string | null;
  attempt: number;
}

/** Options of `ctx.jobs.enqueue`. `runAt` and `delaySeconds` exclude each other. */
export interface EnqueueOptions {
  runAt?: Date | string;
  delaySeconds?: number;
  /** A pending job with the same key is replaced (debounce). */
  key?: string;
  /** Default 10. */
  maxAttempts?: number;
}

/** `ctx.jobs`. */
/** One plain-text mail of `ctx.mail.send`. */
export interface FunctionMailMessage {
  /** One address, `local@domain`. */
  to: string;
  /** One line, at most 998 characters. */
  subject: string;
  /** Plain text, at most 100,000 characters. */
  text: string;
}

/** `ctx.mail` (runtime/functions/function-mail.ts). */
export interface FunctionMail {
  /**
   * Sends one mail through svc.json `mail` (DESIGN §11's transport). Resolves `{ sent: false }` when no
   * `mail.smtp` is set (the mail is written to the log). Throws for a bad address, subject or text, and
   * when the SMTP server refuses or cannot be reached (a job's run is then retried).
   */
  send(mail: FunctionMailMessage): Promise<{ sent: boolean }>;
}

export interface FunctionJobs {
  /** Adds a job running the type-2 function `functionName` with `payload` as its JSON body; durable when it resolves. */
  enqueue(functionName: string, payload?: unknown, options?: EnqueueOptions): Promise<{ id: string }>;
}

/** A uiTools entry (SPEC §2): `params` as a map of name → `{ type, description?, enum? }` or a full JSON Schema object. */
export interface AgentUiTool {
  description: string;
  params?:
    Record<string, { type: string; description?: string; enum?: unknown[] }> | { type: 'object'; properties: Record<string, unknown>; required?: string[] };
  required?: string[];
  returns?: Record<string, unknown>;
}

/** `agent.connect` options (SPEC §4.11 table, DESIGN §7 `actAs`). */
export interface AgentConnectOptions {
  /** The identity the session belongs to. */
  identityId: string;
  /** The client's Web PubSub connection id (from its `connected` event); joined to the channel read-write. */
  connectionId: string;
  /** Default `agent:<identityId>` (private: only functions may join it). */
  channelName?: string;
  /** Starts a turn with this message once the connection has joined. */
  message?: string;
  /** Rung: `base` (default), `pro`, `max`, `norway-base`, `norway-pro`, `norway-max`. */
  model?: string;
  /** Stats callback (SPEC §6.4): absolute, or a leading-slash URL relative to the app's base URL. */
  callbackUrl?: string;
  /** Seeds the identity's session credit counter once; 0 or absent: no limit. */
  sessionCredits?: number;
  uiTools?: Record<string, AgentUiTool>;
  /** `all` (default), `dynamic`, `explicit` (with `apiToolsAllow`) or `none`. */
  apiTools?: 'all' | 'dynamic' | 'explicit' | 'none';
  /** With `explicit`: `<METHOD>-<name>` entries, e.g. `GET-Product`. */
  apiToolsAllow?: string[];
  /** API tools run with this identity's access instead of `identityId`'s. */
  actAs?: string;
}

/** A running session as `agent.list` reports it (`startedAt` in unix seconds). */
export interface AgentSessionInfo {
  identityId: string;
  channel: string;
  agent: 'starting' | 'idle' | 'busy' | 'stopped';
  threadId: string | null;
  startedAt: number;
}

/**
 * The embedded agent from function code (SPEC §4.11, DESIGN §7 "Function context"). Each call throws a
 * `FunctionApiError` when refused (400 bad options, 404 unknown connection, 503 no agent configured).
 */
export interface FunctionAgent {
  /** Joins the connection to the session channel, wakes the session, starts a turn when `message` is set. */
  connect(options: AgentConnectOptions): Promise<{ channel: string; credits: number }>;
  /** Starts the identity's session if it is not running. */
  wake(options: { identityId: string }): Promise<{ agent: AgentSessionInfo['agent'] }>;
  /** Runs one turn from the backend and waits for it (events still go to the channel). */
  prompt(options: { identityId: string; message: string; model?: string }): Promise<{ status: 'completed' | 'failed'; text: string; error?: string }>;
  /** The running sessions. */
  list(): Promise<AgentSessionInfo[]>;
  /** Stops the identity's session; `closed: false` when none was running. */
  close(options: { identityId: string }): Promise<{ closed: boolean }>;
  /** Resets the identity's session credit counter (0 = no limit). */
  setCredits(options: { identityId: string; sessionCredits: number }): Promise<{ sessionCredits: number }>;
  /** One-shot completion: no session, no tools, no streaming. */
  ask(options: { messages: { role: 'system' | 'user' | 'assistant'; content: string }[]; model?: string }): Promise<{
    text: string;
    usage: { inputTokens: number; outputTokens: number; cachedInputTokens: number };
    credits: number;
    model: string;
  }>;
}
