/**
 * @module Function schedules (DESIGN §12): every instance computes each scheduled type-2 function's
 * next tick with croner; at a tick it claims `(function, tick)` in `_svc_schedule_ticks` and, only when
 * its insert won, adds the `svc_schedule` job in the same transaction: exactly one run per tick across
 * every instance sharing the database. `catchUp` runs the last missed tick once at start.
 */
import { Cron } from 'croner';
import type { FunctionDefinition } from '../contract/manifest.js';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import { raw, sql } from '../query/sql.js';
import type { JobEngine } from './engine.js';

/** Tick rows kept per function; older ones are pruned after each claim. */
export const KEEP_TICKS = 100;

const DDL = `CREATE TABLE IF NOT EXISTS "_svc_schedule_ticks" ("function" TEXT NOT NULL, "tick" TEXT NOT NULL, "at" TEXT NOT NULL, PRIMARY KEY ("function", "tick"))`;

/** The scheduled functions of a manifest: enabled, type 2, with a schedule. */
export function scheduledFunctions(functions: FunctionDefinition[]): FunctionDefinition[] {
  return functions.filter((f) => f.enabled && f.functionTypeId === 2 && f.schedule !== undefined);
}

/**
 * The first tick of `schedule` strictly after `after`, read in its time zone (UTC when absent), or null
 * when the pattern has no further tick. Source: DESIGN §12.
 */
export function nextTick(schedule: NonNullable<FunctionDefinition['schedule']>, after: Date): Date | null {
  return new Cron(schedule.cron, { paused: true, timezone: schedule.timezone ?? 'UTC' }).nextRun(after);
}

/** The last tick of `schedule` at or before `now` (searched back up to 366 days), or null. */
export function previousTick(schedule: NonNullable<FunctionDefinition['schedule']>, now: Date): Date | null {
  const cron = new Cron(schedule.cron, { paused: true, timezone: schedule.timezone ?? 'UTC' });
  const runs = cron.previousRuns(1, now);
  return runs[0] ?? null;
}

/** Runs the schedules of the current manifest; `reschedule` after a dev reload, `stop` at shutdown. */
export class Scheduler {
  private timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private signature = '';

  constructor(
    private readonly db: Database,
    private readonly engine: JobEngine,
    private readonly logger: Logger,
  ) {}

  /** Creates the tick table (both databases), then schedules `functions`. */
  async start(functions: FunctionDefinition[]): Promise<void> {
    await this.db.query(raw(DDL));
    await this.reschedule(functions, true);
  }

  /**
   * Replaces the schedules with those of `functions`.
   * @returns whether the set of schedules changed (names, crons, zones)
   */
  async reschedule(functions: FunctionDefinition[], atStart = false): Promise<boolean> {
    const scheduled = scheduledFunctions(functions);
    const signature = JSON.stringify(scheduled.map((f) => [f.name, f.schedule]));
    if (signature === this.signature && !atStart) return false;
    this.signature = signature;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const f of scheduled) {
      if (atStart && f.schedule!.catchUp) await this.catchUp(f);
      this.arm(f);
    }
    return true;
  }

  /** Stops every timer; ticks not yet claimed are left to other instances. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private async catchUp(f: FunctionDefinition): Promise<void> {
    const last = previousTick(f.schedule!, new Date());
    if (last) await this.claim(f.name, last);
  }

  private arm(f: FunctionDefinition): void {
    if (this.stopped) return;
    const tick = nextTick(f.schedule!, new Date());
    if (!tick) return;
    // setTimeout caps at 2^31-1 ms: re-arm on waking early.
    const wait = Math.min(Math.max(0, tick.getTime() - Date.now()), 2 ** 31 - 1);
    const timer = setTimeout(() => {
      if (Date.now() < tick.getTime()) return this.arm(f);
      this.claim(f.name, tick)
        .catch((err: unknown) => this.logger.error({ err, function: f.name }, 'schedule tick failed'))
        .finally(() => this.arm(f));
    }, wait);
    timer.unref();
    this.timers.set(f.name, timer);
  }

  /** Claims `(name, tick)`; the winner adds the job in the same transaction. @returns whether it won */
  async claim(name: string, tick: Date): Promise<boolean> {
    const iso = tick.toISOString();
    const won = await this.db.transaction(async (tx) => {
      const rows = await this.db.query(
        sql`INSERT INTO "_svc_schedule_ticks" ("function", "tick", "at") VALUES (${name}, ${iso}, ${new Date().toISOString()})
            ON CONFLICT DO NOTHING RETURNING "tick"`,
        tx,
      );
      if (rows.length === 0) return false;
      await this.engine.add({ task: 'svc_schedule', payload: { function: name, tick: iso } }, tx);
      return true;
    });
    if (won) {
      this.engine.wake();
      await this.db.query(
        sql`DELETE FROM "_svc_schedule_ticks" WHERE "function" = ${name} AND "tick" NOT IN
            (SELECT "tick" FROM "_svc_schedule_ticks" WHERE "function" = ${name} ORDER BY "tick" DESC LIMIT ${KEEP_TICKS})`,
      );
    }
    return won;
  }
}
