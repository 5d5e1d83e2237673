/**
 * @module An index of every named definition of an app, used by the cross-file checks: which kind of
 * definition a name refers to, and the schema-valid collections whose properties may be walked.
 */
import type { RawApp, RawFile } from '../load/load-app.js';
import type { RawCollectionDefinition } from '../model/definitions.js';

export type ModelKind = 'collection' | 'view' | 'query' | 'function' | 'external';

/** A definition file that carries a string `name`, schema-valid or not. */
export interface NamedDefinition {
  kind: ModelKind;
  name: string;
  file: string;
  data: unknown;
  /** true when the file passed its JSON Schema (only then may `data` be cast to its definition type). */
  isValid: boolean;
}

export interface ModelIndex {
  /** Every named definition: collections, views, queries, functions, externals, each by file name. */
  all: NamedDefinition[];
  /** The first definition of each exact name. */
  byName: Map<string, NamedDefinition>;
  /** A schema-valid collection by name; undefined when absent, invalid or not a collection. */
  collection(name: string): RawCollectionDefinition | undefined;
}

const ARTICLE: Record<ModelKind, string> = {
  collection: 'a collection',
  view: 'a view',
  query: 'a query',
  function: 'a function',
  external: 'an external collection',
};

/** Indexes every definition of `raw` that has a string `name`; `invalidFiles` are those that failed their schema. */
export function buildModelIndex(raw: RawApp, invalidFiles: Set<string>): ModelIndex {
  const groups: [ModelKind, RawFile[]][] = [
    ['collection', raw.collections],
    ['view', raw.views],
    ['query', raw.queries],
    ['function', raw.functions],
    ['external', raw.externals],
  ];
  const all: NamedDefinition[] = [];
  for (const [kind, files] of groups) {
    for (const { file, data } of files) {
      const name = typeof data === 'object' && data !== null ? (data as { name?: unknown }).name : undefined;
      if (typeof name === 'string') all.push({ kind, name, file, data, isValid: !invalidFiles.has(file) });
    }
  }
  const byName = new Map<string, NamedDefinition>();
  for (const d of all) if (!byName.has(d.name)) byName.set(d.name, d);
  return {
    all,
    byName,
    collection(name) {
      const d = byName.get(name);
      return d && d.kind === 'collection' && d.isValid ? (d.data as RawCollectionDefinition) : undefined;
    },
  };
}

/**
 * The problem when `name`, used as `role` (e.g. `lookup target`), does not name a collection; null when
 * it does. Example: `lookup target "Custmer" is not a collection`, `from "OpenOrders" is a view, not a
 * collection`.
 */
export function collectionRefProblem(index: ModelIndex, role: string, name: string): { code: string; message: string } | null {
  const d = index.byName.get(name);
  if (!d) return { code: 'DEF_UNKNOWN_COLLECTION', message: `${role} "${name}" is not a collection` };
  if (d.kind !== 'collection') {
    return { code: 'DEF_NOT_A_COLLECTION', message: `${role} "${name}" is ${ARTICLE[d.kind]}, not a collection` };
  }
  return null;
}
