/**
 * @module Cross-file checks of a query's child aggregates (DESIGN §3 "Child aggregates"):
 * `{ "count": "id", "of": "Rsvp", "via": "event", "filter": "guests gt 0" }`. `of` is a collection,
 * `via` a lookup of `of` to the query's `from`, the path walks `of` (dot paths through its lookups)
 * and fits its aggregate, and the query has no `groupBy`. The child `filter` is compiled against `of`
 * with the other definition filters (`runtime/query/check-filters.ts`).
 */
import type { RawQueryDefinition, SplitQueryField } from '../model/definitions.js';
import { PROPERTY_TYPES, typeBehaviour } from '../../runtime/contract/index.js';
import { pointer, type Diagnostic } from './diagnostics.js';
import { collectionRefProblem, type ModelIndex } from './model-index.js';
import { resolvePath } from './query-paths.js';

/** Types sum and avg apply to (`integer`, `decimal`). */
const NUMERIC_TYPES = PROPERTY_TYPES.filter((t) => typeBehaviour(t).numeric);

/**
 * Checks one child aggregate field `name` of query `q` (split by `splitQueryField`, `child` set).
 * @returns diagnostics `DEF_MISSING_KEY` (`of` or `via` missing), `DEF_CHILD_AGGREGATE_GROUPED`,
 *   `DEF_UNKNOWN_COLLECTION`, `DEF_NOT_A_COLLECTION`, `DEF_CHILD_VIA`, `DEF_UNKNOWN_QUERY_PATH`,
 *   `DEF_PATH_NOT_LOOKUP`, `DEF_AGGREGATE_TYPE`
 */
export function checkChildAggregate(
  index: ModelIndex,
  file: string,
  q: RawQueryDefinition,
  name: string,
  field: Required<Pick<SplitQueryField, 'aggregate' | 'child'>> & SplitQueryField,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  const at = (code: string, message: string, path: string): void => {
    out.push({ code, message, file, path });
  };
  const { aggregate, path, child } = field;
  const here = pointer('fields', name);
  if (!child.of) {
    at('DEF_MISSING_KEY', `missing key "of": a child aggregate names the child collection in "of" (and its lookup to ${q.from} in "via")`, here);
    return out;
  }
  if (child.via === undefined) {
    at('DEF_MISSING_KEY', `missing key "via": the lookup property of ${child.of} that points at ${q.from}`, here);
    return out;
  }
  if (q.groupBy?.length) {
    at(
      'DEF_CHILD_AGGREGATE_GROUPED',
      `field "${name}" is a child aggregate (of ${child.of}), which counts children per ${q.from} row: a query with groupBy cannot have one (drop groupBy, or aggregate over ${child.of} in a query from ${child.of})`,
      here,
    );
    return out;
  }
  const ofProblem = collectionRefProblem(index, 'of', child.of);
  if (ofProblem) {
    at(ofProblem.code, ofProblem.message, pointer('fields', name, 'of'));
    return out;
  }
  const of = index.collection(child.of);
  if (!of) return out; // schema-invalid collection: reported on its own file
  const via = Object.hasOwn(of.properties, child.via) ? of.properties[child.via] : undefined;
  const backLinks = Object.entries(of.properties)
    .filter(([, p]) => p.type === 'lookup' && p.collection === q.from)
    .map(([n]) => n);
  const hint = backLinks.length ? `; lookups of ${child.of} to ${q.from}: ${backLinks.join(', ')}` : `; ${child.of} has no lookup to ${q.from}`;
  if (!via) {
    at('DEF_CHILD_VIA', `via "${child.via}" is not a property of ${child.of}${hint}`, pointer('fields', name, 'via'));
  } else if (via.type !== 'lookup') {
    at('DEF_CHILD_VIA', `via "${child.via}" of ${child.of} is ${via.type}, not a lookup${hint}`, pointer('fields', name, 'via'));
  } else if (via.collection !== q.from) {
    at(
      'DEF_CHILD_VIA',
      `via "${child.via}" of ${child.of} points at ${via.collection}, not at ${q.from} (the query's from)${hint}`,
      pointer('fields', name, 'via'),
    );
  }
  const where = pointer('fields', name, aggregate);
  const r = resolvePath(index, child.of, path);
  if (r.problem) {
    at(r.problem.code, r.problem.message, where);
  } else if ((aggregate === 'sum' || aggregate === 'avg') && r.type && !typeBehaviour(r.type).numeric) {
    at('DEF_AGGREGATE_TYPE', `${aggregate} needs an ${NUMERIC_TYPES.join(' or ')} path of ${child.of}; "${path}" is ${r.type}`, where);
  } else if ((aggregate === 'min' || aggregate === 'max') && r.type === 'blob') {
    at('DEF_AGGREGATE_TYPE', `${aggregate} cannot apply to a blob; "${path}" of ${child.of} is a blob`, where);
  }
  return out;
}
