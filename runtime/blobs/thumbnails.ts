/**
 * @module Thumbnails of image blobs (issue "blobs"): `?thumb=WxH` crops to fill the box, `WxHf` fits
 * inside it, for the sizes svc.json `storage.thumbnails` allows only (no resize-anything endpoint).
 * Each is made once with sharp, stored beside the original (so it goes when the original does) and
 * served from there; concurrent requests for the same one share its making.
 */
import { Readable } from 'node:stream';
import type { FormatEnum } from 'sharp';
import { HttpError } from '../errors.js';
import type { BlobStore } from './store.js';
import { originalKey, thumbnailKey, type StoredBlob } from './metadata.js';

/** Formats sharp reads and writes back as themselves; other images become PNG thumbnails. */
const KEPT_FORMATS: Record<string, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'image/avif': 'avif' };
/** Largest source image, in pixels (width × height): bigger ones are refused rather than decoded. */
const MAX_INPUT_PIXELS = 50_000_000;

/** A parsed `thumb` value. */
export interface ThumbnailSpec {
  width: number;
  height: number;
  fit: 'cover' | 'inside';
  /** As asked, e.g. `100x100f`: part of the key and the ETag. */
  text: string;
}

/**
 * Parses `WxH` / `WxHf` against the allowed sizes.
 * @throws HttpError INVALID_PARAMETER (400) for another shape or a size not allowed (the message lists them)
 */
export function parseThumbnail(value: string, allowed: readonly string[]): ThumbnailSpec {
  const m = /^(\d{1,4})x(\d{1,4})(f?)$/.exec(value);
  if (!m || !allowed.includes(`${m[1]}x${m[2]}`)) {
    const sizes = allowed.length > 0 ? allowed.map((s) => `${s} or ${s}f`).join(', ') : 'none (svc.json storage.thumbnails is empty)';
    throw new HttpError('INVALID_PARAMETER', `thumb must be one of the allowed sizes: ${sizes}`, {
      details: [{ path: 'thumb', message: `"${value}" is not allowed` }],
    });
  }
  return { width: Number(m[1]), height: Number(m[2]), fit: m[3] ? 'inside' : 'cover', text: value };
}

/** The content type of a thumbnail of an image of `contentType`. */
export const thumbnailType = (contentType: string): string => (KEPT_FORMATS[contentType] ? contentType : 'image/png');

const making = new Map<string, Promise<void>>();

/**
 * Makes the thumbnail of a stored image unless it exists; resolves when it is stored.
 * @returns its key and size in bytes
 * @throws HttpError INVALID_PARAMETER (400) when the blob is not an image sharp can read
 */
export async function ensureThumbnail(store: BlobStore, blob: StoredBlob, spec: ThumbnailSpec): Promise<{ key: string; size: number }> {
  if (!blob.contentType.startsWith('image/')) {
    throw new HttpError('INVALID_PARAMETER', `thumbnails are made of images only; this file is ${blob.contentType}`, {
      details: [{ path: 'thumb', message: 'not an image' }],
    });
  }
  const key = thumbnailKey(blob.prefix, spec.text);
  const existing = await store.size(key);
  if (existing !== null) return { key, size: existing };
  let pending = making.get(key);
  if (!pending) {
    pending = makeThumbnail(store, blob, spec, key).finally(() => making.delete(key));
    making.set(key, pending);
  }
  await pending;
  return { key, size: (await store.size(key)) ?? 0 };
}

async function makeThumbnail(store: BlobStore, blob: StoredBlob, spec: ThumbnailSpec, key: string): Promise<void> {
  const format = KEPT_FORMATS[blob.contentType] ?? 'png';
  const { default: sharp } = await import('sharp'); // loaded on the first thumbnail, not at start-up
  const resize = sharp({ limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' })
    .rotate()
    .resize(spec.width, spec.height, { fit: spec.fit, withoutEnlargement: spec.fit === 'inside' })
    .toFormat(format as keyof FormatEnum);
  const source = await store.get(originalKey(blob.prefix));
  source.on('error', (err) => resize.destroy(err));
  source.pipe(resize);
  let bytes: Buffer;
  try {
    bytes = await resize.toBuffer();
  } catch (err) {
    source.destroy();
    throw new HttpError('INVALID_PARAMETER', `no thumbnail: the file is not an image that can be read (${(err as Error).message.slice(0, 100)})`, {
      details: [{ path: 'thumb', message: 'unreadable image' }],
    });
  }
  await store.put(key, Readable.from([bytes]), thumbnailType(blob.contentType));
}
