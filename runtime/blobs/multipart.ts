/**
 * @module Reads the one file of a `multipart/form-data` upload (SPEC §4.5: a part named `file`) with
 * busboy, streaming: the file part is handed on as it arrives and counted and hashed on the way, so
 * memory stays flat whatever the size, and the size limit is enforced as soon as it is passed.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import busboy from 'busboy';
import { HttpError } from '../errors.js';

/** Slack for the multipart framing around the file when a declared Content-Length is checked up front. */
const FRAMING_BYTES = 64 * 1024;

/** What the client said about its file, and the bytes counted and hashed so far. */
export interface IncomingFile {
  /** The part's file name (path parts dropped, at most 255 characters), `file` when none was sent. */
  name: string;
  /** The part's declared type, `application/octet-stream` when none. */
  contentType: string;
  /** The bytes: fails with 413 PAYLOAD_TOO_LARGE as soon as more than the limit arrived. */
  stream: Readable;
  /** Size and hex SHA-256, complete once `stream` has ended. */
  digest(): { size: number; sha256: string };
}

/** 413 for a blob over the limit, naming it. */
export function blobTooLarge(maxBytes: number): HttpError {
  const mib = maxBytes / (1024 * 1024);
  return new HttpError('PAYLOAD_TOO_LARGE', `the file is larger than the ${Number.isInteger(mib) ? `${mib} MiB` : `${maxBytes}-byte`} limit`, {
    headers: { connection: 'close' },
  });
}

/** A pass-through that counts and hashes, and fails with 413 past `maxBytes`. */
export function meteredStream(maxBytes: number): Transform & { digest(): { size: number; sha256: string } } {
  const hash = createHash('sha256');
  let size = 0;
  let hex: string | undefined;
  const t = new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      size += chunk.length;
      if (size > maxBytes) return done(blobTooLarge(maxBytes));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return Object.assign(t, { digest: () => ({ size, sha256: (hex ??= hash.digest('hex')) }) });
}

/** A safe display name: the last path segment, no control characters, at most 255 characters. */
export function cleanFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean.slice(0, 255) || 'file';
}

/**
 * Parses the request and runs `store` on its file part while the rest of the body is read; resolves
 * with what `store` returned once the whole body was read and found well-formed.
 * `discard` is called with that result when the body turns out bad after the file was stored.
 * @throws HttpError UNSUPPORTED_MEDIA_TYPE (415) for a body that is not multipart/form-data;
 *   PAYLOAD_TOO_LARGE (413) past `maxBytes` (checked against Content-Length first); VALIDATION_FAILED
 *   (400) for no part named `file`, a second file part, a file part under another name, or a
 *   malformed body; whatever `store` throws
 */
export function readUpload<T>(
  req: IncomingMessage,
  maxBytes: number,
  store: (file: IncomingFile) => Promise<T>,
  discard: (stored: T) => Promise<void>,
): Promise<T> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type)) {
    return Promise.reject(new HttpError('UNSUPPORTED_MEDIA_TYPE', 'upload the file as multipart/form-data with a part named "file"'));
  }
  if (Number(req.headers['content-length'] ?? 0) > maxBytes + FRAMING_BYTES) return Promise.reject(blobTooLarge(maxBytes));
  return new Promise<T>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fields: 20, fieldSize: 64 * 1024, parts: 40 } });
    } catch {
      reject(new HttpError('VALIDATION_FAILED', 'the multipart body has no boundary'));
      return;
    }
    let failure: unknown;
    let storing: Promise<T> | undefined;
    let current: Readable | undefined;
    /** The store has all of the file: its stream is left alone from then on. */
    let stored = false;
    const fail = (err: unknown) => {
      if (failure) return;
      failure = err;
      req.unpipe(parser);
      req.resume();
      // The store stops reading (and deletes its partial copy) when the file stream fails.
      if (current && !current.destroyed && !stored) current.destroy(err instanceof Error ? err : new Error(String(err)));
      if (storing) void storing.then(discard, () => undefined);
      reject(err);
    };
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        fail(
          new HttpError('VALIDATION_FAILED', `unexpected file part "${name}": send the file in a part named "file"`, {
            details: [{ path: name, message: 'not the "file" part' }],
          }),
        );
        return;
      }
      const metered = meteredStream(maxBytes);
      current = metered;
      // The store listens for failures while it reads; after that, a late failure must not be unhandled.
      metered.on('error', () => undefined);
      stream.on('error', (err) => metered.destroy(err));
      stream.pipe(metered);
      const file: IncomingFile = {
        name: cleanFileName(info.filename),
        contentType: (info.mimeType || 'application/octet-stream').slice(0, 255),
        stream: metered,
        digest: () => metered.digest(),
      };
      storing = store(file);
      storing.then(() => (stored = true), fail);
    });
    parser.on('filesLimit', () => fail(new HttpError('VALIDATION_FAILED', 'send exactly one file part named "file" (a second file part was sent)')));
    parser.on('partsLimit', () => fail(new HttpError('VALIDATION_FAILED', 'the multipart body has too many parts')));
    parser.on('error', () => fail(new HttpError('VALIDATION_FAILED', 'the multipart body is malformed or ended early')));
    parser.on('close', () => {
      if (failure) return;
      if (!storing) {
        fail(new HttpError('VALIDATION_FAILED', 'the multipart body has no part named "file"', { details: [{ path: 'file', message: 'missing' }] }));
        return;
      }
      storing.then(resolve, fail);
    });
    req.on('aborted', () => fail(new HttpError('VALIDATION_FAILED', 'the upload was interrupted')));
    req.pipe(parser);
  });
}
