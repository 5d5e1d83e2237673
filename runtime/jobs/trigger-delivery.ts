/**
 * @module Delivery of a captured trigger event (DESIGN §12): the `svc_trigger` job's raw rows become
 * the API's shape (what a GET by the app answers: `row-codec.ts`), the event
 * `{ id, trigger, op, collection, rowId, before, after, at, callerId, attempt }` goes to the trigger's
 * type-2 function (through the runtime's `runFunction`) or is POSTed to its webhook, signed per the
 * Standard Webhooks spec. Any failure throws, and the engine retries with back-off.
 */
import { Webhook } from 'standardwebhooks';
import type { AppManifest, Collection, Trigger } from '../manifest.js';
import type { TriggerEvent } from '../functions/context.js';
import { columnDecoder, type Item } from '../data/row-codec.js';
import { resolveRefs } from '../secret-refs.js';
import type { Logger } from '../log.js';
import type { JobRun, TriggerJobPayload } from './engine.js';

/** Longest wait for a webhook's answer, in milliseconds (DESIGN §12). */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** What `deliverTrigger` needs from the runtime. */
export interface TriggerDeliveryDeps {
  manifest: AppManifest;
  /** Runs a type-2 function with `ctx.event` and app rights (`JobsService.runFunction`); throws when the run fails. */
  runFunction(name: string, input: { event: TriggerEvent; job: JobRun; callerId: string | null }): Promise<void>;
  /** Secrets by name, for `${secrets.NAME}` (else `SVC_SECRET_NAME` of `env`). */
  secrets: Record<string, string>;
  /** For `${env.NAME}` references. */
  env: NodeJS.ProcessEnv;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** The run's signal (the server stops): a webhook call in flight is abandoned. */
  signal?: AbortSignal;
  logger: Logger;
}

/**
 * Delivers one `svc_trigger` job.
 * @throws Error when the trigger or its collection no longer exists, a reference is unset, the function
 *   throws, or the webhook answers non-2xx, times out ({@link WEBHOOK_TIMEOUT_MS}) or cannot be reached
 * Source: DESIGN §12 ("the event", capture and delivery).
 */
export async function deliverTrigger(job: JobRun, deps: TriggerDeliveryDeps): Promise<void> {
  const payload = job.payload as TriggerJobPayload;
  const trigger = deps.manifest.triggers?.find((t) => t.name === payload.trigger);
  if (!trigger) throw new Error(`trigger ${payload.trigger} no longer exists`);
  const collection = deps.manifest.collections.find((c) => c.name === payload.event.collection);
  if (!collection) throw new Error(`collection ${payload.event.collection} of trigger ${trigger.name} no longer exists`);
  const event = triggerEvent(collection, payload, job.attempt);
  if (trigger.function !== undefined) {
    await deps.runFunction(trigger.function, { event, job, callerId: event.callerId });
    return;
  }
  await postWebhook(trigger, event, deps);
}

/**
 * The event of a captured payload, its rows decoded into the API's shape (`id`, properties, system
 * fields; booleans, dates, decimals, JSON and blob metadata as a GET gives them).
 */
export function triggerEvent(collection: Collection, payload: TriggerJobPayload, attempt: number): TriggerEvent {
  const e = payload.event;
  return {
    id: e.id,
    trigger: payload.trigger,
    op: e.op,
    collection: e.collection,
    rowId: String(e.rowId),
    before: e.before ? decodeCaptured(collection, e.before) : null,
    after: e.after ? decodeCaptured(collection, e.after) : null,
    at: e.at,
    callerId: e.callerId ?? null,
    attempt,
  };
}

/** A raw captured row (`to_jsonb` / `json_object`) → an item; columns the collection no longer has are dropped. */
function decodeCaptured(collection: Collection, raw: Record<string, unknown>): Item {
  const item: Item = {};
  const names = ['id', ...collection.properties.map((p) => p.name), 'createdAt', 'updatedAt', 'createdBy'];
  for (const name of names) {
    if (!(name in raw)) continue;
    // Blob columns arrive as JSON text (SQLite) or JSON (PostgreSQL): the blob decoder reads both.
    item[name] = columnDecoder(collection, name)(raw[name]);
  }
  return item;
}

/** POSTs the event to the trigger's webhook with Standard Webhooks headers; throws on anything but 2xx. */
async function postWebhook(trigger: Trigger, event: TriggerEvent, deps: TriggerDeliveryDeps): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...deps.env };
  for (const [name, value] of Object.entries(deps.secrets)) env[`SVC_SECRET_${name}`] = value;
  const where = `triggers/${trigger.name}.json webhook`;
  const url = resolveRefs(trigger.webhook!.url, env, `${where}.url`);
  const secret = resolveRefs(trigger.webhook!.secret, env, `${where}.secret`);
  const body = JSON.stringify(event);
  const timestamp = new Date();
  const signature = new Webhook(secret).sign(event.id, timestamp, body);
  const doFetch = deps.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': event.id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      signal: deps.signal ? AbortSignal.any([deps.signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]) : AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      redirect: 'manual',
    });
  } catch (err) {
    throw new Error(`webhook of trigger ${trigger.name} failed: ${(err as Error).message}`);
  }
  await res.body?.cancel().catch(() => undefined);
  if (res.status < 200 || res.status > 299) {
    deps.logger.warn({ trigger: trigger.name, eventId: event.id, status: res.status }, 'trigger webhook answered non-2xx');
    throw new Error(`webhook of trigger ${trigger.name} answered ${res.status}`);
  }
}
