/**
 * @module What a blob property holds (SPEC §4.5, issue "blobs"): the column stores a JSON text with the
 * public metadata plus the upload's version and time; rows read as the public part only. Every upload
 * gets a new version, stored under its own key prefix, so a replacement never overwrites bytes a
 * reader may be streaming: readers see the old file or the new one, never a mix.
 */

/** A blob property as rows show it: `url` is the download path (with the version, so it changes with the file). */
export interface BlobMetadata {
  /** The file name the client sent (at most 255 characters). */
  name: string;
  /** Bytes. */
  size: number;
  contentType: string;
  /** Hex SHA-256 of the bytes; the download's ETag. */
  sha256: string;
  /** `/api/<collection>/<id>/<field>?v=<version>`: GET it to download. */
  url: string;
}

/**
 * The stored form: the public metadata, the key prefix of this upload's files (its version) and the
 * upload time (ISO 8601, the download's Last-Modified).
 */
export interface StoredBlob extends BlobMetadata {
  prefix: string;
  uploadedAt: string;
}

/** The public part of a stored blob column (JSON text or already parsed); null for null. */
export function publicMetadata(column: unknown): BlobMetadata | null {
  const stored = parseStoredBlob(column);
  if (!stored) return null;
  const { name, size, contentType, sha256, url } = stored;
  return { name, size, contentType, sha256, url };
}

/** A blob column's value → the stored blob, or null (null column, or a value that is not ours). */
export function parseStoredBlob(column: unknown): StoredBlob | null {
  if (column === null || column === undefined) return null;
  const value = typeof column === 'string' ? (JSON.parse(column) as unknown) : column;
  if (typeof value !== 'object' || value === null || typeof (value as StoredBlob).prefix !== 'string') return null;
  return value as StoredBlob;
}

/** Where one upload's files live: `<collection>/<id>/<field>/<version>/` (the original and its thumbnails). */
export function blobPrefix(collection: string, rowId: string, field: string, version: string): string {
  return `${collection}/${rowId}/${field}/${version}/`;
}

/** The key of the uploaded bytes under a prefix. */
export const originalKey = (prefix: string): string => `${prefix}original`;

/** The key of a thumbnail (`spec` as asked, e.g. `100x100f`) under a prefix: beside the original. */
export const thumbnailKey = (prefix: string, spec: string): string => `${prefix}thumb-${spec}`;
