/**
 * @module Blob test helpers: multipart uploads with Node's own `fetch`/`FormData`, images made with
 * sharp, the files a store holds (a local folder, or an s3rver bucket over the real S3 protocol), and
 * s3rver itself started on a free loopback port.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, type Dirent } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import sharp from 'sharp';
import S3rver from 's3rver';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** `size` pseudo-random bytes (deterministic for a seed). */
export function bytesOf(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** A JPEG of `width` × `height`. */
export const jpeg = (width: number, height: number): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 80, b: 20 } } })
    .jpeg()
    .toBuffer();

/** POSTs one file part (named `part`, default `file`) as multipart/form-data. */
export async function uploadFile(
  url: string,
  bytes: Uint8Array,
  options: { name?: string; type?: string; part?: string; headers?: Record<string, string>; extra?: (form: FormData) => void } = {},
): Promise<{ status: number; json: any; headers: Headers }> {
  const form = new FormData();
  form.append(options.part ?? 'file', new Blob([bytes], { type: options.type ?? 'application/octet-stream' }), options.name ?? 'file.bin');
  options.extra?.(form);
  const r = await fetch(url, { method: 'POST', body: form, headers: options.headers });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined, headers: r.headers };
}

/** Every file under a local store's root (relative paths, sorted), temporary and tus folders left out unless asked. */
export function localFiles(root: string, options: { all?: boolean } = {}): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    // The server may be deleting files while this walks: an entry listed a moment ago can be gone, so
    // the entries' kinds come with the listing (no stat after it) and a folder that vanished is empty.
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(root, p));
    }
  };
  walk(root);
  return out.filter((f) => options.all || !/^\.(tmp|tus)\//.test(f)).sort();
}

/** A running s3rver: an S3-protocol server on loopback with one bucket. */
export interface S3Server {
  endpoint: string;
  bucket: string;
  /** The environment `svc serve` needs to use it. */
  env: Record<string, string>;
  /** Every key in the bucket, sorted. */
  keys(prefix?: string): Promise<string[]>;
  /** Writes an object over the S3 protocol (what a crash between storing and committing leaves). */
  put(key: string, body: Uint8Array | string): Promise<void>;
  /** Makes an object look written `ageMs` ago (s3rver answers LastModified from its file's time). */
  age(key: string, ageMs: number): void;
  close(): Promise<void>;
}

/**
 * ListParts (`GET /<bucket>/<key>?uploadId=…`), which s3rver 3.7 does not implement and tus's S3
 * store calls to learn an upload's offset: answered from s3rver's own part files, in the S3 XML form.
 */
function listParts(server: S3rver, bucket: string) {
  return async (
    ctx: { method: string; path: string; query: Record<string, string>; status: number; type: string; body: string },
    next: () => Promise<void>,
  ) => {
    const uploadId = ctx.query.uploadId;
    if (ctx.method !== 'GET' || !uploadId || ctx.query.partNumber) return next();
    const dir = join(server.store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
      return;
    }
    const parts = names
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .sort((a, b) => a - b)
      .flatMap((n) => {
        let size: number;
        let md5: string;
        try {
          size = statSync(join(dir, String(n))).size;
          md5 = readFileSync(join(dir, `${n}.md5`), 'utf8');
        } catch (err) {
          // A part listed, then gone or not complete yet: the upload was completed or aborted, or the part is mid-write.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
          throw err;
        }
        return `<Part><PartNumber>${n}</PartNumber><LastModified>${new Date().toISOString()}</LastModified><ETag>"${md5}"</ETag><Size>${size}</Size></Part>`;
      });
    const key = ctx.path.split('/').slice(2).join('/');
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${bucket}</Bucket><Key>${key}</Key><UploadId>${uploadId}</UploadId><MaxParts>10000</MaxParts><IsTruncated>false</IsTruncated>${parts.join('')}</ListPartsResult>`;
  };
}

/** Starts s3rver with a fresh folder and bucket `svc-test` (plus ListParts, see `listParts`). */
export async function startS3(): Promise<S3Server> {
  const dir = mkdtempSync(join(tmpdir(), 's3rver-'));
  const bucket = 'svc-test';
  // Port 0: the port it listens on is the one the system gives it (no port picked, released and bound later).
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: bucket, configs: [] }] });
  server.middleware.unshift(listParts(server, bucket));
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  return {
    endpoint,
    bucket,
    env: { SVC_S3_BUCKET: bucket, SVC_S3_ENDPOINT: endpoint, SVC_S3_ACCESS_KEY_ID: 'S3RVER', SVC_S3_SECRET_ACCESS_KEY: 'S3RVER' },
    async keys(prefix) {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        out.push(...(page.Contents ?? []).map((o) => o.Key!));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort();
    },
    async put(key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    age(key, ageMs) {
      const then = new Date(Date.now() - ageMs);
      utimesSync(server.store.getResourcePath(bucket, key, 'object'), then, then);
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
