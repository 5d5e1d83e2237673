/**
 * @module Checks a function's `"schedule"` (DESIGN §12): a cron of five fields (or six with seconds) that
 * croner accepts, a known IANA time zone, and only on type-2 functions.
 */
import { Cron } from 'croner';
import type { RawFunctionDefinition } from '../model/definitions.js';
import type { Diagnostic } from './diagnostics.js';

/** Whether `timeZone` is an IANA zone this Node knows (`Intl.DateTimeFormat` refuses unknown ones). */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat(undefined, { timeZone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why `cron` is not a valid schedule pattern, or null when it is: five fields, or six with seconds first.
 * Source: DESIGN §12 (schedules).
 */
export function cronProblem(cron: string): string | null {
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `cron "${cron}" has ${fields} fields; write five (minute hour day month weekday) or six (seconds first)`;
  try {
    new Cron(cron, { paused: true });
    return null;
  } catch (e) {
    return `cron "${cron}" is invalid: ${(e as Error).message.replace(/^CronPattern: /, '')}`;
  }
}

/**
 * Checks the schedule of function `f` defined in `file`.
 * @returns diagnostics `DEF_SCHEDULE_NOT_TYPE_2` (`/schedule`), `DEF_INVALID_CRON` (`/schedule/cron`),
 *   `DEF_UNKNOWN_TIME_ZONE` (`/schedule/timezone`); none when there is no schedule
 * Source: DESIGN §12, STYLE §4 (diagnostics).
 */
export function checkSchedule(file: string, f: RawFunctionDefinition): Diagnostic[] {
  const s = f.schedule;
  if (s === undefined) return [];
  const out: Diagnostic[] = [];
  if (f.functionTypeId !== 2) {
    out.push({ code: 'DEF_SCHEDULE_NOT_TYPE_2', file, path: '/schedule', message: 'only type-2 functions (functionTypeId 2) can have a schedule' });
  }
  const problem = cronProblem(s.cron);
  if (problem) out.push({ code: 'DEF_INVALID_CRON', file, path: '/schedule/cron', message: problem });
  if (s.timezone !== undefined && !isKnownTimeZone(s.timezone)) {
    out.push({
      code: 'DEF_UNKNOWN_TIME_ZONE',
      file,
      path: '/schedule/timezone',
      message: `unknown IANA time zone "${s.timezone}" (e.g. "Europe/Oslo", "UTC")`,
    });
  }
  return out;
}
