/**
 * @module Which instance runs an identity's agent session (issue 13 "Many instances", DESIGN §7): a
 * lease in that identity's `_svc_agent_sessions` row — `instanceId` and `leaseUntil` — taken with one
 * conditional UPDATE (so two instances never both win), renewed by its holder every `RENEW_MS`, and
 * released when the session stops. The row also carries what another instance needs to take the
 * session over or to list it: the channel, the session options, its state and start time, and its MCP
 * servers' statuses (`mcp`, JSON `[{ name, status }]`: written by the holder when a status changes —
 * one write at a time per identity, the latest list — and again with every renewal, so
 * `GET /api/_admin/agent/sessions` on any instance shows them within a renewal).
 */
import type { Database } from '../data/database.js';
import { ident, sql } from '../query/sql.js';
import { toDate } from '../auth/store.js';
import type { ThreadStore } from './threads.js';
import type { McpServerStatus } from './mcp.js';

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

/** A session this instance runs, as a renewal reads it (when its row is written, so the values are current). */
export interface HeldSession {
  readonly identityId: string;
  readonly state: string;
  mcpList(): McpServerStatus[];
}

/** The pending and running `mcp` writes of one identity. */
interface McpWrite {
  /** A write is queued behind the running one: it reads the latest list when it runs. */
  queued: boolean;
  chain: Promise<void>;
}

export class Leases {
  private readonly mcpWrites = new Map<string, McpWrite>();

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
  async acquire(identityId: string, session: { channel: string; options: object; mcp: McpServerStatus[] }, from?: string): Promise<boolean> {
    await this.threads.session(identityId);
    const now = new Date();
    const until = new Date(now.getTime() + LEASE_MS);
    const free =
      from === undefined
        ? sql`(${ident('instanceId')} IS NULL OR ${ident('instanceId')} = ${this.instanceId} OR ${ident('leaseUntil')} IS NULL OR ${ident('leaseUntil')} < ${now})`
        : sql`${ident('instanceId')} = ${from}`;
    const rows = await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('instanceId')} = ${this.instanceId}, ${ident('leaseUntil')} = ${until}, ${ident('channel')} = ${session.channel},
          ${ident('options')} = ${JSON.stringify(session.options)}, ${ident('state')} = ${'starting'}, ${ident('startedAt')} = ${now}, ${ident('updatedAt')} = ${now},
          ${ident('mcp')} = ${JSON.stringify(session.mcp)}
          WHERE ${ident('identityId')} = ${identityId} AND ${free} RETURNING ${ident('identityId')}`,
    );
    return rows.length === 1;
  }

  /**
   * Extends this instance's leases and records each session's state and MCP statuses (read as each
   * row is written).
   * @returns the identities whose lease this instance no longer holds (another took the session over)
   */
  async renew(sessions: Iterable<HeldSession>): Promise<string[]> {
    const until = new Date(Date.now() + LEASE_MS);
    const lost: string[] = [];
    for (const session of sessions) {
      const rows = await this.db.query(
        sql`UPDATE ${SESSIONS} SET ${ident('leaseUntil')} = ${until}, ${ident('state')} = ${session.state}, ${ident('mcp')} = ${JSON.stringify(session.mcpList())}
            WHERE ${ident('identityId')} = ${session.identityId} AND ${ident('instanceId')} = ${this.instanceId} RETURNING ${ident('identityId')}`,
      );
      if (rows.length === 0) lost.push(session.identityId);
    }
    return lost;
  }

  /**
   * Records an identity's MCP statuses in its row while this instance holds its lease. Writes of one
   * identity run one at a time; changes made while one runs are written once after it, with the list
   * `list()` gives then, so the row never ends on an older list. Never rejects: a failure is passed to
   * `onError` (the next renewal writes the list again).
   * @returns settles once a write that read the list after this call has ended
   */
  recordMcp(identityId: string, list: () => McpServerStatus[], onError: (err: unknown) => void): Promise<void> {
    const running = this.mcpWrites.get(identityId);
    if (running?.queued) return running.chain;
    const write: McpWrite = { queued: true, chain: Promise.resolve() };
    write.chain = (running?.chain ?? Promise.resolve()).then(async () => {
      write.queued = false;
      try {
        await this.db.query(
          sql`UPDATE ${SESSIONS} SET ${ident('mcp')} = ${JSON.stringify(list())}
              WHERE ${ident('identityId')} = ${identityId} AND ${ident('instanceId')} = ${this.instanceId}`,
        );
      } catch (err) {
        onError(err);
      } finally {
        if (this.mcpWrites.get(identityId) === write) this.mcpWrites.delete(identityId);
      }
    });
    this.mcpWrites.set(identityId, write);
    return write.chain;
  }

  /** Gives up this instance's lease of an identity (its session stopped). */
  async release(identityId: string): Promise<void> {
    await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('instanceId')} = NULL, ${ident('leaseUntil')} = NULL, ${ident('state')} = ${'stopped'}, ${ident('mcp')} = NULL
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
