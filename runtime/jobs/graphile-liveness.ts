/**
 * @module Recovering the jobs of a killed runner on PostgreSQL (DESIGN §12: at least once). Graphile
 * Worker keeps a job locked by a worker pool that died (kill -9, a lost machine) for 4 hours. svc ends
 * that wait sooner: each of its worker pools holds a session advisory lock named after the pool's id
 * (`pg_advisory_lock(LIVENESS_KEY, hashtext(poolId))`) on a connection of its own, for as long as it
 * lives. Every `staleLockMs` each runner looks at the pools that hold locks on svc's jobs or queues
 * for longer than `staleLockMs`; a pool whose advisory lock it can take is gone (its session ended),
 * and `graphile_worker.force_unlock_workers` hands its jobs back to the queue, where any instance runs
 * them again. The runs in flight at the kill run twice at most, which at-least-once allows.
 */
import pg from 'pg';
import type { Logger } from '../log.js';

/** First key of the two-key advisory locks (the second is `hashtext(poolId)`). */
const LIVENESS_KEY = 0x5f6c6976; // "_liv"

/** Default time a lock may be held before its pool is checked, in ms; env `SVC_JOBS_STALE_LOCK_MS`. */
export const DEFAULT_STALE_LOCK_MS = 30_000;

/** Pools holding locks older than the threshold: jobs and job queues. */
const HOLDERS = `SELECT DISTINCT locked_by FROM graphile_worker._private_jobs WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => $1)
  UNION SELECT DISTINCT locked_by FROM graphile_worker._private_job_queues WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => $1)`;

/** One runner's liveness: its pools' locks and the sweep for dead ones. */
export class RunnerLiveness {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly pools = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly staleLockMs: number,
    private readonly logger?: Logger,
  ) {}

  /** Starts the periodic sweep (the first one at once). */
  start(): void {
    const tick = () => {
      void this.sweep()
        .catch((err: Error) => this.logger?.warn({ err: err.message, scope: 'jobs' }, 'the sweep for dead job runners failed; trying again later'))
        .finally(() => {
          if (!this.closed) this.timer = setTimeout(tick, this.staleLockMs).unref();
        });
    };
    tick();
  }

  /** Marks pool `id` alive for as long as this process's session lives (a pool Graphile just created). */
  async hold(id: string): Promise<void> {
    this.pools.add(id);
    const client = await this.connection();
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LIVENESS_KEY, id]);
  }

  /** Lets go of pool `id` (it stopped). */
  async release(id: string): Promise<void> {
    if (!this.pools.delete(id) || !this.client) return;
    await this.client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LIVENESS_KEY, id]).catch(() => undefined);
  }

  /**
   * Hands back the jobs of dead pools.
   * @returns the ids of the pools found dead
   */
  async sweep(): Promise<string[]> {
    const client = await this.connection();
    const { rows } = await client.query<{ locked_by: string }>(HOLDERS, [this.staleLockMs / 1000]);
    const dead: string[] = [];
    for (const { locked_by: id } of rows) {
      if (this.pools.has(id)) continue;
      const { rows: got } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [LIVENESS_KEY, id]);
      if (!got[0]?.ok) continue;
      try {
        await client.query('SELECT graphile_worker.force_unlock_workers($1::text[])', [[id]]);
        dead.push(id);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LIVENESS_KEY, id]);
      }
    }
    if (dead.length > 0)
      this.logger?.warn(
        { pools: dead, scope: 'jobs' },
        `released the jobs of ${dead.length} job runner(s) that stopped without finishing them; they run again`,
      );
    return dead;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The session holding the locks; made again (and the locks taken again) after a lost connection. */
  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 5000 });
      client.on('error', () => {
        if (this.client === client) this.client = undefined;
      });
      try {
        await client.connect();
        for (const id of this.pools) await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LIVENESS_KEY, id]);
      } catch (err) {
        await client.end().catch(() => undefined);
        throw err;
      }
      if (this.closed) {
        await client.end().catch(() => undefined);
        throw new Error('closed');
      }
      this.client = client;
      return client;
    })().finally(() => (this.connecting = undefined));
    return this.connecting;
  }
}
