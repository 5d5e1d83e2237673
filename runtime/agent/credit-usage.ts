/**
 * @module Where the agent's credits went (SPEC §8 "Credits"; DESIGN §7, §9 credits chart): every charge
 * of the ledger (credits.ts) — a thread turn, a `compact` summary, a `ctx.agent.ask` — adds its credits
 * and one call to `_svc_agent_credit_usage`, per source and time bucket, and the admin chart
 * (`GET /api/_admin/agent/usage`) sums those buckets per step.
 *
 * Two bucket sizes, written by one statement (a two-row upsert) per charge:
 * - minute buckets (`spanSeconds` 60), kept {@link AGENT_USAGE_MINUTE_KEEP_DAYS} days: they answer any step that is
 *   a whole number of minutes (the endpoint's smallest step is 60 s) over the recent past;
 * - hour buckets (`spanSeconds` 3600), kept {@link AGENT_USAGE_HOUR_KEEP_DAYS} days: they answer steps of whole
 *   hours (the console's per-day chart) with at most 24 rows per source and day.
 * So the table holds at most 3 sources × (35 × 1440 + 400 × 24) ≈ 180k rows, however busy the app.
 * Buckets are UTC, aligned to the epoch like the endpoint's steps; `startMs` is epoch milliseconds so
 * both providers group them with the same integer arithmetic.
 *
 * The upsert runs right after the ledger's UPDATE and never fails a charge: the ledger is what bills
 * and pauses, this table only explains it (and an app whose migrations predate the table keeps
 * charging). Old buckets are deleted by one DELETE at most once an hour per instance, after a charge.
 */
import type { Database } from '../data/database.js';
import { ident, raw, sql } from '../query/sql.js';
import { AGENT_USAGE_HOUR_KEEP_DAYS, AGENT_USAGE_MINUTE_KEEP_DAYS } from '../contract/limits.js';

const USAGE = ident('_svc_agent_credit_usage');

/** What spent credits: a thread turn, a `compact` summary, or a `ctx.agent.ask` completion. */
export type CreditSource = 'turn' | 'ask' | 'compact';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** Credits per source in one step, with the number of charged turns (source `turn`). */
export interface UsageStep {
  /** Start of the step, ISO 8601 (UTC). */
  time: string;
  /** All credits charged in the step. */
  credits: number;
  /** Thread turns charged in the step (turns that cost 0 credits are not charged, so not counted). */
  turns: number;
  /** The step's credits per source. */
  bySource: Record<CreditSource, number>;
}

/** Records charges and reads them back per step. */
export class CreditUsage {
  /** The hour (epoch ms) of the last prune by this instance. */
  private prunedHour = -1;

  constructor(private readonly db: Database) {}

  /**
   * Adds `credits` (> 0) and one call of `source` to the minute and hour buckets of `at`, in one
   * statement; at the first charge of a new hour it also prunes old buckets (a second statement).
   * @throws what the database throws (the ledger catches it: see the module note)
   */
  async record(source: CreditSource, credits: number, at: Date): Promise<void> {
    const ms = at.getTime();
    const minute = Math.floor(ms / MINUTE_MS) * MINUTE_MS;
    const hour = Math.floor(ms / HOUR_MS) * HOUR_MS;
    await this.db.query(
      sql`INSERT INTO ${USAGE} ("spanSeconds", "startMs", "source", "credits", "calls")
          VALUES (${60}, ${minute}, ${source}, ${credits}, ${1}), (${3600}, ${hour}, ${source}, ${credits}, ${1})
          ON CONFLICT ("spanSeconds", "startMs", "source")
          DO UPDATE SET "credits" = ${USAGE}."credits" + excluded."credits", "calls" = ${USAGE}."calls" + excluded."calls"`,
    );
    if (hour !== this.prunedHour) {
      this.prunedHour = hour;
      await this.db.query(
        sql`DELETE FROM ${USAGE} WHERE ("spanSeconds" = ${60} AND "startMs" < ${minute - AGENT_USAGE_MINUTE_KEEP_DAYS * DAY_MS})
            OR ("spanSeconds" = ${3600} AND "startMs" < ${hour - AGENT_USAGE_HOUR_KEEP_DAYS * DAY_MS})`,
      );
    }
  }

  /**
   * Credits per step from `from` to `to`: one entry per step whose start (aligned to the epoch,
   * `floor(t / step) * step`) is before `to`, the first holding `from`. An entry sums the buckets that
   * start in its step and before `to`: the first step is whole (it may begin before `from`) and `to`
   * is taken to the bucket. Whole-hour steps read hour buckets; other steps (whole minutes) read
   * minute buckets, which reach back {@link AGENT_USAGE_MINUTE_KEEP_DAYS} days.
   * @param stepSeconds - a multiple of 60 (the caller checks it)
   */
  async perStep(from: Date, to: Date, stepSeconds: number): Promise<UsageStep[]> {
    const stepMs = stepSeconds * 1000;
    const span = stepSeconds % 3600 === 0 ? 3600 : 60;
    const first = Math.floor(from.getTime() / stepMs) * stepMs;
    const step = raw(String(stepMs)); // a validated integer: inlined so both providers do integer division
    const rows = await this.db.query<Record<string, unknown>>(
      sql`SELECT ("startMs" / ${step}) * ${step} AS "t", "source", SUM("credits") AS "credits", SUM("calls") AS "calls" FROM ${USAGE}
          WHERE "spanSeconds" = ${span} AND "startMs" >= ${first} AND "startMs" < ${to.getTime()} GROUP BY 1, 2`,
    );
    const data: UsageStep[] = [];
    for (let t = first; t < to.getTime(); t += stepMs) {
      data.push({ time: new Date(t).toISOString(), credits: 0, turns: 0, bySource: { turn: 0, ask: 0, compact: 0 } });
    }
    for (const r of rows) {
      const entry = data[(Number(r.t) - first) / stepMs]; // rows start at multiples of stepMs from `first`
      const source = String(r.source) as CreditSource;
      if (!entry || !Object.hasOwn(entry.bySource, source)) continue;
      entry.credits += Number(r.credits);
      entry.bySource[source] += Number(r.credits);
      if (source === 'turn') entry.turns += Number(r.calls);
    }
    return data;
  }
}
