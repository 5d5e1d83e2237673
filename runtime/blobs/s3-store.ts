/**
 * @module Blobs in an S3-compatible bucket (issue "blobs"): `@aws-sdk/client-s3` for reads and
 * deletes, `@aws-sdk/lib-storage` for streamed multipart uploads (parts of 8 MiB, two in flight, so
 * memory stays bounded whatever the file size). A failed upload is aborted, which discards its parts.
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import type { S3Settings } from '../contract/settings.js';
import { BlobMissingError, type BlobStore, type ByteRange, type StoredObject } from './store.js';

const PART_BYTES = 8 * 1024 * 1024;
/** Multipart uploads older than this are taken for leftovers of a crash and aborted at start. */
const STALE_UPLOAD_MS = 24 * 60 * 60 * 1000;

/** The S3 client configuration of a bucket's settings (also used by the resumable-upload store). */
export function s3ClientConfig(s: S3Settings): S3ClientConfig {
  return {
    region: s.region ?? 'us-east-1',
    // Other S3 servers (MinIO, R2, s3rver) may not read the SDK's default aws-chunked checksum
    // framing: against an explicit endpoint, checksums are sent only where the API requires them.
    ...(s.endpoint && { endpoint: s.endpoint, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }),
    forcePathStyle: s.forcePathStyle ?? s.endpoint !== undefined,
    ...(s.accessKeyId && s.secretAccessKey && { credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey } }),
  };
}

const missing = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};

/** Blobs as objects of one bucket, keyed exactly as the local store's paths. */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  readonly bucket: string;

  constructor(readonly settings: S3Settings) {
    this.client = new S3Client(s3ClientConfig(settings));
    this.bucket = settings.bucket;
  }

  async put(key: string, body: Readable, contentType: string): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: contentType },
      partSize: PART_BYTES,
      queueSize: 2,
      leavePartsOnError: false,
    });
    // lib-storage reads the body until it ends; a body that fails must fail the upload too.
    const failed = new Promise<never>((_, fail) => body.once('error', fail));
    failed.catch(() => undefined);
    try {
      await Promise.race([upload.done(), failed]);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      throw err;
    }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, ...(range && { Range: `bytes=${range.start}-${range.end}` }) }));
      return out.Body as Readable;
    } catch (err) {
      if (missing(err)) throw new BlobMissingError(key);
      throw err;
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length > 0) await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, modifiedMs: o.LastModified?.getTime() ?? Date.now() };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Aborts multipart uploads a crash left unfinished (older than a day, so other instances' uploads are safe). */
  async cleanUp(): Promise<void> {
    const page = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket }));
    for (const u of page.Uploads ?? []) {
      if (!u.Initiated || Date.now() - u.Initiated.getTime() < STALE_UPLOAD_MS) continue;
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }));
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
