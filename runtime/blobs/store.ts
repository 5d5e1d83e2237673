/**
 * @module Blob storage behind one interface (issue "blobs"): a local folder by default
 * (`<app>/data/blobs`), or an S3-compatible bucket (`s3-store.ts`). Keys are `/`-separated paths made
 * by `metadata.ts` from validated names, UUIDs and version ids, never from client input.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';

/** A byte range, both ends inclusive (as in `Content-Range`). */
export interface ByteRange {
  start: number;
  end: number;
}

/** Thrown by `get` when the key holds nothing. */
export class BlobMissingError extends Error {
  constructor(key: string) {
    super(`no stored blob at ${key}`);
  }
}

/** One stored object as a listing shows it. */
export interface StoredObject {
  key: string;
  /** When its bytes were last written (ms since the epoch). */
  modifiedMs: number;
}

/** Where blob bytes live. */
export interface BlobStore {
  /** `local` or `s3`: the resumable-upload store (`tus.ts`) picks its own store to match. */
  readonly kind: 'local' | 's3';
  /**
   * Stores `body` under `key`, replacing nothing visible until the bytes are complete. Resolves once
   * stored; rejects with the stream's error when `body` fails (nothing is left behind).
   */
  put(key: string, body: Readable, contentType: string): Promise<void>;
  /** The bytes of `key` (only `range` when given). @throws BlobMissingError */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /** The size in bytes of what `key` holds, or null when it holds nothing. */
  size(key: string): Promise<number | null>;
  /** Deletes every key under `prefix` (a folder: it ends with `/`; the S3 store takes any prefix); nothing there is fine. */
  deletePrefix(prefix: string): Promise<void>;
  /**
   * Every key under `prefix` (a folder: it ends with `/`), in key order, so the keys of one folder come
   * together (the orphan sweep, `orphan-sweep.ts`). Nothing there lists nothing.
   */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** Removes what a crash left behind (partial uploads); called at start. */
  cleanUp(): Promise<void>;
  close(): Promise<void>;
}

/** Temporary files of unfinished uploads, under the store's root. */
const TEMP = '.tmp';

/**
 * Blobs as files under `root`: `put` writes `<root>/.tmp/<uuid>` and renames it into place once
 * complete (a rename is atomic), so a crash mid-upload leaves only a temporary file, which `cleanUp`
 * removes at the next start.
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'local' as const;

  constructor(readonly root: string) {}

  private path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Readable): Promise<void> {
    const temp = join(this.root, TEMP, randomUUID());
    await mkdir(dirname(temp), { recursive: true });
    try {
      await pipeline(body, createWriteStream(temp));
      await mkdir(dirname(this.path(key)), { recursive: true });
      await rename(temp, this.path(key));
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const stream = createReadStream(this.path(key), range ? { start: range.start, end: range.end } : {});
    // Open before answering, so a missing file is an error here, not after headers went out.
    await new Promise<void>((ok, fail) => {
      stream.once('open', () => ok());
      stream.once('error', (err: NodeJS.ErrnoException) => fail(err.code === 'ENOENT' ? new BlobMissingError(key) : err));
    });
    return stream;
  }

  async size(key: string): Promise<number | null> {
    return stat(this.path(key)).then(
      (s) => (s.isFile() ? s.size : null),
      () => null,
    );
  }

  async deletePrefix(prefix: string): Promise<void> {
    const dir = this.path(prefix.replace(/\/$/, ''));
    await rm(dir, { recursive: true, force: true });
    // Drop the emptied parents (field, row, collection folders); a non-empty one stays.
    let parent = dirname(dir);
    while (parent.startsWith(this.root) && parent !== this.root) {
      const removed = await rmdir(parent).then(
        () => true,
        () => false,
      );
      if (!removed) break;
      parent = dirname(parent);
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    yield* this.walk(prefix.replace(/\/$/, ''));
  }

  /** The files under the folder of key `dir`, depth first, names in code-unit order (= key order). */
  private async *walk(dir: string): AsyncIterable<StoredObject> {
    let entries: Dirent[];
    try {
      entries = await readdir(this.path(dir), { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const key = `${dir}/${e.name}`;
      if (e.isDirectory()) yield* this.walk(key);
      else if (e.isFile()) {
        const s = await stat(this.path(key)).catch(() => null);
        if (s) yield { key, modifiedMs: s.mtimeMs };
      }
    }
  }

  async cleanUp(): Promise<void> {
    const temp = join(this.root, TEMP);
    for (const name of await readdir(temp).catch(() => [] as string[])) await rm(join(temp, name), { force: true, recursive: true });
  }

  async close(): Promise<void> {}
}
