/**
 * @module The data resources of an app, driven by the manifest: every collection, view, query and
 * external collection becomes `/api/{name}` (SPEC §4.1, §4.10). Built once at start; a view or query filter that does not parse
 * stops the server with its reason.
 */
import type { AccessRule, AppManifest, Collection, ExternalCollection, Query, View } from '../manifest.js';
import type { FilterNode } from '../query/filter-ast.js';
import { parseFilter } from '../query/filter-parser.js';
import { queryRowCollection } from '../data/query-source.js';
import { StartupError } from '../load-manifest.js';

/** A collection, or a view of one (`view` set): the same operations, narrowed by the view's filter. */
export interface CollectionResource {
  kind: 'collection';
  /** The name in the path: the collection's or the view's. */
  name: string;
  collection: Collection;
  view?: View;
  /** The view's parsed filter (compiled per request: it may use `now()` or `me()`). */
  viewFilter?: FilterNode;
  /** The rules in force: a view's own, else its collection's. */
  rules: readonly AccessRule[];
}

/** A read-only query. */
export interface QueryResource {
  kind: 'query';
  name: string;
  query: Query;
  /** The `from` collection (its policies narrow the rows). */
  from: Collection;
  /** The output rows described as a collection (fields as properties). */
  rowCollection: Collection;
}

/** An external collection (SPEC §4.10): reads forwarded to its provider. */
export interface ExternalResource {
  kind: 'external';
  name: string;
  external: ExternalCollection;
  /** A stand-in collection (no properties, no policies) for the authorization point. */
  collection: Collection;
}

export type Resource = CollectionResource | QueryResource | ExternalResource;

/**
 * `Name` or `Name/id` (the part of a path after `/api/`, one trailing slash allowed) → decoded segments;
 * null for any other shape.
 * @throws URIError when a segment is not valid percent-encoding
 */
export function resourcePath(path: string): { name: string; id?: string } | null {
  const parts = path.split('/');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  if (parts.length === 0 || parts.length > 2 || parts[0] === '') return null;
  return { name: decodeURIComponent(parts[0]), id: parts.length === 2 ? decodeURIComponent(parts[1]) : undefined };
}

function parsed(what: string, filter: string): FilterNode {
  try {
    return parseFilter(filter);
  } catch (err) {
    throw new StartupError(`${what}: ${(err as Error).message}`);
  }
}

/**
 * Every resource of the manifest by name.
 * @throws StartupError for a view or query whose filter does not parse
 */
export function buildResources(manifest: AppManifest): Map<string, Resource> {
  const byName = new Map<string, Resource>();
  const collectionNamed = (name: string) => manifest.collections.find((c) => c.name === name)!;
  for (const c of manifest.collections) byName.set(c.name, { kind: 'collection', name: c.name, collection: c, rules: c.access });
  for (const v of manifest.views) {
    const collection = collectionNamed(v.collection);
    byName.set(v.name, {
      kind: 'collection',
      name: v.name,
      collection,
      view: v,
      viewFilter: parsed(`view ${v.name}`, v.filter),
      rules: v.access ?? collection.access,
    });
  }
  for (const q of manifest.queries) {
    if (q.filter) parsed(`query ${q.name}`, q.filter);
    byName.set(q.name, { kind: 'query', name: q.name, query: q, from: collectionNamed(q.from), rowCollection: queryRowCollection(q) });
  }
  for (const e of manifest.externals ?? []) {
    const collection: Collection = { name: e.name, properties: [], search: false, access: e.access, policies: [], children: [] };
    byName.set(e.name, { kind: 'external', name: e.name, external: e, collection });
  }
  return byName;
}
