/**
 * @module What a change-feed subscription lets through (SPEC §4.7 rule 2), as the broker holds it and
 * as a reliable connection keeps it in Redis (`wps-store.ts`): everything, or some rows by `id` and by
 * `lookupIds`, merged over the connection's `_listen` calls, with a bound on the ids one subscription
 * may name.
 */
import type { Change } from '../data/changes.js';
import { HttpError } from '../errors.js';

/**
 * Most `id`s and `lookupIds` together one connection's subscription to one collection may hold (its
 * `_listen` calls merged). Bounds the subscription in memory and the entry a reliable connection keeps
 * in Redis; listening to the whole collection has no such bound.
 */
export const MAX_LISTEN_IDS = 1000;

/**
 * What one connection's change feed of one collection lets through, merged over its `_listen` calls:
 * everything (`all`), or the rows of `ids` and the rows whose lookups point at one of `lookupIds`.
 */
export interface ListenFilter {
  all: boolean;
  ids: ReadonlySet<string>;
  lookupIds: ReadonlySet<string>;
}

/** The filter of one `_listen` call: without `id` and `lookupIds` it is the whole collection. */
export function filterOf(call: { id?: string; lookupIds?: string[] }): ListenFilter {
  const lookupIds = call.lookupIds ?? [];
  return { all: call.id === undefined && lookupIds.length === 0, ids: new Set(call.id === undefined ? [] : [call.id]), lookupIds: new Set(lookupIds) };
}

/** True when `wanted` lets through something `current` does not. */
export function widens(current: ListenFilter, wanted: ListenFilter): boolean {
  if (current.all) return false;
  if (wanted.all) return true;
  for (const id of wanted.ids) if (!current.ids.has(id)) return true;
  for (const id of wanted.lookupIds) if (!current.lookupIds.has(id)) return true;
  return false;
}

/**
 * Checks that `current` (absent: no subscription yet) merged with `wanted` stays within `MAX_LISTEN_IDS`.
 * @throws HttpError INVALID_PARAMETER (400) past the bound
 */
export function requireWithinBound(current: ListenFilter | undefined, wanted: ListenFilter): void {
  if (wanted.all || current?.all) return;
  if (union(current?.ids, wanted.ids) + union(current?.lookupIds, wanted.lookupIds) <= MAX_LISTEN_IDS) return;
  throw new HttpError(
    'INVALID_PARAMETER',
    `a connection may listen to at most ${MAX_LISTEN_IDS} ids and lookupIds of one collection: listen to the whole collection instead`,
  );
}

/** True when `filter` lets `change` through. */
export function matches(filter: ListenFilter, change: Change): boolean {
  if (filter.all) return true;
  if (filter.ids.size > 0 && change.ids.some((id) => filter.ids.has(id))) return true;
  return filter.lookupIds.size > 0 && change.lookupIds.some((id) => filter.lookupIds.has(id));
}

/** The size of the union of two sets. */
function union(a: ReadonlySet<string> | undefined, b: ReadonlySet<string>): number {
  if (!a) return b.size;
  let n = a.size;
  for (const x of b) if (!a.has(x)) n += 1;
  return n;
}
