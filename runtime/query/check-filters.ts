/**
 * @module Checks the filters written in definitions (view `filter`, query `filter`, collection
 * `policies[].filter`, a query child aggregate's `filter`, a trigger's `filter`) against the app model: syntax, property names, literal types. `svc generate`
 * runs it (injected by the CLI, as the generator never imports runtime code), so a bad definition
 * filter fails generation instead of answering 400 to every request later.
 */
import { isChildAggregate, type AppManifest, type Collection } from '../manifest.js';
import { compileFilter } from './filter-compile.js';
import { parseFilter } from './filter-parser.js';

/** One bad definition filter: the definition file, the JSON Pointer of the filter, and why. */
export interface FilterProblem {
  file: string;
  path: string;
  message: string;
}

/** A well-formed id for `me()`, so filters such as `owner eq exp('me()')` type-check. */
const SOME_CALLER = '00000000-0000-7000-8000-000000000000';

/**
 * Compiles every definition filter of `manifest` once.
 * @returns the problems, empty when every filter is valid
 * Source: DESIGN §3 (views, queries, policies use the filter language of SPEC §4.3), §3a
 * (`svc generate` validates every definition).
 */
export function filterProblems(manifest: AppManifest): FilterProblem[] {
  const problems: FilterProblem[] = [];
  const check = (file: string, path: string, filter: string, collection: Collection | undefined) => {
    if (!collection) return; // reported by the generator's own reference checks
    try {
      compileFilter(parseFilter(filter), { manifest, collection, provider: manifest.provider, alias: 't0', callerId: SOME_CALLER });
    } catch (err) {
      problems.push({ file, path, message: (err as Error).message });
    }
  };
  const collectionNamed = (name: string) => manifest.collections.find((c) => c.name === name);
  for (const c of manifest.collections) {
    c.policies.forEach((p, i) => check(`collections/${c.name}.json`, `/policies/${i}/filter`, p.filter, c));
  }
  for (const v of manifest.views) check(`views/${v.name}.json`, '/filter', v.filter, collectionNamed(v.collection));
  for (const q of manifest.queries) {
    if (q.filter) check(`queries/${q.name}.json`, '/filter', q.filter, collectionNamed(q.from));
    // A child aggregate's filter is on its child rows (DESIGN §3 "Child aggregates").
    for (const [name, f] of Object.entries(q.fields)) {
      if (isChildAggregate(f) && f.filter) check(`queries/${q.name}.json`, `/fields/${name}/filter`, f.filter, collectionNamed(f.of));
    }
  }
  for (const t of manifest.triggers ?? []) {
    if (t.filter) check(`triggers/${t.name}.json`, '/filter', t.filter, collectionNamed(t.collection));
  }
  return problems;
}
