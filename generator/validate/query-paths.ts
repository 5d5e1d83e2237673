/**
 * @module Dot paths of query definitions walked over the model (DESIGN §3 "Query"): shared by the
 * checks of query fields and `groupBy` (`check-queries.ts`) and of child aggregates
 * (`check-child-aggregates.ts`).
 */
import type { PropertyType } from '../../runtime/index.js';
import { isSystemField, SYSTEM_FIELD_TYPES } from '../../runtime/contract/index.js';
import type { ModelIndex } from './model-index.js';

/** Result of walking a dot path: the last segment's type (undefined when unknown), or a problem. */
export type PathResult = { type?: PropertyType; problem?: { code: string; message: string } };

/** Walks `path` from collection `from` (a query's `from`, or a child aggregate's `of`): every segment but the last must be a lookup. */
export function resolvePath(index: ModelIndex, from: string, path: string): PathResult {
  const segments = path.split('.');
  let current = index.collection(from);
  let currentName = from;
  for (let i = 0; i < segments.length; i++) {
    if (!current) return {}; // target missing or schema-invalid: reported elsewhere
    const seg = segments[i];
    const isLast = i === segments.length - 1;
    // hasOwn: a path segment such as `constructor` must not find Object.prototype members
    const prop = Object.hasOwn(current.properties, seg) ? current.properties[seg] : undefined;
    const type = prop?.type ?? (isSystemField(seg) ? SYSTEM_FIELD_TYPES[seg] : undefined);
    if (!type) {
      return { problem: { code: 'DEF_UNKNOWN_QUERY_PATH', message: `path "${path}": "${seg}" is not a property of ${currentName}` } };
    }
    if (isLast) return { type };
    if (type !== 'lookup' || !prop?.collection) {
      return {
        problem: { code: 'DEF_PATH_NOT_LOOKUP', message: `path "${path}": "${seg}" of ${currentName} is not a lookup, so the path cannot continue past it` },
      };
    }
    currentName = prop.collection;
    current = index.collection(prop.collection);
  }
  return {};
}
