/**
 * @module The runtime's structured logger (pino). Level from env `SVC_LOG_LEVEL` (default `info`).
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** A pino logger writing JSON lines to stdout; `base` fields (e.g. the app name) go on every line. */
export function createLogger(base: Record<string, unknown> = {}): Logger {
  return pino({ level: process.env.SVC_LOG_LEVEL ?? 'info', base: { ...base }, timestamp: pino.stdTimeFunctions.isoTime });
}

/**
 * A URL fit for a log line: its query string and fragment replaced by `?[redacted]` and any user
 * information (`user:password@`) dropped, since callback and provider URLs carry shared secrets
 * there. Works on text that does not parse as a URL too.
 * @example redactUrl('https://h.example/stats?key=s3cret') === 'https://h.example/stats?[redacted]'
 */
export function redactUrl(url: string): string {
  const cut = url.search(/[?#]/);
  const kept = (cut < 0 ? url : url.slice(0, cut)).replace(/^([a-z][\w+.-]*:\/\/)[^/]*@/i, '$1');
  return cut < 0 ? kept : `${kept}?[redacted]`;
}
