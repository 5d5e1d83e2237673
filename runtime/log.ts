/**
 * @module The runtime's structured logger (pino). Level from env `SVC_LOG_LEVEL` (default `info`).
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** A pino logger writing JSON lines to stdout; `base` fields (e.g. the app name) go on every line. */
export function createLogger(base: Record<string, unknown> = {}): Logger {
  return pino({ level: process.env.SVC_LOG_LEVEL ?? 'info', base: { ...base }, timestamp: pino.stdTimeFunctions.isoTime });
}
