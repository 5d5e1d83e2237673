/**
 * @module Resumable uploads with the tus protocol (issue "blobs"; tus 1.0.0 with creation,
 * termination and expiration) through `@tus/server`, at `/api/{collection}/{id}/{field}/tus` and at
 * `/api/_agent/uploads/tus` (an agent attachment, DESIGN §7a): `POST` creates an upload
 * (`Location: …/tus/<upload>`), `HEAD` tells its offset, `PATCH` appends. Each request names its
 * `TusTarget`, admitted by its caller before the tus server sees it (a blob: the row's PATCH rule;
 * an attachment: a signed-in identity), and an upload id is bound to its target by its prefix (a
 * blob's collection, row and field; an attachment's identity). A finished upload goes to its
 * target's `finish` (a blob: copied into the blob store, hashed on the way, and committed exactly like
 * a multipart upload); the answer to the last `PATCH` is 200 with what `finish` returned. Unfinished
 * uploads expire after a day.
 *
 * Across instances (issue 24 §3): with Redis, an upload's requests are serialized by `RedisLocker`
 * (`tus-lock.ts`) instead of tus's per-process lock, and the S3 store keeps no per-process copy of an
 * upload's `.info` (another instance may change it: a deferred length), so a PATCH may land on any
 * instance. Without Redis, one instance: tus's `MemoryLocker`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import type { Redis } from 'ioredis';
import type { DataStore, KvStore, Server, Upload } from '@tus/server';
import { HttpError } from '../errors.js';
import { RedisLocker, tusError } from './tus-lock.js';
import type { Logger } from '../log.js';
import type { RequestContext } from '../core/context.js';
import { admitUpload, commitBlob, newBlobPrefix, type BlobTarget } from '../core/blob-operations.js';
import { cleanFileName, meteredStream } from './multipart.js';
import { originalKey } from './metadata.js';
import type { BlobService } from './service.js';
import { LocalBlobStore } from './store.js';

const EXPIRES_MS = 24 * 60 * 60 * 1000;

/** Where the uploads of one endpoint go. */
export interface TusTarget {
  /** What every upload id of this target starts with (then 32 hex digits); no `/` or `\\`. */
  idPrefix: string;
  /** The largest upload, bytes. */
  maxBytes: number;
  /** Checks a creation's `Upload-Metadata`. @throws HttpError (400) */
  checkCreate(metadata: Record<string, string | null> | undefined): void;
  /** Checks, before a creation, that the caller may start one more upload. @throws HttpError */
  admit?(): Promise<void>;
  /** Takes a finished upload's bytes; returns the JSON body of the last PATCH's 200. */
  finish(source: Readable, upload: Upload): Promise<unknown>;
}

/** What a tus hook needs of the request it runs for (the tus server hands hooks a web `Request`). */
interface Pending {
  target: TusTarget;
  /** The path of the upload collection, e.g. `/api/{collection}/{id}/{field}/tus`. */
  base: string;
}

/** Creates `dir` when missing; returns it. */
function folder(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}

const uploadPrefix = (t: BlobTarget) => `${t.resource.collection.name}.${t.id}.${t.field.name}.`;

/** The random part of an upload id: what `namingFunction` appends to the prefix. */
const UPLOAD_SUFFIX = /^[0-9a-f]{32}$/;

/**
 * True when `upload` is exactly an id this endpoint generates for `target`: its prefix, then 32 hex
 * digits, and no path separator anywhere (the file store joins the id to its folder, so a decoded
 * `%2F..%2F` would reach another row's upload).
 */
export function isUploadIdOf(upload: string, target: { idPrefix: string }): boolean {
  const prefix = target.idPrefix;
  return upload.startsWith(prefix) && UPLOAD_SUFFIX.test(upload.slice(prefix.length)) && !/[/\\]/.test(upload);
}

/** The target of a blob property's uploads: admitted by the row's PATCH rule (`handle`'s caller), committed like a multipart upload. */
export function blobTusTarget(ctx: RequestContext, target: BlobTarget, blobs: BlobService): TusTarget {
  return {
    idPrefix: uploadPrefix(target),
    maxBytes: blobs.settings.maxBytes,
    checkCreate: (metadata) => void declaredType(metadata),
    finish: async (source, upload) => {
      const prefix = newBlobPrefix(target);
      const metered = meteredStream(blobs.settings.maxBytes);
      pipeline(source, metered, () => undefined);
      const contentType = declaredType(upload.metadata);
      await blobs.store.put(originalKey(prefix), metered, contentType);
      const name = cleanFileName(upload.metadata?.filename ?? upload.metadata?.name ?? undefined);
      return commitBlob(ctx, target, { prefix, name, contentType, ...metered.digest() });
    },
  };
}

/** A media type (RFC 9110 §8.3.1): `type/subtype`, then `; name=value` parameters, printable ASCII only. */
const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+([ \t]*;[ \t]*[\w!#$&^.+-]+=("[\x20\x21\x23-\x5b\x5d-\x7e]*"|[\w!#$&^.+-]+))*$/;

/** True when `value` may be sent as a Content-Type header: a media type of at most 255 characters. */
export function isMediaType(value: string): boolean {
  return value.length <= 255 && MEDIA_TYPE.test(value);
}

/**
 * The content type an upload declares in its tus metadata (`filetype`, else `contentType`), or
 * `application/octet-stream` when it declares none.
 * @throws HttpError VALIDATION_FAILED (detail `/filetype` or `/contentType`) when it is not a media
 *   type of at most 255 characters: it becomes the download's Content-Type header
 */
export function declaredType(metadata: Record<string, string | null> | undefined): string {
  for (const key of ['filetype', 'contentType']) {
    const value = metadata?.[key];
    if (!value) continue;
    if (!isMediaType(value)) {
      throw new HttpError('VALIDATION_FAILED', `${key} in Upload-Metadata must be a media type such as image/png`, {
        details: [{ path: `/${key}`, message: 'must be a media type (type/subtype, optional parameters), at most 255 characters' }],
      });
    }
    return value;
  }
  return 'application/octet-stream';
}

type TusStore = DataStore & { read(id: string): Readable | Promise<Readable>; remove(id: string): Promise<void> };

/** The first sweep of expired uploads, after start-up (ms), then hourly. */
const FIRST_SWEEP_MS = 60_000;

/** What several instances share: Redis (the bus's command connection, and new subscriber connections) and the app's name. */
export interface SharedUploads {
  redis: Redis;
  /** Opens a new subscriber connection to the same Redis (pub/sub needs a connection of its own). */
  newSubscriber: (role: string) => Redis;
  apiName: string;
}

/** A tus metadata cache that keeps nothing: every read asks the bucket, which all instances share. */
const NO_CACHE: KvStore<never> = {
  get: async () => undefined,
  set: async () => undefined,
  delete: async () => undefined,
};

/**
 * The resumable-upload endpoint of every blob property. The tus server and its store (with the S3 SDK)
 * are loaded on the first upload or the first sweep, not at start-up.
 */
export class TusUploads {
  private loaded?: Promise<{ server: Server; datastore: TusStore }>;
  private readonly pending = new WeakMap<IncomingMessage, Pending>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly firstSweep: NodeJS.Timeout;

  private locker?: RedisLocker;

  /** @param shared - Redis when the app has it (`REDIS_URL` or svc.json `realtime.redis`): the lock is then shared */
  constructor(
    private readonly blobs: BlobService,
    private readonly logger: Logger,
    private readonly shared?: SharedUploads,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), 60 * 60 * 1000).unref();
    this.firstSweep = setTimeout(() => void this.sweep(), FIRST_SWEEP_MS).unref();
  }

  /** The tus server and its data store, made on first use. */
  private tus(): Promise<{ server: Server; datastore: TusStore }> {
    return (this.loaded ??= this.load());
  }

  private async load(): Promise<{ server: Server; datastore: TusStore }> {
    const { store, settings } = this.blobs;
    const [{ Server }, { FileStore }] = await Promise.all([import('@tus/server'), import('@tus/file-store')]);
    let datastore: TusStore;
    if (store instanceof LocalBlobStore) {
      datastore = new FileStore({ directory: folder(join(store.root, '.tus')), expirationPeriodInMilliseconds: EXPIRES_MS });
    } else {
      const [{ S3Store }, { s3ClientConfig }] = await Promise.all([import('@tus/s3-store'), import('./s3-store.js')]);
      datastore = new S3Store({
        s3ClientConfig: { ...s3ClientConfig(settings.s3!), bucket: settings.s3!.bucket },
        useTags: false,
        expirationPeriodInMilliseconds: EXPIRES_MS,
        ...(this.shared && { cache: NO_CACHE }),
      });
    }
    if (this.shared) {
      const { redis, newSubscriber, apiName } = this.shared;
      this.locker = new RedisLocker({ redis, subscriber: () => newSubscriber('tus lock subscriber'), apiName, logger: this.logger });
    }
    const of = (req: Request) => this.pending.get((req as unknown as { runtime: { node: { req: IncomingMessage } } }).runtime.node.req)!;
    const server = new Server({
      path: '/api',
      datastore,
      maxSize: (req) => of(req).target.maxBytes,
      allowedOrigins: [], // CORS is the server's (runtime/http/cors.ts): tus adds no Allow-Origin
      exposedHeaders: ['X-Request-Id', 'ETag', 'Retry-After'], // tus replaces Access-Control-Expose-Headers: keep these
      ...(this.locker && { locker: this.locker }),
      namingFunction: (req) => `${of(req).target.idPrefix}${randomBytes(16).toString('hex')}`,
      generateUrl: (req, { proto, host, id }) => `${proto}://${host}${of(req).base}/${id}`,
      getFileIdFromRequest: (_req, lastPath) => lastPath,
      onUploadCreate: async (req, upload) => {
        try {
          of(req).target.checkCreate(upload.metadata);
        } catch (err) {
          throw tusError(err);
        }
        return {};
      },
      onUploadFinish: async (req, upload) => {
        try {
          const meta = await this.finish(datastore, of(req), upload);
          return { status_code: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(meta) };
        } catch (err) {
          throw tusError(err);
        }
      },
    });
    return { server, datastore };
  }

  /** Deletes expired unfinished uploads (a minute after start, then every hour). */
  private async sweep(): Promise<void> {
    await this.tus()
      .then(({ server }) => server.cleanUpExpiredUploads())
      .catch((err: unknown) => this.logger.warn({ err: (err as Error).message }, 'tus clean-up failed'));
  }

  /** Hands a finished upload to its target; the tus copy is removed either way. */
  private async finish(datastore: TusStore, p: Pending, upload: Upload) {
    try {
      return await p.target.finish(await datastore.read(upload.id), upload);
    } finally {
      // tus's S3 store aborts the (completed) multipart upload before deleting its objects, and S3
      // refuses that abort: the objects (`<upload>`, `<upload>.info`) are then deleted here.
      await datastore.remove(upload.id).catch(() => (this.blobs.store.kind === 's3' ? this.blobs.store.deletePrefix(upload.id) : undefined));
    }
  }

  /**
   * Serves one tus request for a blob property (`upload`: the id after `/tus/`, if any).
   * @throws HttpError 401/403/404 before the tus server sees the request (the rule, the row, an
   *   upload id of another row or field, or not of the generated form); 400 from the creation for a
   *   `filetype` that is not a media type
   */
  async handle(ctx: RequestContext, target: BlobTarget, upload: string | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'OPTIONS') await admitUpload(ctx, target);
    await this.serve(blobTusTarget(ctx, target, this.blobs), upload, req, res, `this ${target.field.name}`);
  }

  /**
   * Serves one tus request for an admitted `target` (`upload`: the id after `/tus/`, if any; `what`
   * names the target in a 404).
   * @throws HttpError NOT_FOUND for an upload id of another target or not of the generated form;
   *   METHOD_NOT_ALLOWED for a HEAD or PATCH without an upload id
   */
  async serve(target: TusTarget, upload: string | undefined, req: IncomingMessage, res: ServerResponse, what: string): Promise<void> {
    if (upload !== undefined && !isUploadIdOf(upload, target)) throw new HttpError('NOT_FOUND', `no upload ${JSON.stringify(upload)} for ${what}`);
    if (upload === undefined && req.method !== 'POST' && req.method !== 'OPTIONS') {
      throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} needs an upload: POST …/tus creates one, then HEAD and PATCH …/tus/<upload>`);
    }
    if (upload === undefined && req.method === 'POST') await target.admit?.();
    // A router below a mount point (Express) sees a shortened `url`: the tus server gets the request's own.
    const original = (req as { originalUrl?: string }).originalUrl;
    if (original !== undefined) req.url = original;
    const path = (req.url ?? '').split('?')[0];
    this.pending.set(req, { target, base: upload === undefined ? path : path.slice(0, path.lastIndexOf('/')) });
    const { server } = await this.tus();
    await server.handle(req, res);
  }

  close(): void {
    clearInterval(this.sweeper);
    clearTimeout(this.firstSweep);
    this.locker?.close();
  }
}
