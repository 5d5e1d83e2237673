/**
 * @module The file-descriptor limit of the process, read at start (issue 24 §2): every socket is a
 * descriptor, so the soft limit caps the connections one instance can hold. Node cannot raise it
 * (that needs `setrlimit`, a native call), so `svc serve` logs one line saying the limit and how many
 * connections it allows when it is below `ENOUGH_DESCRIPTORS` (a limit that would stop an instance
 * at a few thousand connections, as the old 1,024 default does; 20,000 is not reported, issue 32 §4);
 * docs/realtime.md ("Many connections") says how to raise it.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../log.js';

/** A soft limit at or above this is not reported: room for about 4,000 connections beside everything else. */
export const ENOUGH_DESCRIPTORS = 4_096;
/** Descriptors kept for everything else (database, Redis, files, the listening socket). */
export const RESERVED_DESCRIPTORS = 100;

/** The `Max open files` limits of a `/proc/<pid>/limits` text; null when absent. `unlimited` is Infinity. */
export function parseOpenFilesLimit(limits: string): { soft: number; hard: number } | null {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  const value = (v: string) => (v === 'unlimited' ? Infinity : Number(v));
  const soft = value(m[1]);
  const hard = value(m[2]);
  return Number.isNaN(soft) || Number.isNaN(hard) ? null : { soft, hard };
}

/** This process's limits (Linux `/proc/self/limits`); null elsewhere. */
export function openFilesLimit(): { soft: number; hard: number } | null {
  try {
    return parseOpenFilesLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return null;
  }
}

/** Logs one warning when the soft limit is below `ENOUGH_DESCRIPTORS`: the limit and the connections it allows. */
export function reportOpenFilesLimit(logger: Logger, limit = openFilesLimit()): void {
  if (!limit || limit.soft >= ENOUGH_DESCRIPTORS) return;
  const connections = Math.max(0, limit.soft - RESERVED_DESCRIPTORS);
  logger.warn(
    { softLimit: limit.soft, hardLimit: limit.hard, connections },
    `file-descriptor limit ${limit.soft} (hard ${limit.hard}): about ${connections} real-time connections at most; raise it with ulimit -n or LimitNOFILE (docs/realtime.md "Many connections")`,
  );
}
