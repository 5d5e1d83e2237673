/**
 * @module Routes of a query (DESIGN §3 "Query"): `GET /api/{query}` lists its output rows with
 * `filter`, `sortBy`, `select`, `pageNo`/`pageSize`, `lastKey` and `count` on output fields;
 * `GET /api/{query}/{id}` reads one row (the `from` row's id, or the group key). Queries are
 * read-only: every other method answers 405. `lookups` is ignored (lookups are `{ id }`).
 */
import { Router, type Response } from 'express';
import type { AppManifest, Collection, Query } from '../manifest.js';
import { HttpError } from '../errors.js';
import { SYSTEM_COLUMN_NAMES } from '../contract/system-fields.js';
import type { Database } from '../data/database.js';
import { getItem, listItems, notFound, type ReadScope } from '../data/read.js';
import { querySource, queryRowCollection } from '../data/query-source.js';
import { invalidParameter as badParameter, parseListParams, UUID } from '../query/list-params.js';
import { parseFilter } from '../query/filter-parser.js';
import { callerOf } from '../auth/caller.js';
import { authorize, readableConditions } from '../auth/authorize.js';
import { StartupError } from '../load-manifest.js';
import { sendJson } from './send.js';

/** The binding a generated `.svc/routes/<Query>.js` module exports. */
export interface QueryRoutesDefinition {
  kind: 'query';
  query: string;
}

/**
 * Called by generated code: binds one query to the read-only handlers.
 * @param definition - `{ query: 'CustomerRevenue' }`
 * Source: SPEC §4.1 (queries), DESIGN §3.
 */
export function defineQueryRoutes(definition: Omit<QueryRoutesDefinition, 'kind'>): QueryRoutesDefinition {
  return { kind: 'query', ...definition };
}

const SYSTEM_ONLY = new Set<string>(SYSTEM_COLUMN_NAMES);

function parseQueryParams(req: Record<string, unknown>, query: Query, rowCollection: Collection, manifest: AppManifest) {
  const { lookups: _ignored, ...rest } = req;
  const params = parseListParams(rest, rowCollection, manifest.collections);
  const fields = Object.keys(query.fields).join(', ');
  if (params.sort && SYSTEM_ONLY.has(params.sort.property)) {
    throw badParameter('sortBy', `unknown field "${params.sort.property}" on ${query.name} (fields: id, ${fields})`);
  }
  for (const name of params.selection?.fields ?? []) {
    if (SYSTEM_ONLY.has(name)) throw badParameter('select', `unknown field "${name}" on ${query.name} (fields: id, ${fields})`);
  }
  if (params.selection?.nested.size) throw badParameter('select', `dot paths cannot be selected from a query's rows; define the field in ${query.name} instead`);
  if (params.lastKey !== undefined && query.idType !== 'guid') throw badParameter('lastKey', `keyset paging needs GUID ids; ${query.name} rows are groups, page them with pageNo`);
  return { ...params, lookups: 'id' as const };
}

/**
 * Builds the router of one query.
 * Source: SPEC §4.1–4.2; DESIGN §3 ("Query results accept filter, sortBy, select, paging, count"),
 * §4 ("Writes to a query → 405").
 */
export function queryRouter(definition: QueryRoutesDefinition, manifest: AppManifest, db: Database): Router {
  const query = manifest.queries.find((q) => q.name === definition.query);
  if (!query) throw new StartupError(`.svc/routes defines query ${definition.query}, which the manifest does not have: run \`svc generate\` again`);
  if (query.filter) {
    try {
      parseFilter(query.filter);
    } catch (err) {
      throw new StartupError(`query ${query.name}: ${(err as Error).message}`);
    }
  }
  const base = `/${query.name}`;
  const from = manifest.collections.find((c) => c.name === query.from)!;
  const rowCollection = queryRowCollection(query);
  const scopeFor = (res: Response): ReadScope => {
    // The query's own rules gate access; the from collection's policies (and a _CREATOR grant) narrow its rows.
    const caller = callerOf(res);
    const grant = authorize(caller, manifest, from, 'GET', query.access, { what: `GET on ${query.name}` });
    const conditions = grant.owner ? [...grant.visibility, grant.owner] : grant.visibility;
    const source = querySource(manifest, query, db.provider, { conditions, callerId: caller.id });
    return {
      manifest, db, collection: rowCollection, rows: { source, idType: query.idType }, callerId: caller.id,
      readableOf: (name, alias) => readableConditions(caller, manifest, name, alias),
    };
  };
  const router = Router();
  router.get(base, async (req, res) => {
    const scope = scopeFor(res);
    const params = parseQueryParams(req.query as Record<string, unknown>, query, rowCollection, manifest);
    const { data, count } = await listItems(scope, params);
    if (params.count === 'none') return sendJson(res, 200, { data });
    if (params.count === 'only') return sendJson(res, 200, { data: [], meta: { count } });
    sendJson(res, 200, { data, items: data, meta: { count } });
  });
  router.get(`${base}/:id`, async (req, res) => {
    const scope = scopeFor(res);
    const q = req.query as Record<string, unknown>;
    const params = parseQueryParams(q.select === undefined ? {} : { select: q.select }, query, rowCollection, manifest);
    const id = query.idType === 'guid' ? req.params.id.toLowerCase() : req.params.id;
    if (query.idType === 'guid' && !UUID.test(id)) throw notFound(query.name, id);
    sendJson(res, 200, await getItem(scope, id, { selection: params.selection, lookups: 'id' }));
  });
  for (const path of [base, `${base}/:id`]) {
    router.all(path, (req) => {
      throw new HttpError('METHOD_NOT_ALLOWED', `${query.name} is a query: it is read-only, and ${req.method} is not supported`);
    });
  }
  return router;
}
