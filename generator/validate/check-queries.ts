/**
 * @module Cross-file checks of one query (DESIGN §3 "Query"): `from` is a collection, every field and
 * `groupBy` path walks real properties (through lookups only), aggregates fit their paths, and with
 * `groupBy` every plain field is a group key or reached through one. Child aggregates (`of`/`via`) are
 * checked by `check-child-aggregates.ts`.
 */
import { AGGREGATE_FUNCTIONS, splitQueryField, type RawQueryDefinition } from '../model/definitions.js';
import { checkChildAggregate } from './check-child-aggregates.js';
import { resolvePath } from './query-paths.js';
import { PROPERTY_TYPES, typeBehaviour } from '../../runtime/contract/index.js';
import { pointer, type Diagnostic } from './diagnostics.js';
import { collectionRefProblem, type ModelIndex } from './model-index.js';

/** Types sum and avg apply to (`integer`, `decimal`). */
const NUMERIC_TYPES = PROPERTY_TYPES.filter((t) => typeBehaviour(t).numeric);

/**
 * Checks one schema-valid query against the model.
 * @returns diagnostics `DEF_UNKNOWN_COLLECTION`, `DEF_NOT_A_COLLECTION`, `DEF_UNKNOWN_QUERY_PATH`,
 *   `DEF_PATH_NOT_LOOKUP`, `DEF_AGGREGATE_TYPE`, `DEF_FIELD_NOT_GROUPED`, `DEF_RESERVED_FIELD_NAME`,
 *   `DEF_INVALID_VALUE` (not exactly one aggregate key), and those of `checkChildAggregate`
 */
export function checkQuery(index: ModelIndex, file: string, q: RawQueryDefinition): Diagnostic[] {
  const out: Diagnostic[] = [];
  const at = (code: string, message: string, path: string): void => {
    out.push({ code, message, file, path });
  };
  const fromProblem = collectionRefProblem(index, 'from', q.from);
  if (fromProblem) {
    at(fromProblem.code, fromProblem.message, '/from');
    return out; // paths cannot be checked without the collection
  }
  const groupBy = q.groupBy ?? [];
  groupBy.forEach((path, i) => {
    const r = resolvePath(index, q.from, path);
    if (r.problem) at(r.problem.code, r.problem.message, pointer('groupBy', i));
  });
  for (const [name, field] of Object.entries(q.fields)) {
    const split = splitQueryField(field);
    const { aggregate, path } = split;
    const where = aggregate ? pointer('fields', name, aggregate) : pointer('fields', name);
    if (name === 'id') {
      at('DEF_RESERVED_FIELD_NAME', `field "id" is reserved: every query row has an id (the row id, or the group key with groupBy)`, pointer('fields', name));
    }
    if (typeof field !== 'string') {
      const keys = AGGREGATE_FUNCTIONS.filter((a) => field[a] !== undefined);
      if (keys.length !== 1) {
        const besides = split.child ? ' besides of, via and filter' : '';
        at('DEF_INVALID_VALUE', `${name} must have exactly one key${besides}, one of: ${AGGREGATE_FUNCTIONS.join(', ')}`, pointer('fields', name));
        continue;
      }
    }
    if (split.child && split.aggregate) {
      out.push(...checkChildAggregate(index, file, q, name, { ...split, aggregate: split.aggregate, child: split.child }));
      continue;
    }
    const r = resolvePath(index, q.from, path);
    if (r.problem) {
      at(r.problem.code, r.problem.message, where);
      continue;
    }
    if ((aggregate === 'sum' || aggregate === 'avg') && r.type && !typeBehaviour(r.type).numeric) {
      at('DEF_AGGREGATE_TYPE', `${aggregate} needs an ${NUMERIC_TYPES.join(' or ')} path; "${path}" is ${r.type}`, where);
    }
    if (groupBy.length && !aggregate && !groupBy.some((g) => path === g || path.startsWith(`${g}.`))) {
      at(
        'DEF_FIELD_NOT_GROUPED',
        `field "${name}" (path "${path}") must be a groupBy path, reached through one, or an aggregate (count, sum, avg, min, max)`,
        where,
      );
    }
  }
  return out;
}
