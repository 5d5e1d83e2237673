/**
 * @module The app's agent credits (SPEC §3 credit states, §8 "Credits"; DESIGN §7 `credits`): one row
 * of `_svc_agent_credits` holding what was consumed, what admins added, this Europe/Oslo month's use,
 * an admin's monthly cap and the pause. Every charge is one UPDATE (no read-modify-write: exact under
 * concurrent turns); the month rolls over inside that statement. Agent turns, `compact` and `ask`
 * are paused while this month's use is at or above the cap in force — computed from the figures at
 * each refusal, so lowering the cap pauses at once — or while an admin pauses them (the rest of the
 * app keeps serving).
 *
 * - `business` (default): `credits` is cumulative consumption; only the cap or an admin pauses.
 * - `self-serve`: `credits` is `initialBalance + added − consumed`; at 0 or below turns and `ask` are refused.
 * - A cap pause lifts when the Oslo month rolls over or an admin raises the cap above this month's
 *   use (or removes it); an admin's pause lifts with `paused: false` (which cannot lift a reached cap).
 *
 * Each charge names its source (a turn, `ask`, `compact`) and is also recorded per minute and hour in
 * `_svc_agent_credit_usage` right after the UPDATE (credit-usage.ts); that record never fails a charge.
 */
import type { CreditsSettings } from '../contract/settings.js';
import type { Database } from '../data/database.js';
import { HttpError } from '../errors.js';
import { ident, raw, sql, type Sql } from '../query/sql.js';
import { toBool } from '../auth/store.js';
import { CreditUsage, type CreditSource } from './credit-usage.js';

const CREDITS = ident('_svc_agent_credits');
const ROW = 'app';
const OSLO = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Oslo', year: 'numeric', month: '2-digit' });

/** The calendar month of `at` in Europe/Oslo, as `YYYY-MM` (DST and month ends included). */
export function osloMonth(at: Date): string {
  const parts = Object.fromEntries(OSLO.formatToParts(at).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}`;
}

/** `GET /api/_agent/credits` and `svc credits` (DESIGN §7). */
export interface CreditState {
  mode: CreditsSettings['mode'];
  /** Business: consumed so far; self-serve: the balance left. */
  credits: number;
  /** Credits per Oslo month before turns pause; null = no cap. */
  monthlyCap: number | null;
  /** Consumed in the current Oslo month. */
  monthUsed: number;
  paused: boolean;
}

/** `PATCH /api/_agent/credits`: any of these. */
export interface CreditChange {
  /** Credits added to the balance (self-serve top-up; business: recorded, never needed). */
  addBalance?: number;
  /** New cap (credits per month), or null for none. */
  monthlyCap?: number | null;
  /** true pauses agent turns and `ask`; false lifts a pause. */
  paused?: boolean;
}

type Raw = Record<string, unknown>;

/** Options of a `CreditLedger`. */
export interface CreditLedgerOptions {
  /** The clock months and usage buckets are read from (injectable for tests). Default: the system clock. */
  now?: () => Date;
  /** Told when recording a charge's usage failed (the charge itself stands). Default: ignored. */
  onUsageError?: (err: unknown) => void;
}

/** Whether this month's use has reached the cap in force (none: never). */
function capReached(cap: number | null, monthUsed: number): boolean {
  return cap !== null && monthUsed >= cap;
}

export class CreditLedger {
  /** Settles once the row exists (it is never deleted); reset when making it failed, so the next call tries again. */
  private exists?: Promise<void>;

  private readonly now: () => Date;
  private readonly onUsageError: (err: unknown) => void;
  /** Where each charge is recorded per source and time bucket (the admin chart). */
  private readonly usage: CreditUsage;

  constructor(
    private readonly db: Database,
    private readonly settings: CreditsSettings,
    options: CreditLedgerOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.onUsageError = options.onUsageError ?? (() => {});
    this.usage = new CreditUsage(db);
  }

  /** Makes the ledger's one row the first time it is needed. */
  private ensureRow(): Promise<void> {
    this.exists ??= this.db
      .query(
        sql`INSERT INTO ${CREDITS} (${ident('id')}, ${ident('consumed')}, ${ident('added')}, ${ident('monthUsed')}, ${ident('capSet')}, ${ident('paused')}, ${ident('updatedAt')})
            VALUES (${ROW}, ${0}, ${0}, ${0}, ${false}, ${false}, ${new Date()}) ON CONFLICT (${ident('id')}) DO NOTHING`,
      )
      .then(
        () => {},
        (err: unknown) => {
          this.exists = undefined;
          throw err;
        },
      );
    return this.exists;
  }

  private async row(): Promise<Raw> {
    await this.ensureRow();
    return (await this.db.query<Raw>(sql`SELECT * FROM ${CREDITS} WHERE ${ident('id')} = ${ROW}`, undefined, { point: true }))[0];
  }

  /** The cap in force: an admin's, else svc.json's. */
  private capOf(r: Raw): number | null {
    if (toBool(r.capSet)) return r.monthlyCap === null || r.monthlyCap === undefined ? null : Number(r.monthlyCap);
    return this.settings.monthlyCap;
  }

  /** `capOf` as SQL over the row being updated. */
  private capInForce(): Sql {
    const configured = this.settings.monthlyCap === null ? raw('NULL') : sql`${this.settings.monthlyCap}`;
    return sql`(CASE WHEN ${ident('capSet')} THEN ${ident('monthlyCap')} ELSE ${configured} END)`;
  }

  /** The figures of the admin endpoint, the `status`/`credits` events and the callback. */
  async state(): Promise<CreditState> {
    const r = await this.row();
    const current = String(r.monthKey ?? '') === osloMonth(this.now());
    const consumed = Number(r.consumed);
    const monthlyCap = this.capOf(r);
    const monthUsed = current ? Number(r.monthUsed) : 0;
    return {
      mode: this.settings.mode,
      credits: this.settings.mode === 'self-serve' ? this.settings.initialBalance + Number(r.added) - consumed : consumed,
      monthlyCap,
      monthUsed,
      // A cap at or below this month's use pauses at once, whichever way it got there (SPEC §3).
      paused: (current && toBool(r.paused)) || capReached(monthlyCap, monthUsed),
    };
  }

  /** Why agent turns and `ask` are refused now, or null when they may run. */
  async refusal(): Promise<string | null> {
    const s = await this.state();
    if (capReached(s.monthlyCap, s.monthUsed)) return `AI usage is paused: this month's cap of ${s.monthlyCap} credits is reached`;
    if (s.paused) return 'AI usage is paused by an admin';
    if (this.settings.mode === 'self-serve' && s.credits <= 0) return 'The credit balance is used up: an admin can add credits';
    return null;
  }

  /**
   * Charges `credits` to `source` in one statement (rolling the month over and pausing at the cap in
   * force), then records it in the usage buckets (a failure there is reported, never thrown).
   * @throws what the database throws for the charge itself
   */
  async charge(credits: number, source: CreditSource): Promise<void> {
    if (credits <= 0) return;
    await this.ensureRow();
    const at = this.now();
    const month = osloMonth(at);
    const used = sql`(CASE WHEN ${ident('monthKey')} = ${month} THEN ${ident('monthUsed')} + ${credits} ELSE ${credits} END)`;
    const stillPaused = sql`(CASE WHEN ${ident('monthKey')} = ${month} THEN ${ident('paused')} ELSE ${false} END)`;
    const cap = this.capInForce();
    const reached = sql`(${cap} IS NOT NULL AND ${used} >= ${cap})`;
    await this.db.query(
      sql`UPDATE ${CREDITS} SET ${ident('consumed')} = ${ident('consumed')} + ${credits}, ${ident('paused')} = (${stillPaused} OR ${reached}),
          ${ident('monthUsed')} = ${used}, ${ident('monthKey')} = ${month}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('id')} = ${ROW}`,
    );
    // After the charge, not in its transaction: the ledger is what bills; the usage only explains it.
    await this.usage.record(source, credits, at).catch(this.onUsageError);
  }

  /**
   * Applies an admin's change and answers the new state.
   * @throws HttpError INVALID_PARAMETER (400) naming a field of the wrong type or an unknown field
   */
  async change(input: unknown): Promise<CreditState> {
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw new HttpError('INVALID_PARAMETER', 'the body must be an object of addBalance, monthlyCap, paused');
    const c = input as Record<string, unknown>;
    const unknown = Object.keys(c).filter((k) => !['addBalance', 'monthlyCap', 'paused'].includes(k));
    if (unknown.length > 0) throw new HttpError('INVALID_PARAMETER', `unknown field ${unknown[0]}: only addBalance, monthlyCap and paused may change`);
    if (c.addBalance !== undefined && (!Number.isSafeInteger(c.addBalance) || (c.addBalance as number) <= 0))
      throw new HttpError('INVALID_PARAMETER', 'addBalance must be a positive integer (credits)');
    if (c.monthlyCap !== undefined && c.monthlyCap !== null && (!Number.isSafeInteger(c.monthlyCap) || (c.monthlyCap as number) < 0))
      throw new HttpError('INVALID_PARAMETER', 'monthlyCap must be an integer ≥ 0 (credits per month) or null for none');
    if (c.paused !== undefined && typeof c.paused !== 'boolean') throw new HttpError('INVALID_PARAMETER', 'paused must be a boolean');
    await this.ensureRow();
    const month = osloMonth(this.now());
    await this.db.transaction(async (tx) => {
      if (c.addBalance !== undefined)
        await this.db.query(sql`UPDATE ${CREDITS} SET ${ident('added')} = ${ident('added')} + ${c.addBalance} WHERE ${ident('id')} = ${ROW}`, tx);
      if (c.monthlyCap !== undefined) {
        await this.db.query(
          sql`UPDATE ${CREDITS} SET ${ident('capSet')} = ${true}, ${ident('monthlyCap')} = ${c.monthlyCap} WHERE ${ident('id')} = ${ROW}`,
          tx,
        );
        // A cap above this month's use (or none) lifts a pause the cap caused.
        const above =
          c.monthlyCap === null ? raw('1 = 1') : sql`(CASE WHEN ${ident('monthKey')} = ${month} THEN ${ident('monthUsed')} ELSE 0 END) < ${c.monthlyCap}`;
        await this.db.query(sql`UPDATE ${CREDITS} SET ${ident('paused')} = ${false} WHERE ${ident('id')} = ${ROW} AND ${above}`, tx);
      }
      if (c.paused !== undefined) {
        await this.db.query(
          sql`UPDATE ${CREDITS} SET ${ident('paused')} = ${c.paused}, ${ident('monthKey')} = ${month},
            ${ident('monthUsed')} = (CASE WHEN ${ident('monthKey')} = ${month} THEN ${ident('monthUsed')} ELSE 0 END) WHERE ${ident('id')} = ${ROW}`,
          tx,
        );
      }
      await this.db.query(sql`UPDATE ${CREDITS} SET ${ident('updatedAt')} = ${new Date()} WHERE ${ident('id')} = ${ROW}`, tx);
    });
    return this.state();
  }
}
