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
  /** The platform `fetch`, when `functions.allowFetch` is on in svc.json; otherwise calling it throws. */
  fetch: typeof fetch;
  /** Push entries here; when any are present after the code, the answer is 400 with them in `details`. */
  validationErrors: ValidationEntry[];
  /** Channels: `rt.join({ connectionId, channel, readOnly })`, `rt.send({ channel, body })`. */
  rt: FunctionRealtime;
}
