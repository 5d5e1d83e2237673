/**
 * @module The operations of `/api/{collection|view|query}[/{id}]` (SPEC §4.1–4.4), free of any HTTP
 * framework: the HTTP adapter and the in-process API client call `runOperation` alike, so rules,
 * validation, change sets and error bodies are written once (STYLE §10.15). Every operation first asks
 * the authorization point, then reads the body (never before: an anonymous caller's body is not
 * parsed), then reads or writes.
 */
import { HttpError } from '../errors.js';
import type { AccessMethod } from '../manifest.js';
import { authorize, fromRowConditions, readableConditions, writeAccessFor, type Grant } from '../auth/authorize.js';
import { getItem, listItems, notFound, type ReadScope } from '../data/read.js';
import { createItems, deleteItem, deleteItems, updateItem, type WriteScope } from '../data/write.js';
import { querySource } from '../data/query-source.js';
import { compileFilter } from '../query/filter-compile.js';
import { invalidParameter, parseListParams, UUID, type ListParams } from '../query/list-params.js';
import type { FilterNode } from '../query/filter-ast.js';
import type { CollectionResource, ExternalResource, QueryResource, Resource } from './resources.js';
import { forwardRead } from '../external/forward.js';
import type { RequestContext } from './context.js';

/** One call of a data route. */
export interface ApiRequest {
  /** Upper-case HTTP method. */
  method: string;
  /** The row id from the path (`/Order/{id}`), decoded; absent for the collection path. */
  id?: string;
  /** Query parameters: a string, or an array when repeated. */
  query: Record<string, unknown>;
  /** Reads the JSON body (undefined when none was sent); called only once the caller is admitted. */
  body(): Promise<unknown>;
}

/** The answer: status and JSON body (none for 204). `limited`: the 5 MiB result limit applies. */
export interface ApiResponse {
  status: number;
  body?: unknown;
  limited?: boolean;
}

const list = (data: unknown[], count: number | undefined, params: ListParams): ApiResponse => {
  if (params.count === 'none') return { status: 200, body: { data }, limited: true };
  if (params.count === 'only') return { status: 200, body: { data: [], meta: { count } }, limited: true };
  return { status: 200, body: { data, items: data, meta: { count } }, limited: true };
};

/**
 * Runs one operation on a resource.
 * @throws HttpError for every refusal (401/403/404/405/400/409/413/503/504…); the adapter writes the body
 */
export function runOperation(ctx: RequestContext, resource: Resource, request: ApiRequest): Promise<ApiResponse> {
  switch (resource.kind) {
    case 'query':
      return queryOperation(ctx, resource, request);
    case 'external':
      return externalOperation(ctx, resource, request);
    default:
      return collectionOperation(ctx, resource, request);
  }
}

/**
 * A read of an external collection (SPEC §4.10): its GET rule first (nothing reaches the provider for
 * a refused caller or another method), then the forward.
 */
async function externalOperation(ctx: RequestContext, r: ExternalResource, request: ApiRequest): Promise<ApiResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    throw new HttpError('METHOD_NOT_ALLOWED', `${r.name} is an external collection: it is read-only, and ${request.method} is not supported`);
  }
  const grant = authorize(ctx.caller, ctx.app.manifest, r.collection, 'GET', r.collection.access, { what: `GET on ${r.name}` });
  // External rows have no creator: a `_CREATOR` admission admits nothing.
  if (grant.owner) throw new HttpError('FORBIDDEN', `GET on ${r.name} is not allowed for this caller`);
  const source = ctx.app.externals?.get(r.name);
  if (!source) throw new Error(`no connection for external collection ${r.name}`);
  const answer = await forwardRead(source, { id: request.id, query: request.query, signal: ctx.signal, reqId: ctx.reqId }, ctx.app.logger);
  return { ...answer, limited: true };
}

function pick(query: Record<string, unknown>, names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.filter((n) => query[n] !== undefined).map((n) => [n, query[n]]));
}

/** The authorization and scopes of one request on a collection or view (data routes and blob routes alike). */
export interface CollectionScopes {
  /** Asks the authorization point for `method` under the resource's rules. @throws HttpError 401/403 */
  grant(method: AccessMethod): Grant;
  /** What a read under `g` sees; `viewFilter: null` reads the base collection (after a write through the view). */
  readScope(g: Grant, viewFilter?: FilterNode | null): ReadScope;
  /** What a write under `g` may change. */
  writeScope(g: Grant): WriteScope;
}

/** Builds the scopes of `ctx`'s caller on `r`. */
export function collectionScopes(ctx: RequestContext, r: CollectionResource): CollectionScopes {
  const { manifest } = ctx.app;
  const { caller } = ctx;
  const { collection } = r;
  const conditions = (g: Grant, viewFilter: FilterNode | null | undefined = r.viewFilter) => [
    ...(viewFilter ? [compileFilter(viewFilter, { manifest, collection, provider: ctx.app.db.provider, alias: 't0', callerId: caller.id })] : []),
    ...g.visibility,
  ];
  return {
    grant: (method) => authorize(caller, manifest, collection, method, r.rules, { what: `${method} on ${r.name}` }),
    readScope: (g, viewFilter = r.viewFilter) => ({
      manifest,
      db: ctx.app.db,
      collection,
      conditions: conditions(g, viewFilter),
      owner: g.owner,
      callerId: caller.id,
      readableOf: (name, alias) => readableConditions(caller, manifest, name, alias),
    }),
    writeScope: (g) => ({
      db: ctx.app.db,
      collection,
      checker: ctx.app.writerOf(collection.name).checker,
      callerId: caller.id,
      conditions: conditions(g),
      owner: g.owner,
      access: writeAccessFor(caller, manifest),
      writerOf: ctx.app.writerOf,
      sink: ctx.app.sink,
      reqId: ctx.reqId,
      now: ctx.now,
      signal: ctx.signal,
      releaseBlobs: ctx.app.blobs && ((values) => ctx.app.blobs!.release(values)),
      captureDepth: manifest.triggers?.length ? (caller.triggerDepth === undefined ? 0 : caller.triggerDepth + 1) : undefined,
    }),
  };
}

async function collectionOperation(ctx: RequestContext, r: CollectionResource, request: ApiRequest): Promise<ApiResponse> {
  const { manifest } = ctx.app;
  const { caller } = ctx;
  const { collection } = r;
  const { grant, readScope, writeScope } = collectionScopes(ctx, r);
  /** `include` reads each child collection under its own GET rule: refused → 401/403 for the whole request. */
  const authorizeInclude = (params: ListParams) => {
    for (const relation of params.include) {
      const child = manifest.collections.find((c) => c.name === relation.collection)!;
      authorize(caller, manifest, child, 'GET', child.access, { what: `GET on ${child.name} (include=${relation.key})` });
    }
  };
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  if (request.id === undefined) {
    switch (method) {
      case 'GET': {
        const g = grant('GET');
        const params = parseListParams(request.query, collection, manifest.collections);
        authorizeInclude(params);
        const { data, count } = await listItems(readScope(g), params);
        return list(data, count, params);
      }
      case 'POST': {
        const g = grant('POST');
        const { ids } = await createItems(writeScope(g), await requiredBody(request));
        return { status: 201, body: { data: ids } };
      }
      case 'DELETE': {
        const g = grant('DELETE');
        await deleteItems(writeScope(g), await requiredBody(request));
        return { status: 204 };
      }
    }
    throw new HttpError('METHOD_NOT_ALLOWED', `${request.method} is not supported on /${r.name}`);
  }
  const id = request.id;
  switch (method) {
    case 'GET': {
      const g = grant('GET');
      const params = parseListParams(pick(request.query, ['select', 'lookups', 'include']), collection, manifest.collections);
      authorizeInclude(params);
      if (!UUID.test(id)) throw notFound(collection.name, id);
      const item = await getItem(readScope(g), id.toLowerCase(), { selection: params.selection, lookups: params.lookups, include: params.include });
      return { status: 200, body: item, limited: true };
    }
    case 'PUT':
    case 'PATCH': {
      const g = grant(method);
      await updateItem(writeScope(g), id, await requiredBody(request), method === 'PUT' ? 'replace' : 'merge');
      // The row as it now stands, read under the base collection's GET rule and policies (not the
      // view's filter: a write that moved the row out of the view has committed, so 404 would mislead).
      // A caller who may write but not read gets only the id.
      let read: Grant;
      try {
        read = authorize(caller, manifest, collection, 'GET', collection.access, { what: `GET on ${collection.name}` });
      } catch {
        return { status: 200, body: { id: id.toLowerCase() } };
      }
      const item = await getItem(readScope(read, null), id.toLowerCase(), { lookups: 'full' }).catch((err: unknown) => {
        if (err instanceof HttpError && (err.status === 404 || err.status === 403)) return { id: id.toLowerCase() };
        throw err;
      });
      return { status: 200, body: item };
    }
    case 'DELETE': {
      const g = grant('DELETE');
      await deleteItem(writeScope(g), id);
      return { status: 204 };
    }
  }
  throw new HttpError('METHOD_NOT_ALLOWED', `${request.method} is not supported on /${r.name}/${id}`);
}

/** The body of a write, or 400 when none was sent. */
async function requiredBody(request: ApiRequest): Promise<unknown> {
  const body = await request.body();
  if (body === undefined) throw new HttpError('VALIDATION_FAILED', 'a JSON request body is required');
  return body;
}

const SYSTEM_ONLY = new Set(['createdAt', 'updatedAt', 'createdBy']);

function queryParams(query: Record<string, unknown>, r: QueryResource, ctx: RequestContext) {
  const { lookups: _ignored, ...rest } = query;
  const params = parseListParams(rest, r.rowCollection, ctx.app.manifest.collections);
  const fields = Object.keys(r.query.fields).join(', ');
  if (params.sort && SYSTEM_ONLY.has(params.sort.property)) {
    throw invalidParameter('sortBy', `unknown field "${params.sort.property}" on ${r.name} (fields: id, ${fields})`);
  }
  for (const name of params.selection?.fields ?? []) {
    if (SYSTEM_ONLY.has(name)) throw invalidParameter('select', `unknown field "${name}" on ${r.name} (fields: id, ${fields})`);
  }
  if (params.selection?.nested.size)
    throw invalidParameter('select', `dot paths cannot be selected from a query's rows; define the field in ${r.name} instead`);
  if (params.lastKey !== undefined && r.query.idType !== 'guid')
    throw invalidParameter('lastKey', `keyset paging needs GUID ids; ${r.name} rows are groups, page them with pageNo`);
  return { ...params, lookups: 'id' as const };
}

/**
 * A query's rows (DESIGN §3 "Query", §4 "Queries gate access…"): its own rules gate access (a
 * `_CREATOR` in them narrows to own rows); the `from` collection's policies and the `_CREATOR` of its
 * GET rule narrow its rows (`fromRowConditions`). Read-only: other methods answer 405.
 */
async function queryOperation(ctx: RequestContext, r: QueryResource, request: ApiRequest): Promise<ApiResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    throw new HttpError('METHOD_NOT_ALLOWED', `${r.name} is a query: it is read-only, and ${request.method} is not supported`);
  }
  const { manifest, db } = ctx.app;
  const { caller } = ctx;
  const grant = authorize(caller, manifest, r.from, 'GET', r.query.access, { what: `GET on ${r.name}` });
  // The query's rules admit the caller (and a `_CREATOR` in them narrows); the `from` collection's
  // policies and the `_CREATOR` of its GET rule always filter (DESIGN §4 "Queries gate access…").
  const conditions = [...fromRowConditions(caller, manifest, r.from), ...(grant.owner ? [grant.owner] : [])];
  const readableOf = (name: string, alias?: string) => readableConditions(caller, manifest, name, alias);
  const source = querySource(manifest, r.query, db.provider, { conditions, callerId: caller.id, readableOf });
  const scope: ReadScope = {
    manifest,
    db,
    collection: r.rowCollection,
    rows: { source, idType: r.query.idType },
    callerId: caller.id,
    readableOf,
  };
  if (request.id === undefined) {
    const params = queryParams(request.query, r, ctx);
    const { data, count } = await listItems(scope, params);
    return list(data, count, params);
  }
  const params = queryParams(request.query.select === undefined ? {} : { select: request.query.select }, r, ctx);
  const id = r.query.idType === 'guid' ? request.id.toLowerCase() : request.id;
  if (r.query.idType === 'guid' && !UUID.test(id)) throw notFound(r.name, id);
  return { status: 200, body: await getItem(scope, id, { selection: params.selection, lookups: 'id' }), limited: true };
}
