/**
 * @module Which instance runs an identity's agent session (issue 13 "Many instances", DESIGN §7): a
 * lease in that identity's `_svc_agent_sessions` row — `instanceId` and `leaseUntil` — taken with one
 * conditional UPDATE (so two instances never both win), renewed by its holder every `RENEW_MS`, and
 * released when the session stops. The row also carries what another instance needs to take the
 * session over or to list it: the channel, the session options, its state and start time.
 */
import type { Database } from '../data/database.js';
import { ident, sql } from '../query/sql.js';
import { toDate } from '../auth/store.js';
import type { ThreadStore } from './threads.js';

const SESSIONS = ident('_svc_agent_sessions');

/** How long a lease lasts without renewal, ms. */
export const LEASE_MS = 15_000;
/** How often a holder renews its leases, ms. */
export const RENEW_MS = 5_000;

/** A live lease as another instance sees it. */
export interface LeaseRow {
  identityId: string;
  instanceId: string;
  channel: string;
  options: Record<string, unknown>;
  state: string;
  startedAt: number;
}

type Raw = Record<string, unknown>;

export class Leases {
  constructor(
    private readonly db: Database,
    private readonly threads: ThreadStore,
    /** This instance's id (the real-time bus's). */
    readonly instanceId: string,
  ) {}

  /** The live lease of an identity held by another instance, or null (none, expired, or ours). */
  async holder(identityId: string): Promise<string | null> {
    const [row] = await this.db.query<Raw>(
      sql`SELECT ${ident('instanceId')}, ${ident('leaseUntil')} FROM ${SESSIONS} WHERE ${ident('identityId')} = ${identityId}`,
      undefined,
      { point: true },
    );
    if (!row || row.instanceId === null || row.instanceId === undefined || String(row.instanceId) === this.instanceId) return null;
    return toDate(row.leaseUntil).getTime() > Date.now() ? String(row.instanceId) : null;
  }

  /**
   * Takes the identity's lease for this instance when it is free, expired or already ours — or, with
   * `from`, when that (unreachable) instance holds it.
   * @returns true when this instance now holds it
   */
  async acquire(identityId: string, session: { channel: string; options: object }, from?: string): Promise<boolean> {
    await this.threads.session(identityId);
    const now = new Date();
    const until = new Date(now.getTime() + LEASE_MS);
    const free =
      from === undefined
        ? sql`(${ident('instanceId')} IS NULL OR ${ident('instanceId')} = ${this.instanceId} OR ${ident('leaseUntil')} IS NULL OR ${ident('leaseUntil')} < ${now})`
        : sql`${ident('instanceId')} = ${from}`;
    const rows = await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('instanceId')} = ${this.instanceId}, ${ident('leaseUntil')} = ${until}, ${ident('channel')} = ${session.channel},
          ${ident('options')} = ${JSON.stringify(session.options)}, ${ident('state')} = ${'starting'}, ${ident('startedAt')} = ${now}, ${ident('updatedAt')} = ${now}
          WHERE ${ident('identityId')} = ${identityId} AND ${free} RETURNING ${ident('identityId')}`,
    );
    return rows.length === 1;
  }

  /**
   * Extends this instance's leases and records each session's state.
   * @returns the identities whose lease this instance no longer holds (another took the session over)
   */
  async renew(states: Map<string, string>): Promise<string[]> {
    const until = new Date(Date.now() + LEASE_MS);
    const lost: string[] = [];
    for (const [identityId, state] of states) {
      const rows = await this.db.query(
        sql`UPDATE ${SESSIONS} SET ${ident('leaseUntil')} = ${until}, ${ident('state')} = ${state}
            WHERE ${ident('identityId')} = ${identityId} AND ${ident('instanceId')} = ${this.instanceId} RETURNING ${ident('identityId')}`,
      );
      if (rows.length === 0) lost.push(identityId);
    }
    return lost;
  }

  /** Gives up this instance's lease of an identity (its session stopped). */
  async release(identityId: string): Promise<void> {
    await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('instanceId')} = NULL, ${ident('leaseUntil')} = NULL, ${ident('state')} = ${'stopped'}
          WHERE ${ident('identityId')} = ${identityId} AND ${ident('instanceId')} = ${this.instanceId}`,
    );
  }

  /** Sessions other instances run (live leases that are not ours). */
  async others(): Promise<LeaseRow[]> {
    const rows = await this.db.query<Raw>(
      sql`SELECT * FROM ${SESSIONS} WHERE ${ident('instanceId')} IS NOT NULL AND ${ident('instanceId')} <> ${this.instanceId} AND ${ident('leaseUntil')} > ${new Date()}`,
    );
    return rows.map((r) => ({
      identityId: String(r.identityId),
      instanceId: String(r.instanceId),
      channel: String(r.channel),
      options: JSON.parse(String(r.options ?? '{}')) as Record<string, unknown>,
      state: String(r.state ?? 'idle'),
      startedAt: Math.floor(toDate(r.startedAt).getTime() / 1000),
    }));
  }
}
