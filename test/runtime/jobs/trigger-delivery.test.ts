/**
 * Trigger delivery (DESIGN §12): a captured `svc_trigger` job becomes the event in the API's shape
 * (booleans, decimals, date-times as a GET gives them) and goes to the trigger's function through
 * `runFunction`, or is POSTed to a real webhook receiver on loopback whose every request verifies with
 * `standardwebhooks`' `Webhook.verify` (a tampered body does not); a 500, an unreachable receiver, an
 * unset secret or a failing function make `deliverTrigger` throw (the engine retries).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { deliverTrigger } from '../../../dist/runtime/jobs/trigger-delivery.js';
import { createLogger } from '../../../dist/runtime/log.js';

const SECRET = 'whsec_' + Buffer.from('a-test-signing-secret-of-32-bytes!').toString('base64');
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let status = 204;
let server: Server;
let url = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const collection = {
  name: 'Order',
  properties: [
    { name: 'total', type: 'decimal' },
    { name: 'paid', type: 'boolean' },
    { name: 'shipped', type: 'date-time' },
  ],
  policies: [],
  access: [],
  children: [],
};
const manifest = {
  collections: [collection],
  triggers: [
    { name: 'hook', collection: 'Order', on: ['update'], webhook: { url: '${env.HOOK_URL}', secret: '${secrets.HOOK}' }, maxAttempts: 10 },
    { name: 'fn', collection: 'Order', on: ['update'], function: 'sendReceipt', maxAttempts: 10 },
  ],
} as never;

const job = (trigger: string) =>
  ({
    id: 'j1',
    task: 'svc_trigger',
    state: 'running',
    key: null,
    runAt: new Date(),
    attempts: 2,
    attempt: 2,
    maxAttempts: 10,
    lastError: null,
    createdAt: new Date(),
    payload: {
      trigger,
      event: {
        id: '0190a7c2-0000-7000-8000-000000000001',
        op: 'update',
        collection: 'Order',
        rowId: 'r1',
        // As SQLite's json_object stores them: booleans 0/1, date-times as text.
        before: { id: 'r1', total: 10, paid: 0, shipped: null, createdBy: 'u1', createdAt: '2026-11-28T08:00:00.000Z', updatedAt: '2026-11-28T08:00:00.000Z' },
        after: {
          id: 'r1',
          total: 12.5,
          paid: 1,
          shipped: '2026-11-28T09:00:00.000Z',
          createdBy: 'u1',
          createdAt: '2026-11-28T08:00:00.000Z',
          updatedAt: '2026-11-28T08:05:00.000Z',
        },
        at: '2026-11-28T08:05:00.000Z',
        callerId: 'u2',
      },
    },
  }) as never;

const deps = (over: object = {}) => ({
  manifest,
  runFunction: async () => {},
  secrets: { HOOK: SECRET },
  env: { HOOK_URL: url },
  logger: createLogger({ test: 'trigger-delivery' }),
  ...over,
});

describe('webhook delivery', () => {
  test('POSTs the event in the API shape, signed so that Webhook.verify accepts it', async () => {
    received.length = 0;
    status = 204;
    await deliverTrigger(job('hook'), deps());
    expect(received).toHaveLength(1);
    const { headers, body } = received[0];
    expect(headers['webhook-id']).toBe('0190a7c2-0000-7000-8000-000000000001');
    const verified = new Webhook(SECRET).verify(body, headers as Record<string, string>) as Record<string, unknown>;
    expect(verified).toMatchObject({
      id: '0190a7c2-0000-7000-8000-000000000001',
      trigger: 'hook',
      op: 'update',
      collection: 'Order',
      rowId: 'r1',
      callerId: 'u2',
      attempt: 2,
      before: { id: 'r1', total: 10, paid: false, shipped: null, createdBy: 'u1' },
      after: { id: 'r1', total: 12.5, paid: true, shipped: '2026-11-28T09:00:00.000Z', createdBy: 'u1' },
    });
    // A tampered body does not verify.
    expect(() => new Webhook(SECRET).verify(body.replace('12.5', '99'), headers as Record<string, string>)).toThrow();
  });

  test('a 500 answer throws (the engine retries)', async () => {
    status = 500;
    await expect(deliverTrigger(job('hook'), deps())).rejects.toThrow(/answered 500/);
    status = 204;
  });

  test('an unreachable receiver and an unset secret throw', async () => {
    await expect(deliverTrigger(job('hook'), deps({ env: { HOOK_URL: 'http://127.0.0.1:1/x' } }))).rejects.toThrow(/failed/);
    await expect(deliverTrigger(job('hook'), deps({ secrets: {} }))).rejects.toThrow(/SVC_SECRET_HOOK/);
  });
});

describe('function delivery', () => {
  test('runFunction gets the decoded event, the job and the caller; its failure throws', async () => {
    const calls: unknown[] = [];
    await deliverTrigger(job('fn'), deps({ runFunction: async (name: string, input: unknown) => void calls.push({ name, input }) }));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      name: 'sendReceipt',
      input: { callerId: 'u2', event: { trigger: 'fn', attempt: 2, after: { paid: true } }, job: { id: 'j1' } },
    });
    const failing = deps({ runFunction: () => Promise.reject(new Error('boom')) });
    await expect(deliverTrigger(job('fn'), failing)).rejects.toThrow('boom');
  });

  test('a trigger that no longer exists throws', async () => {
    await expect(deliverTrigger(job('gone'), deps())).rejects.toThrow(/no longer exists/);
  });
});
