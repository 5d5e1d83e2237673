/**
 * @module The sweep of orphaned blob files (issue 24 §3 "Blobs across instances"). An upload writes
 * its bytes under a new version prefix (`<collection>/<id>/<field>/<version>/`) and then commits the
 * row; a crash between the two, or a replaced or deleted blob whose release failed or never ran (the
 * process died after the commit), leaves files no row references. The sweep deletes them:
 *
 * - per collection with blob properties, it lists the store by the prefix `<collection>/` and groups
 *   the keys by version prefix (a listing is in key order, so one version's files come together);
 * - a version prefix whose newest file is younger than the grace period is kept: an upload may be
 *   about to commit it (default 1 hour, env `SVC_BLOB_SWEEP_GRACE_MS`);
 * - the others are looked up in batches (`SELECT id, <blob fields> … WHERE id IN (…)`), and every one
 *   that no row's blob value names is deleted; keys not of that shape, or under a field that is not a
 *   blob property, are left alone;
 * - the agent's attachments (`_agent/<identity>/<upload>/`, runtime/agent/uploads.ts): an upload no
 *   message used within `UNUSED_UPLOAD_MS` (a day) is deleted, and so is every upload prefix older
 *   than the grace period whose `_svc_agent_uploads` row is gone (its identity deleted from the
 *   command line, a deletion whose byte removal failed);
 * - it runs every hour (env `SVC_BLOB_SWEEP_INTERVAL_MS`), first a minute after start (or one
 *   interval, when shorter); with Redis, one instance per interval (`SET NX PX` on
 *   `svc:<api>:blob-sweep`); without Redis, each process sweeps (deletes are idempotent).
 * It logs how many version prefixes it deleted; a failure is logged and retried at the next interval.
 */
import type { Redis } from 'ioredis';
import type { Database } from '../data/database.js';
import { ident, join, sql } from '../query/sql.js';
import type { Logger } from '../log.js';
import { StartupError } from '../load-manifest.js';
import type { AppManifest, Collection } from '../manifest.js';
import { UUID } from '../query/list-params.js';
import { parseStoredBlob } from './metadata.js';
import type { BlobStore } from './store.js';

/** Default grace period, ms: files younger than this are never swept. */
export const SWEEP_GRACE_MS = 60 * 60 * 1000;
/** Default interval between sweeps, ms. */
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** The first sweep after start, ms (or the interval, when shorter). */
const FIRST_SWEEP_MS = 60_000;
/** Version prefixes looked up per statement. */
const BATCH = 200;
/** An agent upload no message used for this long is deleted, ms (DESIGN §7a). */
export const UNUSED_UPLOAD_MS = 24 * 60 * 60 * 1000;
const UPLOADS = ident('_svc_agent_uploads');

/**
 * The sweep's timing from the environment: `SVC_BLOB_SWEEP_GRACE_MS` (default 1 hour, 0 allowed) and
 * `SVC_BLOB_SWEEP_INTERVAL_MS` (default 1 hour, at least 100).
 * @throws StartupError for a value that is not a whole number of milliseconds in range
 */
export function sweepTiming(env: NodeJS.ProcessEnv): { graceMs: number; intervalMs: number } {
  const read = (name: string, fallback: number, min: number) => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const ms = Number(text);
    if (!Number.isSafeInteger(ms) || ms < min)
      throw new StartupError(`${name} must be a whole number of milliseconds, at least ${min} (got ${JSON.stringify(text)})`);
    return ms;
  };
  return { graceMs: read('SVC_BLOB_SWEEP_GRACE_MS', SWEEP_GRACE_MS, 0), intervalMs: read('SVC_BLOB_SWEEP_INTERVAL_MS', SWEEP_INTERVAL_MS, 100) };
}

/** Options of `OrphanSweep`. */
export interface OrphanSweepOptions {
  store: BlobStore;
  db: Database;
  /** The manifest in force (it changes on a reload in development). */
  manifest: () => AppManifest;
  logger: Logger;
  /** Default `SWEEP_GRACE_MS`. */
  graceMs?: number;
  /** Default `SWEEP_INTERVAL_MS`. */
  intervalMs?: number;
  /** With Redis: the connection and the key that lets one instance sweep per interval. */
  gate?: { redis: Redis; key: string };
  /** The clock (tests); default `Date.now`. */
  now?: () => number;
}

/** What one sweep did. */
export interface SweepResult {
  /** Version prefixes listed. */
  scanned: number;
  /** Version prefixes deleted (no row names them, older than the grace period). */
  deleted: number;
}

/** A listed version prefix: its newest file's time. */
interface Candidate {
  prefix: string;
  rowId: string;
  newestMs: number;
}

/** The periodic sweep of one instance; `start()` schedules it, `close()` stops it. */
export class OrphanSweep {
  readonly graceMs: number;
  readonly intervalMs: number;
  private timer?: NodeJS.Timeout;
  private closed = false;
  private running?: Promise<SweepResult>;
  private readonly now: () => number;

  constructor(private readonly options: OrphanSweepOptions) {
    this.graceMs = options.graceMs ?? SWEEP_GRACE_MS;
    this.intervalMs = options.intervalMs ?? SWEEP_INTERVAL_MS;
    this.now = options.now ?? Date.now;
  }

  start(): this {
    const next = (ms: number) => {
      this.timer = setTimeout(() => {
        void this.runGated().finally(() => {
          if (this.timer) next(this.intervalMs);
        });
      }, ms).unref();
    };
    next(Math.min(FIRST_SWEEP_MS, this.intervalMs));
    return this;
  }

  /** Stops the schedule; a sweep under way stops at its next file and is waited for. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.closed = true;
    await this.running?.catch(() => undefined);
  }

  /** One scheduled sweep: skipped when another instance has swept within the interval. */
  private async runGated(): Promise<void> {
    const { gate, logger } = this.options;
    try {
      if (gate && (await gate.redis.set(gate.key, String(this.now()), 'PX', this.intervalMs, 'NX')) !== 'OK') return;
      const { scanned, deleted } = await this.run();
      if (deleted > 0) logger.info({ deleted, scanned }, `blob sweep: deleted ${deleted} orphaned blob version(s)`);
      else logger.debug({ scanned }, 'blob sweep: nothing to delete');
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'blob sweep failed; it runs again at the next interval');
    }
  }

  /** Sweeps every collection with blob properties now (one sweep at a time in this process). */
  run(): Promise<SweepResult> {
    return (this.running ??= this.sweepAll().finally(() => (this.running = undefined)));
  }

  private async sweepAll(): Promise<SweepResult> {
    const total: SweepResult = { scanned: 0, deleted: 0 };
    for (const collection of this.options.manifest().collections) {
      if (this.closed) break;
      const fields = collection.properties.filter((p) => p.type === 'blob').map((p) => p.name);
      if (fields.length === 0) continue;
      const r = await this.sweepCollection(collection, fields);
      total.scanned += r.scanned;
      total.deleted += r.deleted;
    }
    if (!this.closed) {
      const r = await this.sweepAgentUploads();
      total.scanned += r.scanned;
      total.deleted += r.deleted;
    }
    return total;
  }

  /** Deletes agent uploads never used within a day (rows), then upload prefixes without a row (bytes). */
  private async sweepAgentUploads(): Promise<SweepResult> {
    const { db, store } = this.options;
    await db.query(sql`DELETE FROM ${UPLOADS} WHERE ${ident('threadId')} IS NULL AND ${ident('createdAt')} < ${new Date(this.now() - UNUSED_UPLOAD_MS)}`);
    const cutoff = this.now() - this.graceMs;
    const result: SweepResult = { scanned: 0, deleted: 0 };
    let batch: { prefix: string; id: string }[] = [];
    const check = async () => {
      if (batch.length === 0) return;
      const ids = batch.map((c) => c.id);
      const rows = await db.query(
        sql`SELECT ${ident('id')} FROM ${UPLOADS} WHERE ${ident('id')} IN (${join(
          ids.map((id) => sql`${id}`),
          ', ',
        )})`,
      );
      const kept = new Set(rows.map((r) => String(r.id)));
      for (const c of batch) {
        if (kept.has(c.id)) continue;
        await store.deletePrefix(c.prefix);
        result.deleted += 1;
      }
      batch = [];
    };
    for await (const object of store.list('_agent/')) {
      if (this.closed) return result;
      // _agent/<identity>/<upload id>/original
      const parts = object.key.split('/');
      if (parts.length !== 4 || !UUID.test(parts[2])) continue;
      result.scanned += 1;
      if (object.modifiedMs > cutoff) continue;
      batch.push({ prefix: `${parts.slice(0, 3).join('/')}/`, id: parts[2] });
      if (batch.length >= BATCH) await check();
    }
    await check();
    return result;
  }

  /** Lists `<collection>/`, groups by version prefix, and checks old ones in batches. */
  private async sweepCollection(collection: Collection, fields: string[]): Promise<SweepResult> {
    const result: SweepResult = { scanned: 0, deleted: 0 };
    const cutoff = this.now() - this.graceMs;
    let batch: Candidate[] = [];
    let current: Candidate | undefined;
    const close = async () => {
      if (!current) return;
      result.scanned += 1;
      if (current.newestMs <= cutoff) batch.push(current);
      current = undefined;
      if (batch.length >= BATCH) {
        result.deleted += await this.deleteUnreferenced(collection, fields, batch);
        batch = [];
      }
    };
    for await (const object of this.options.store.list(`${collection.name}/`)) {
      if (this.closed) return result;
      // <collection>/<row id>/<field>/<version>/<file>
      const parts = object.key.split('/');
      // Row ids are GUIDs (lower case in keys); anything else was not written by an upload.
      if (parts.length !== 5 || !fields.includes(parts[2]) || !UUID.test(parts[1]) || !parts[3]) continue;
      const prefix = `${parts.slice(0, 4).join('/')}/`;
      if (current?.prefix !== prefix) {
        await close();
        current = { prefix, rowId: parts[1], newestMs: object.modifiedMs };
      } else current.newestMs = Math.max(current.newestMs, object.modifiedMs);
    }
    await close();
    if (batch.length > 0) result.deleted += await this.deleteUnreferenced(collection, fields, batch);
    return result;
  }

  /** Deletes the candidates no row names; returns how many. */
  private async deleteUnreferenced(collection: Collection, fields: string[], candidates: Candidate[]): Promise<number> {
    const ids = [...new Set(candidates.map((c) => c.rowId))];
    const rows = await this.options.db.query(
      sql`SELECT ${join(
        fields.map((f) => ident(f)),
        ', ',
      )} FROM ${ident(collection.name)} WHERE ${ident('id')} IN (${join(
        ids.map((id) => sql`${id}`),
        ', ',
      )})`,
    );
    const referenced = new Set<string>();
    for (const row of rows)
      for (const f of fields) {
        const stored = parseStoredBlob(row[f]);
        if (stored) referenced.add(stored.prefix);
      }
    let deleted = 0;
    for (const c of candidates) {
      if (referenced.has(c.prefix)) continue;
      await this.options.store.deletePrefix(c.prefix);
      this.options.logger.debug({ prefix: c.prefix }, 'blob sweep: deleted an orphaned blob version');
      deleted += 1;
    }
    return deleted;
  }
}
