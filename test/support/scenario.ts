/**
 * @module HTTP scenario tables (STYLE §7, PocketBase's ApiScenario): one row per request with the
 * expected status and body checks, run by one helper against a real server over loopback.
 */
import { expect } from 'vitest';

export interface Scenario {
  name: string;
  method?: string;
  /** Path below the API base, e.g. `/Order?pageSize=2`. */
  url: string;
  headers?: Record<string, string>;
  /** A value is sent as JSON; a string is sent as is (with the given content-type). */
  body?: unknown;
  rawBody?: string;
  status: number;
  /** Subset the JSON body must match (`toMatchObject`). */
  json?: unknown;
  /** Substrings the raw body must contain / must not contain. */
  contains?: string[];
  notContains?: string[];
}

export interface Reply {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

const defaultHeaders = new Map<string, Record<string, string>>();

/**
 * Makes every later `call` and `runScenario` against `base` send these headers (typically an admin's
 * `authorization`) unless the request gives its own; `null` stops it.
 */
export function useHeaders(base: string, headers: Record<string, string> | null): void {
  if (headers) defaultHeaders.set(base, headers);
  else defaultHeaders.delete(base);
}

/** One request against `base` (the API URL), with the headers set by `useHeaders` for it. */
export async function call(base: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...defaultHeaders.get(base), ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

/** Runs a scenario and asserts status and body. */
export async function runScenario(base: string, s: Scenario): Promise<Reply> {
  const reply = await call(base, s.method ?? 'GET', s.url, s.rawBody ?? s.body, s.headers);
  expect(reply.status, `${s.name}: ${reply.text.slice(0, 300)}`).toBe(s.status);
  if (s.json !== undefined) expect(reply.json, s.name).toMatchObject(s.json as object);
  for (const c of s.contains ?? []) expect(reply.text, s.name).toContain(c);
  for (const c of s.notContains ?? []) expect(reply.text, s.name).not.toContain(c);
  if (reply.status >= 400) {
    // DESIGN §4: every error answers the same body, and never a stack trace.
    expect(reply.json, s.name).toMatchObject({ error: expect.any(String), code: expect.stringMatching(/^[A-Z_]+$/) });
    expect(reply.text, s.name).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
  }
  return reply;
}
