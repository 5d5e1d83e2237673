/**
 * @module The app's blob service (issue "blobs", SPEC §4.5): the store chosen by svc.json `storage`
 * (a local folder, or an S3-compatible bucket), the limits, and the release of files whose blob left
 * the database. Built once at start (`openBlobService`), reached through `AppRuntime.blobs`.
 */
import { join } from 'node:path';
import { STORAGE_DEFAULTS, type S3Settings, type StorageSettings } from '../contract/settings.js';
import type { Logger } from '../log.js';
import { parseStoredBlob } from './metadata.js';
import { LocalBlobStore, type BlobStore } from './store.js';
import type { BlobUrlSigner } from './signed-url.js';

/**
 * Storage settings in force: svc.json's with defaults, the S3 environment overrides (`SVC_S3_BUCKET`,
 * `SVC_S3_ENDPOINT`, `SVC_S3_REGION`, `SVC_S3_ACCESS_KEY_ID`, `SVC_S3_SECRET_ACCESS_KEY`; the AWS
 * variables when no key is set) and secret references resolved.
 * @throws StartupError (from `resolve`) for a reference to a variable that is not set
 */
export function storageSettings(written: Partial<StorageSettings> | undefined, env: NodeJS.ProcessEnv, resolve: (v: string) => string): StorageSettings {
  const s: StorageSettings = { ...STORAGE_DEFAULTS, ...written };
  const bucket = env.SVC_S3_BUCKET || s.s3?.bucket;
  if (!bucket) return { ...s, s3: undefined };
  const s3: S3Settings = { ...s.s3, bucket };
  if (env.SVC_S3_ENDPOINT) s3.endpoint = env.SVC_S3_ENDPOINT;
  if (env.SVC_S3_REGION) s3.region = env.SVC_S3_REGION;
  // Credentials: SVC_S3_* first, then svc.json, then the standard AWS variables of this environment.
  s3.accessKeyId = env.SVC_S3_ACCESS_KEY_ID || s3.accessKeyId || env.AWS_ACCESS_KEY_ID || undefined;
  s3.secretAccessKey = env.SVC_S3_SECRET_ACCESS_KEY || s3.secretAccessKey || env.AWS_SECRET_ACCESS_KEY || undefined;
  for (const k of ['accessKeyId', 'secretAccessKey', 'endpoint', 'region', 'bucket'] as const) if (s3[k]) s3[k] = resolve(s3[k]);
  return { ...s, s3 };
}

/** Storage, limits and clean-up of the app's blobs. */
export class BlobService {
  constructor(
    readonly store: BlobStore,
    readonly settings: StorageSettings,
    private readonly logger: Logger,
    /** Signs the metadata urls of rows and checks the signature of downloads (DESIGN §11); absent in bare runtimes. */
    readonly signer?: BlobUrlSigner,
  ) {}

  /**
   * Deletes the files of blob values that left the database (rows deleted, blobs cleared or replaced),
   * in the background: a failure is logged, never thrown (the write has committed).
   */
  release(values: unknown[]): void {
    for (const v of values) {
      const stored = parseStoredBlob(v);
      if (!stored) continue;
      this.store.deletePrefix(stored.prefix).catch((err: unknown) => this.logger.warn({ err, prefix: stored.prefix }, 'could not delete blob files'));
    }
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

/**
 * Opens the store of `settings` (the local folder relative to `appDir`, or the bucket) and removes
 * what a crash left behind. `signer` signs blob URLs (`signed-url.ts`).
 * A clean-up that fails (a bucket that cannot be reached yet) is logged; uploads then fail with 500 until it answers.
 */
export async function openBlobService(appDir: string, settings: StorageSettings, logger: Logger, signer?: BlobUrlSigner): Promise<BlobService> {
  // The S3 SDK is loaded only for an app that stores its blobs in S3.
  const store: BlobStore = settings.s3 ? new (await import('./s3-store.js')).S3BlobStore(settings.s3) : new LocalBlobStore(join(appDir, settings.directory));
  await store.cleanUp().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'blob store clean-up at start failed'));
  return new BlobService(store, settings, logger, signer);
}
