/**
 * @module `defineCollectionRoutes`: what a generated `.svc/routes/<Name>.js` module calls, and the
 * generic handlers it binds (SPEC §4.1). Handlers throw `HttpError`; they never write error bodies.
 */
import { Router, type Request } from 'express';
import type { QueryRoutesDefinition } from './query-routes.js';
import type { AccessMethod, AppManifest, Collection, View } from '../manifest.js';
import { HttpError } from '../errors.js';
import type { Database } from '../data/database.js';
import type { CollectionWriter } from '../data/children.js';
import { getItem, listItems, notFound, type ReadScope } from '../data/read.js';
import { createItems, deleteItem, deleteItems, updateItem, type WriteScope } from '../data/write.js';
import { parseListParams, UUID, type ListParams } from '../query/list-params.js';
import type { FilterNode } from '../query/filter-ast.js';
import { compileFilter } from '../query/filter-compile.js';
import { parseFilter } from '../query/filter-parser.js';
import { StartupError } from '../load-manifest.js';
import { sendJson } from './send.js';
import { callerOf, type Caller } from '../auth/caller.js';
import { authorize, readableConditions, writeAccessFor, type Grant } from '../auth/authorize.js';

/** The binding a generated route module exports: collection name and its Prisma delegate. */
export interface CollectionRoutesDefinition {
  kind: 'collection';
  collection: string;
  delegate: string;
}

/** The binding of a view: its name, base collection and the base collection's Prisma delegate. */
export interface ViewRoutesDefinition {
  kind: 'view';
  view: string;
  collection: string;
  delegate: string;
}

export type RoutesDefinition = CollectionRoutesDefinition | ViewRoutesDefinition | QueryRoutesDefinition;

/**
 * Called by generated code: binds one collection to the generic handlers.
 * @param definition - `{ collection: 'Order', delegate: 'order' }` (delegate = Prisma client property)
 * Source: DESIGN §2 (route-handler modules).
 */
export function defineCollectionRoutes(definition: Omit<CollectionRoutesDefinition, 'kind'>): CollectionRoutesDefinition {
  return { kind: 'collection', ...definition };
}

/**
 * Called by generated code: binds one view (a collection with a built-in filter) to the same handlers.
 * @param definition - `{ view: 'OpenOrders', collection: 'Order', delegate: 'order' }`
 * Source: SPEC §4.1 (views), DESIGN §3 (views).
 */
export function defineViewRoutes(definition: Omit<ViewRoutesDefinition, 'kind'>): ViewRoutesDefinition {
  return { kind: 'view', ...definition };
}

/** The request body, or 415 when one was sent that is not JSON. */
function jsonBody(req: Request): unknown {
  if (req.body === undefined) {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > 0 || req.headers['transfer-encoding']) throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be JSON (Content-Type: application/json)');
    throw new HttpError('VALIDATION_FAILED', 'a JSON request body is required');
  }
  return req.body;
}

/**
 * Builds the Express router of one collection or view. Every handler first asks the authorization
 * point (`authorize`) with the caller, the rules in force (a view's own, else its collection's) and
 * the method; the grant's conditions narrow every read and write (DESIGN §3 access and policies).
 * Source: SPEC §4.1 (routes and status codes), §4.2 (GET parameters); DESIGN §4 (bodies, auth details).
 */
export function collectionRouter(definition: CollectionRoutesDefinition | ViewRoutesDefinition, manifest: AppManifest, db: Database, writerOf: (collection: string) => CollectionWriter): Router {
  const collection = manifest.collections.find((c) => c.name === definition.collection) as Collection;
  const { checker } = writerOf(collection.name);
  const view = definition.kind === 'view' ? viewOf(manifest, definition.view) : undefined;
  const viewFilter = view ? viewFilterOf(view.name, view.filter) : undefined;
  const rules = view?.access ?? collection.access;
  const base = `/${view ? view.name : collection.name}`;
  const grant = (caller: Caller, method: AccessMethod): Grant => authorize(caller, manifest, collection, method, rules, { what: `${method} on ${base.slice(1)}` });
  // The view's built-in filter (compiled per request: it may use now() or me()) narrows every read and write.
  const conditions = (caller: Caller, g: Grant) => [
    ...(viewFilter ? [compileFilter(viewFilter, { manifest, collection, provider: db.provider, alias: 't0', callerId: caller.id })] : []),
    ...g.visibility,
  ];
  const readScope = (caller: Caller, g: Grant): ReadScope => ({
    manifest, db, collection, conditions: conditions(caller, g), owner: g.owner, callerId: caller.id,
    readableOf: (name, alias) => readableConditions(caller, manifest, name, alias),
  });
  const writeScope = (caller: Caller, g: Grant): WriteScope => ({
    db, collection, delegate: definition.delegate, checker, callerId: caller.id, conditions: conditions(caller, g), owner: g.owner,
    access: writeAccessFor(caller, manifest), writerOf,
  });
  /** `include` reads each child collection under its own GET rule: refused → 401/403 for the whole request. */
  const authorizeInclude = (caller: Caller, params: ListParams) => {
    for (const relation of params.include) {
      const child = manifest.collections.find((c) => c.name === relation.collection)!;
      authorize(caller, manifest, child, 'GET', child.access, { what: `GET on ${child.name} (include=${relation.key})` });
    }
  };
  const router = Router();

  router.get(base, async (req, res) => {
    const caller = callerOf(res);
    const g = grant(caller, 'GET');
    const params = parseListParams(req.query as Record<string, unknown>, collection, manifest.collections);
    authorizeInclude(caller, params);
    const { data, count } = await listItems(readScope(caller, g), params);
    if (params.count === 'none') return sendJson(res, 200, { data });
    if (params.count === 'only') return sendJson(res, 200, { data: [], meta: { count } });
    sendJson(res, 200, { data, items: data, meta: { count } });
  });
  router.post(base, async (req, res) => {
    const caller = callerOf(res);
    const ids = await createItems(writeScope(caller, grant(caller, 'POST')), jsonBody(req));
    sendJson(res, 201, { data: ids });
  });
  router.delete(base, async (req, res) => {
    const caller = callerOf(res);
    await deleteItems(writeScope(caller, grant(caller, 'DELETE')), jsonBody(req));
    res.status(204).end();
  });
  router.get(`${base}/:id`, async (req, res) => {
    const caller = callerOf(res);
    const g = grant(caller, 'GET');
    const { id } = req.params;
    const params = parseListParams(pick(req.query, ['select', 'lookups', 'include']), collection, manifest.collections);
    authorizeInclude(caller, params);
    if (!UUID.test(id)) throw notFound(collection.name, id);
    sendJson(res, 200, await getItem(readScope(caller, g), id.toLowerCase(), { selection: params.selection, lookups: params.lookups, include: params.include }));
  });
  for (const [method, mode] of [['put', 'replace'], ['patch', 'merge']] as const) {
    router[method](`${base}/:id`, async (req, res) => {
      const caller = callerOf(res);
      const { id } = req.params;
      await updateItem(writeScope(caller, grant(caller, mode === 'replace' ? 'PUT' : 'PATCH')), id, jsonBody(req), mode);
      // The row as it now stands, read through the view and the caller's GET grant: a row changed out
      // of sight is 404 afterwards; a caller who may write but not read gets only the id.
      let read: Grant;
      try {
        read = grant(caller, 'GET');
      } catch {
        return sendJson(res, 200, { id: id.toLowerCase() });
      }
      // Not held to the page-size limit: the write has committed, so a 400 now would mislead.
      res.status(200).json(await getItem(readScope(caller, read), id.toLowerCase(), { lookups: 'full' }));
    });
  }
  router.delete(`${base}/:id`, async (req, res) => {
    const caller = callerOf(res);
    await deleteItem(writeScope(caller, grant(caller, 'DELETE')), req.params.id);
    res.status(204).end();
  });
  for (const path of [base, `${base}/:id`]) {
    router.all(path, (req) => {
      throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
    });
  }
  return router;
}

function viewOf(manifest: AppManifest, name: string): View {
  const view = manifest.views.find((v) => v.name === name);
  if (!view) throw new StartupError(`.svc/routes defines view ${name}, which the manifest does not have: run \`svc generate\` again`);
  return view;
}

/** Parses a view's filter once at start-up; a bad one stops the server with a clear reason. */
function viewFilterOf(name: string, filter: string): FilterNode {
  try {
    return parseFilter(filter);
  } catch (err) {
    throw new StartupError(`view ${name}: ${(err as Error).message}`);
  }
}

function pick(query: unknown, names: string[]): Record<string, unknown> {
  const q = query as Record<string, unknown>;
  return Object.fromEntries(names.filter((n) => q[n] !== undefined).map((n) => [n, q[n]]));
}
