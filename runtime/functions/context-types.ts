/**
 * @module The types function authors write against (SPEC §4.8 rule 2, DESIGN §4 "Function details"):
 * `FunctionContext<TBody, TRes, TQuery>`, the `ctx` of a default-export function and the globals of
 * the script form. Types only: the functions runtime builds the values. `svc generate` reads `TBody`,
 * `TRes` and a narrowed `TQuery` from code as advisory OpenAPI schemas (SPEC §4.8 rule 7).
 *
 * ```ts
 * import type { FunctionContext } from 'svc/runtime';
 * export default async (ctx: FunctionContext<{ name: string }, { greeting: string }>) => {
 *   ctx.res = { bodyJson: { greeting: `Hello ${ctx.req.bodyJson.name}` } };
 * };
 * ```
 */

/**
 * Query parameters as the function sees them when `TQuery` is not narrowed: declared `queryParams`
 * arrive coerced to their type (`integer` → number, `boolean` → boolean, ...); others are strings.
 */
export interface FunctionQuery {
  [name: string]: string | number | boolean | undefined;
}

/** The HTTP methods a function may be called with (DESIGN §3). */
export type FunctionMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** The request as the function sees it (SPEC §4.8 rule 2). */
export interface FunctionRequest<TBody = unknown, TQuery = FunctionQuery> {
  /** The parsed JSON body (undefined when there is none); declared `requestBody` fields are already checked. */
  bodyJson: TBody;
  /** The body as sent, as a string ('' when there is none). */
  bodyRaw: string;
  method: FunctionMethod;
  /** Request headers, lower-case names, without `cookie` and `authorization`. */
  headers: Record<string, string | undefined>;
  query: TQuery;
}

/** What the function answers (SPEC §4.8 rule 3): `status` defaults to 200. */
export interface FunctionResponse<TRes = unknown> {
  status?: number;
  bodyJson?: TRes;
}

/** The authenticated caller (`_me` shape, DESIGN §4 "Auth bodies"). */
export interface FunctionUser {
  id: string;
  username: string;
  roles: string[];
}

/** API information (`ctx.api`). */
export interface FunctionApiInfo {
  /** The api-name (svc.json `name`). */
  name: string;
  /** `<origin>/api` of the request. */
  baseUrl: string;
}

/** Query parameters of a collection read (SPEC §4.2), e.g. `{ filter: 'paid eq true', pageSize: 50 }`. */
export type FunctionReadParams = Record<string, string | number | boolean>;

/** A `validationErrors` entry: a message, or a message for one field (a JSON Pointer). */
export type FunctionValidationError = string | { path: string; message: string };

/**
 * The function context (SPEC §4.8 rule 2): `ctx` of `export default (ctx) => ...`, and the globals of
 * the script form. `TBody` types `req.bodyJson`, `TRes` types `res.bodyJson`, `TQuery` types
 * `req.query`; all three are advisory and never reject a request (declared fields are what is enforced).
 */
export interface FunctionContext<TBody = unknown, TRes = unknown, TQuery = FunctionQuery> {
  req: FunctionRequest<TBody, TQuery>;
  /** Assign or change it; `status` defaults to 200. */
  res: FunctionResponse<TRes>;
  /** The authenticated caller, or null for an anonymous one. */
  me: FunctionUser | null;
  api: FunctionApiInfo;
  /** `SVC_SECRET_<NAME>` values by `<NAME>` (DESIGN §3). */
  secrets: Readonly<Record<string, string | undefined>>;
  /**
   * Reads a collection, view or query as the caller (access rules and policies apply), with the same
   * result shapes as HTTP: `get('Order', { filter })` → `{ data: [...] }`, `get('Order/<id>')` → the row.
   */
  get<T = unknown>(path: string, params?: FunctionReadParams): Promise<T>;
  /** Creates one row or an array of rows as the caller → `{ data: [<id>, ...] }`. */
  post(collection: string, body: object | object[]): Promise<{ data: string[] }>;
  /** Changes some properties of `<collection>/<id>` as the caller → the row as it now stands. */
  patch<T = unknown>(path: string, body: object): Promise<T>;
  /** The global `fetch`, when svc.json `functions.allowFetch` is on (else it throws a clear error). */
  fetch: typeof globalThis.fetch;
  /** Entries added here answer 400 with them in `details` once the code has run. */
  validationErrors: FunctionValidationError[];
}
