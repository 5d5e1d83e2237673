/**
 * @module What a blob property holds (SPEC §4.5, issue "blobs"): the column stores a JSON text with the
 * public metadata plus the upload's version and time; rows read as the public part only. Every upload
 * gets a new version, stored under its own key prefix, so a replacement never overwrites bytes a
 * reader may be streaming: readers see the old file or the new one, never a mix.
 */

export { parseStoredBlob, publicMetadata, type BlobMetadata, type StoredBlob } from '../contract/property-values.js';

/** Where one upload's files live: `<collection>/<id>/<field>/<version>/` (the original and its thumbnails). */
export function blobPrefix(collection: string, rowId: string, field: string, version: string): string {
  return `${collection}/${rowId}/${field}/${version}/`;
}

/** The key of the uploaded bytes under a prefix. */
export const originalKey = (prefix: string): string => `${prefix}original`;

/** The key of a thumbnail (`spec` as asked, e.g. `100x100f`) under a prefix: beside the original. */
export const thumbnailKey = (prefix: string, spec: string): string => `${prefix}thumb-${spec}`;
