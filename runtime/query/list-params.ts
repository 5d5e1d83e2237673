/**
 * @module Parses the GET query parameters of SPEC §4.2 (`pageNo pageSize sortBy select count lastKey
 * lookups filter search include`) into a typed `ListParams`, answering 400 with a message naming the parameter.
 */
import type { ChildRelation, Collection } from '../manifest.js';
import { HttpError } from '../errors.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../contract/limits.js';
import { isSystemField } from '../contract/system-fields.js';
import { parseSelect, type Selection } from './select.js';
import { searchWords } from '../data/search.js';

export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE };
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface SortSpec {
  property: string;
  descending: boolean;
}

export interface ListParams {
  filter?: string;
  pageNo: number;
  pageSize: number;
  sort?: SortSpec;
  selection?: Selection;
  count: 'none' | 'true' | 'only';
  lastKey?: string;
  lookups: 'id' | 'full';
  /** Child relations to return under their key (`include=OrderLine.order`). */
  include: ChildRelation[];
  /** Lower-case words of `search`, all of which must match (absent: no search). */
  search?: string[];
}

type Query = Record<string, unknown>;

/** 400 `INVALID_PARAMETER` naming the query parameter, with one detail at `/<parameter>`. */
export const invalidParameter = (parameter: string, message: string): HttpError =>
  new HttpError('INVALID_PARAMETER', `${parameter}: ${message}`, { details: [{ path: `/${parameter}`, message }] });
const bad = invalidParameter;

/** One string value of a query parameter; repeated parameters are a 400. */
function single(query: Query, name: string): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(name, 'must be given once, as a plain value');
  return v;
}

function integer(query: Query, name: string, min: number, max: number, fallback: number): number {
  const v = single(query, name);
  if (v === undefined || v === '') return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw bad(name, `must be an integer between ${min} and ${max}`);
  }
  return Number(v);
}

/** Names usable in `sortBy`: properties except blobs, plus the system fields. */
function sortable(c: Collection, name: string): boolean {
  if (isSystemField(name)) return true;
  const p = c.properties.find((x) => x.name === name);
  return p !== undefined && p.type !== 'blob';
}

/**
 * Reads the list parameters of a GET on a collection.
 * @throws HttpError INVALID_PARAMETER (400) naming the parameter for any malformed value
 * Source: SPEC §4.2; DESIGN §4 "Data details" (pageSize above 1000 → 400, pageNo 1-based).
 */
export function parseListParams(query: Query, collection: Collection, collections: readonly Collection[]): ListParams {
  const pageSize = integer(query, 'pageSize', 1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE);
  const pageNo = integer(query, 'pageNo', 1, Number.MAX_SAFE_INTEGER, 1);
  const params: ListParams = { pageNo, pageSize, count: 'none', lookups: 'full', include: [] };

  const filter = single(query, 'filter');
  if (filter !== undefined && filter.trim() !== '') params.filter = filter;

  const sortBy = single(query, 'sortBy');
  if (sortBy !== undefined && sortBy !== '') {
    const descending = sortBy.endsWith('-');
    const property = descending ? sortBy.slice(0, -1) : sortBy;
    if (property.includes(',')) throw bad('sortBy', 'only one property is supported');
    if (!sortable(collection, property)) throw bad('sortBy', `unknown property "${property}" on ${collection.name}`);
    params.sort = { property, descending };
  }

  const count = single(query, 'count');
  if (count !== undefined && count !== '') {
    if (count !== 'true' && count !== 'only' && count !== 'false') throw bad('count', 'must be "true" or "only"');
    if (count !== 'false') params.count = count;
  }

  const lastKey = single(query, 'lastKey');
  if (lastKey !== undefined && lastKey !== '') {
    if (!UUID.test(lastKey)) throw bad('lastKey', 'must be the id (a GUID) of the last row of the previous page');
    params.lastKey = lastKey.toLowerCase();
  }

  const lookups = single(query, 'lookups');
  if (lookups !== undefined && lookups !== '') {
    if (lookups !== 'id' && lookups !== 'full') throw bad('lookups', 'must be "id" or "full"');
    params.lookups = lookups;
  }

  const search = single(query, 'search');
  if (search !== undefined) {
    if (!collection.search) throw bad('search', `search is not enabled on ${collection.name} (set "search": true in its definition)`);
    const words = searchWords(search);
    if (words.length > 0) params.search = words;
  }

  const include = single(query, 'include');
  for (const key of (include ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)) {
    const relation = collection.children.find((r) => r.key === key);
    if (!relation) {
      const known = collection.children.map((r) => r.key).join(', ') || 'none';
      throw bad('include', `${JSON.stringify(key)} is not a child relation of ${collection.name} (child relations: ${known})`);
    }
    if (!params.include.includes(relation)) params.include.push(relation);
  }

  const select = single(query, 'select');
  if (select !== undefined && select.trim() !== '') params.selection = parseSelect(select, collection, collections);
  return params;
}
