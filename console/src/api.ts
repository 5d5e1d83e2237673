/**
 * The console's one way to the server: `fetch` on the same origin with the cookie session of SPEC §5.
 * Browsers send `Origin` on every POST, PATCH and DELETE, which is what the server's Origin check
 * reads. A 401 is answered once by `POST /api/_refresh` (the refresh cookie) and the call is repeated.
 */

/** One failed field of a DESIGN §4 error body. */
export interface ErrorDetail {
  path?: string;
  message: string;
}

/** An answer that was not 2xx, with the DESIGN §4 body when there was one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
    readonly details: ErrorDetail[],
  ) {
    super(message);
  }

  /** The messages of `details` by their first path segment (`/price` → `price`). */
  fieldErrors(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const d of this.details) {
      const field = (d.path ?? '').replace(/^\//, '').split(/[/.[]/)[0];
      if (field) out[field] = out[field] ? `${out[field]}; ${d.message}` : d.message;
    }
    return out;
  }
}

/** What `call` answers: the parsed body (JSON or text), the status, headers and milliseconds taken. */
export interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
  ms: number;
}

async function parse(res: Response): Promise<unknown> {
  if (res.status === 204) return null;
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function errorOf(status: number, body: unknown): ApiError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const message =
    typeof b.error === 'string'
      ? b.error
      : typeof b.error_description === 'string'
        ? b.error_description
        : typeof body === 'string' && body
          ? body
          : `HTTP ${status}`;
  const details = Array.isArray(b.details)
    ? b.details.map((d) =>
        typeof d === 'string' ? { message: d } : { path: String((d as ErrorDetail).path ?? ''), message: String((d as ErrorDetail).message ?? '') },
      )
    : [];
  return new ApiError(status, message, typeof b.code === 'string' ? b.code : undefined, details);
}

let refreshing: Promise<boolean> | undefined;

/** Renews the access cookie once for every caller waiting on a 401. */
function refresh(): Promise<boolean> {
  refreshing ??= fetch('/api/_refresh', { method: 'POST', credentials: 'same-origin' })
    .then((r) => r.ok)
    .catch(() => false)
    .finally(() => setTimeout(() => (refreshing = undefined), 0));
  return refreshing;
}

/** A request body: JSON (any value) or a FormData (multipart, for blob uploads). */
export type Body = FormData | unknown;

/**
 * Calls `/api<path>` and answers whatever status came back (no throw on 4xx/5xx).
 * @param path starts with `/`, query string included
 */
export async function call<T = unknown>(method: string, path: string, body?: Body, retry = true): Promise<Answer<T>> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: {} };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const started = performance.now();
  const res = await fetch(`/api${path}`, init);
  if (res.status === 401 && retry && !path.startsWith('/_auth') && !path.startsWith('/_refresh') && (await refresh())) return call(method, path, body, false);
  const parsed = await parse(res);
  return { status: res.status, body: parsed as T, headers: res.headers, ms: Math.round(performance.now() - started) };
}

/** Like `call`, but throws `ApiError` unless the answer is 2xx; answers the body. */
export async function api<T = unknown>(method: string, path: string, body?: Body): Promise<T> {
  const answer = await call<T>(method, path, body);
  if (answer.status < 200 || answer.status > 299) throw errorOf(answer.status, answer.body);
  return answer.body;
}

/** The `ApiError` of a non-2xx answer. */
export function toError(answer: Answer<unknown>): ApiError {
  return errorOf(answer.status, answer.body);
}

/** A query string from the entries that have a value (`?a=1&b=x`), or ''. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The message of anything thrown. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
