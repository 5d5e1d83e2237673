/**
 * @module What every read of a collection needs (`read.ts`, `lookup-sql.ts`): the model, the
 * database, the collection, and the conditions the caller's rights add. SPEC §4.1–4.2.
 */
import type { AppManifest, Collection, PropertyType } from '../manifest.js';
import type { Sql } from '../query/sql.js';
import type { Database, Tx } from './database.js';

/** What every read needs: the model, the database and the collection read. */
export interface ReadScope {
  manifest: AppManifest;
  db: Database;
  collection: Collection;
  /** Extra conditions on alias `t0` (views, policies), ANDed with the request's filter. */
  conditions?: Sql[];
  /**
   * `_CREATOR` narrowing on alias `t0` (from `authorize`): lists and counts see only matching rows; a
   * visible row named by id that fails it is 403, not 404 (DESIGN §4 "Auth details").
   */
  owner?: Sql | null;
  /**
   * The conditions (alias `t0`) under which the caller may read rows of another collection, or null when
   * it may not read that collection at all: applied to expanded lookups (not expanded when hidden) and
   * included children. Absent: no restriction.
   */
  readableOf?: (collection: string, alias?: string) => Sql[] | null;
  tx?: Tx;
  /** The caller's id, for `me()` in the request's filter (null: anonymous). */
  callerId?: string | null;
  /**
   * Set when reading a query's output rows (`query-source.ts`) instead of the collection's table:
   * the subquery, and the type of its `id` column. Such rows have no system fields besides `id`.
   */
  rows?: { source: Sql; idType: PropertyType };
}
