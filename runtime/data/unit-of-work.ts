/**
 * @module Units of work: one transaction whose writes register what they changed, committed as a
 * whole, with the change set published after the commit (STYLE §10.14). Every write path runs in one.
 */
import type { Database, Tx } from './database.js';
import { ChangeSet, type Change, type ChangeAction, type ChangeSink } from './changes.js';
import { captureContextStatement, type CaptureContext } from './capture-context.js';

/** What a write inside a unit of work has: its transaction and the change set it fills. */
export interface UnitOfWork {
  /** The transaction; undefined for a `single`-statement unit (statements then autocommit). */
  tx: Tx | undefined;
  changes: ChangeSet;
  /**
   * Blob column values (stored JSON) the work removed from the database, by deleting their rows or
   * clearing them; handed to `WorkOptions.releaseBlobs` after the commit, dropped on rollback.
   */
  released: unknown[];
}

/** Who and what a unit of work runs for. */
export interface WorkOptions {
  db: Database;
  action: ChangeAction;
  sink: ChangeSink;
  origin: { reqId: string; callerId: string | null };
  /** Aborted before the commit → rolled back, nothing published. */
  signal?: AbortSignal;
  /**
   * The work is exactly one statement: it runs without BEGIN/COMMIT (a single statement is atomic on
   * both databases), saving two round trips on the hot path.
   */
  single?: boolean;
  /** Deletes the files of blobs the work removed (after the commit only: a rollback keeps them). */
  releaseBlobs?: (values: unknown[]) => void;
  /**
   * The app has triggers (DESIGN §12): the transaction's first statement tells the capture triggers who
   * writes and how deep (`capture-context.ts`). Ignored for a `single` unit (no transaction to scope it).
   */
  capture?: CaptureContext;
}

/**
 * Runs `fn` in one transaction, then publishes its changes to the sink.
 * @returns what `fn` returned and the changes committed (empty when nothing changed)
 * @throws whatever `fn` throws (after the rollback); the signal's reason when aborted
 */
export async function runUnitOfWork<T>(options: WorkOptions, fn: (work: UnitOfWork) => Promise<T>): Promise<{ result: T; changes: Change[] }> {
  const changes = new ChangeSet(options.action);
  const released: unknown[] = [];
  let result: T;
  if (options.single) {
    options.signal?.throwIfAborted();
    result = await fn({ tx: undefined, changes, released });
  } else {
    const { capture } = options;
    result = await options.db.transaction(
      async (tx) => {
        if (capture) await options.db.query(captureContextStatement(options.db.provider, capture), tx);
        return fn({ tx, changes, released });
      },
      { signal: options.signal },
    );
  }
  const gone = released.filter((v) => v !== null && v !== undefined);
  if (gone.length > 0) options.releaseBlobs?.(gone);
  const list = changes.list();
  if (list.length > 0) options.sink.publish(list, options.origin);
  return { result, changes: list };
}
