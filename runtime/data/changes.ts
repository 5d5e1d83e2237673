/**
 * @module Change sets: what a committed unit of work changed, per collection (issue "runtime core",
 * SPEC §4.7 / §6.1 change notifications). A write registers its rows while its transaction runs; the
 * set is handed to the app's `ChangeSink` only after the commit, and never for a rolled-back one.
 */

/** The HTTP method a change is reported under (SPEC §6.1 `action`). */
export type ChangeAction = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * What one request changed in one collection.
 * - `ids`: every row created, updated or deleted, in the order first touched.
 * - `lookupIds`: the values of the rows' lookup properties (for a delete, as they were before it):
 *   the change feed's `lookupIds` filter matches on them.
 */
export interface Change {
  collection: string;
  action: ChangeAction;
  ids: string[];
  lookupIds: string[];
}

/** Collects the changes of one unit of work. `action` is the request's method for every collection. */
export class ChangeSet {
  private readonly byCollection = new Map<string, { ids: Set<string>; lookupIds: Set<string> }>();

  constructor(readonly action: ChangeAction) {}

  /** Registers rows of `collection`; `lookupIds` are their lookup values (nulls ignored). */
  record(collection: string, ids: Iterable<string>, lookupIds: Iterable<unknown> = []): void {
    let entry = this.byCollection.get(collection);
    if (!entry) {
      entry = { ids: new Set(), lookupIds: new Set() };
      this.byCollection.set(collection, entry);
    }
    for (const id of ids) entry.ids.add(id);
    for (const v of lookupIds) if (typeof v === 'string') entry.lookupIds.add(v);
  }

  /** One `Change` per collection touched, in the order first touched. */
  list(): Change[] {
    return [...this.byCollection]
      .filter(([, e]) => e.ids.size > 0)
      .map(([collection, e]) => ({ collection, action: this.action, ids: [...e.ids], lookupIds: [...e.lookupIds] }));
  }
}

/** Where committed change sets go: a no-op today, the real-time bus when there is one. */
export interface ChangeSink {
  /** Called once per committed unit of work that changed something; must not throw. */
  publish(changes: Change[], origin: { reqId: string; callerId: string | null }): void;
}

/** The sink of an app without real-time: drops every change set. */
export const NO_CHANGE_SINK: ChangeSink = { publish() {} };
