/**
 * @module The operations of `/api/{collection}/{id}/{blob-field}` (SPEC §4.5, DESIGN §4 "Blob
 * details"), free of HTTP: upload needs the PATCH rule, download the GET rule (policies and `_CREATOR`
 * included, through the same scopes as the data routes). An upload is stored first under a new version
 * and committed as a PATCH of the row second, so a failure leaves the previous file in place.
 */
import { v7 as uuidv7 } from 'uuid';
import { HttpError } from '../errors.js';
import { readBlobColumn, notFound } from '../data/read.js';
import { setBlobColumn, updateItem } from '../data/write.js';
import { UUID } from '../query/list-params.js';
import { blobPrefix, parseStoredBlob, publicMetadata, type BlobMetadata, type StoredBlob } from '../blobs/metadata.js';
import type { BlobService } from '../blobs/service.js';
import { signedMetadata } from '../blobs/signed-url.js';
import type { Property } from '../manifest.js';
import { collectionScopes } from './operations.js';
import type { CollectionResource } from './resources.js';
import type { RequestContext } from './context.js';

/** A blob route's target: the resource, the row id (lower case) and the blob property. */
export interface BlobTarget {
  resource: CollectionResource;
  id: string;
  field: Property;
}

/** Bytes written to the store under `prefix`, waiting to be committed. */
export interface WrittenBlob {
  prefix: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
}

/**
 * The target of a blob path, checked.
 * @throws HttpError NOT_FOUND (404) for an id that is not a GUID; VALIDATION_FAILED (400) for a field
 *   that is not a blob property of the collection
 */
export function blobTarget(resource: CollectionResource, rawId: string, field: string): BlobTarget {
  const p = resource.collection.properties.find((x) => x.name === field);
  if (!p || p.type !== 'blob') {
    const blobs = resource.collection.properties.filter((x) => x.type === 'blob').map((x) => x.name);
    throw new HttpError(
      'VALIDATION_FAILED',
      `${JSON.stringify(field)} is not a blob property of ${resource.collection.name}${blobs.length ? ` (blob properties: ${blobs.join(', ')})` : ' (it has none)'}`,
      { details: [{ path: field, message: 'not a blob property' }] },
    );
  }
  if (!UUID.test(rawId)) throw notFound(resource.name, rawId);
  return { resource, id: rawId.toLowerCase(), field: p };
}

function service(ctx: RequestContext): BlobService {
  if (!ctx.app.blobs) throw new Error('this runtime has no blob service');
  return ctx.app.blobs;
}

/**
 * Admits an upload before its body is read: the PATCH rule, and a row the caller may change.
 * @throws HttpError 401/403 (rule or `_CREATOR`), NOT_FOUND (404)
 */
export async function admitUpload(ctx: RequestContext, t: BlobTarget): Promise<void> {
  const scopes = collectionScopes(ctx, t.resource);
  const value = await readBlobColumn(scopes.readScope(scopes.grant('PATCH')), t.id, t.field.name);
  if (value === undefined) throw notFound(t.resource.name, t.id);
}

/** The key prefix a new upload of `t` is written under: a new version every time. */
export function newBlobPrefix(t: BlobTarget): string {
  return blobPrefix(t.resource.collection.name, t.id, t.field.name, uuidv7());
}

/**
 * Commits written bytes as the blob of the row (a PATCH: `updatedAt`, change notification); the
 * previous file is released after the commit. A refused commit deletes the new bytes.
 * @returns the metadata rows now show (the url signed, DESIGN §11)
 * @throws HttpError 401/403, NOT_FOUND (404) when the row went away meanwhile
 */
export async function commitBlob(ctx: RequestContext, t: BlobTarget, written: WrittenBlob): Promise<BlobMetadata> {
  const version = written.prefix.split('/').at(-2)!;
  const stored: StoredBlob = {
    name: written.name,
    size: written.size,
    contentType: written.contentType,
    sha256: written.sha256,
    url: `/api/${encodeURIComponent(t.resource.collection.name)}/${t.id}/${encodeURIComponent(t.field.name)}?v=${version}`,
    prefix: written.prefix,
    uploadedAt: ctx.now.toISOString(),
  };
  const scopes = collectionScopes(ctx, t.resource);
  try {
    await setBlobColumn(scopes.writeScope(scopes.grant('PATCH')), t.id, t.field.name, JSON.stringify(stored));
  } catch (err) {
    // A delete that fails too must not hide why the commit failed: the orphan sweep removes the files later.
    await service(ctx)
      .store.deletePrefix(written.prefix)
      .catch(() => undefined);
    throw err;
  }
  return signedMetadata(t.resource.collection, publicMetadata(stored))!;
}

/**
 * The stored blob of a row, for a download under the GET rule.
 * @throws HttpError 401/403, NOT_FOUND (404) for a missing row or an empty blob (DESIGN §4)
 */
export async function readBlob(ctx: RequestContext, t: BlobTarget): Promise<StoredBlob> {
  const scopes = collectionScopes(ctx, t.resource);
  const value = await readBlobColumn(scopes.readScope(scopes.grant('GET')), t.id, t.field.name);
  if (value === undefined) throw notFound(t.resource.name, t.id);
  const stored = parseStoredBlob(value);
  if (!stored) throw new HttpError('NOT_FOUND', `${t.resource.name} ${JSON.stringify(t.id)} has no ${t.field.name}`);
  return stored;
}

/** Removes the blob of a row (DELETE on the blob path; the same as PATCH with null). @throws HttpError 401/403/404 */
export async function clearBlob(ctx: RequestContext, t: BlobTarget): Promise<void> {
  const scopes = collectionScopes(ctx, t.resource);
  await updateItem(scopes.writeScope(scopes.grant('PATCH')), t.id, { [t.field.name]: null }, 'merge');
}
