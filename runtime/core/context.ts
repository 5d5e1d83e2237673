/**
 * @module The request context (STYLE §10.13): everything a handler needs — the app's services, the
 * caller, the request id, the clock and the method — in one object built once per HTTP request,
 * in-process API call or (later) real-time message and agent tool call.
 */
import type { AppManifest } from '../manifest.js';
import type { Database } from '../data/database.js';
import type { Logger } from '../log.js';
import type { ChangeSink } from '../data/changes.js';
import type { Caller } from '../auth/caller.js';
import type { Resource } from './resources.js';
import type { CollectionWriter } from '../data/children.js';
import type { BlobService } from '../blobs/service.js';
import type { ExternalSource } from '../external/forward.js';
import type { Metrics } from '../metrics/metrics.js';
import type { LogStore } from '../logs/log-store.js';

/** The app's long-lived services, built once at start (`createAppRuntime`). */
export interface AppRuntime {
  manifest: AppManifest;
  db: Database;
  logger: Logger;
  /** Where committed change sets go (a no-op until real-time is configured). */
  sink: ChangeSink;
  /** Collections, views and queries by name (the `/api/{name}` routes). */
  resources: ReadonlyMap<string, Resource>;
  /** The input checker of any collection (writes, nested children). */
  writerOf(collection: string): CollectionWriter;
  /** Blob storage (uploads, downloads, releasing the files of removed blobs); absent in bare runtimes. */
  blobs?: BlobService;
  /** External collections by name, with their connections (secrets resolved). */
  externals?: ReadonlyMap<string, ExternalSource>;
  /** The log store of DESIGN §9 (request lines); absent in bare runtimes. */
  logs?: LogStore;
  /** The server's metrics (docs/operations.md); absent when svc.json says `metrics: false` and in bare runtimes. */
  metrics?: Metrics;
}

/** One request's context. */
export interface RequestContext {
  app: AppRuntime;
  caller: Caller;
  /** The `x-request-id` (given or generated), carried into logs and change sets. */
  reqId: string;
  /** The request's clock: `createdAt`/`updatedAt` and `now()` defaults of its writes. */
  now: Date;
  /** Aborted when the request's work must stop (a function that timed out): writes roll back. */
  signal?: AbortSignal;
}

/** Builds a request context; `now` defaults to the current time. */
export function requestContext(app: AppRuntime, init: { caller: Caller; reqId: string; signal?: AbortSignal; now?: Date }): RequestContext {
  return { app, caller: init.caller, reqId: init.reqId, now: init.now ?? new Date(), signal: init.signal };
}
