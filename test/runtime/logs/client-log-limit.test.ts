/**
 * The limits of `POST /api/_log` per identity (runtime/logs/client-log-limit.ts, svc.json
 * `logs.clientLog`), the text the log store can keep (`storableText`), and the request id a client
 * may not choose (`requestIdOf`: only a trusted proxy's `x-request-id` is kept). A clock of the test's
 * own, no timing.
 */
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { ClientLogLimiter, limitsClientLog } from '../../../dist/runtime/logs/client-log-limit.js';
import { storableText } from '../../../dist/runtime/logs/log-store.js';
import { requestIdOf } from '../../../dist/runtime/logs/request-log.js';
import { trustedPeerOf } from '../../../dist/runtime/auth/client-address.js';
import { CLIENT_LOG_DEFAULTS, CLIENT_LOG_SUGGESTED_LIMITS } from '../../../dist/runtime/contract/settings.js';

describe('ClientLogLimiter', () => {
  it('admits the per-minute amounts, then answers the seconds until a post fits', () => {
    let now = 0;
    const limiter = new ClientLogLimiter({ requestsPerMinute: 3, eventsPerMinute: 1000, charactersPerMinute: 100_000 }, () => now);
    expect(limiter.take('u', { events: 600, characters: 10 })).toBe(0);
    // 400 events left: 600 more need 200 more events, refilled at 1000 per minute: 12 s.
    expect(limiter.take('u', { events: 600, characters: 10 })).toBe(12);
    now = 12_000;
    expect(limiter.take('u', { events: 600, characters: 10 })).toBe(0);
    // No events left now: even one waits (60 ms, answered as 1 s).
    expect(limiter.take('u', { events: 1, characters: 1 })).toBe(1);
    // Posts: 3 per minute, whatever they hold.
    const posts = new ClientLogLimiter({ requestsPerMinute: 3, eventsPerMinute: 1000, charactersPerMinute: 100_000 }, () => now);
    expect([1, 2, 3, 4].map(() => posts.take('w', { events: 1, characters: 1 }))).toEqual([0, 0, 0, 20]);
    // Another identity has its own buckets.
    expect(limiter.take('v', { events: 1000, characters: 100_000 })).toBe(0);
    expect(limiter.take('v', { events: 0, characters: 1 })).toBe(1);
  });

  it('admits a post bigger than a whole minute only on a full bucket, and then owes it', () => {
    let now = 0;
    const limiter = new ClientLogLimiter({ requestsPerMinute: 60, eventsPerMinute: 1000, charactersPerMinute: 10_000 }, () => now);
    expect(limiter.take('u', { events: 1, characters: 30_000 })).toBe(0);
    // 20,000 characters owed plus one: refilled at 10,000 per minute.
    expect(limiter.take('u', { events: 1, characters: 1 })).toBe(121);
    now = 121_000;
    expect(limiter.take('u', { events: 1, characters: 1 })).toBe(0);
  });

  it('limits nothing by default (SPEC §8), and the suggested limits admit one full batch and refuse the third in a row', () => {
    expect(limitsClientLog(CLIENT_LOG_DEFAULTS)).toBe(false);
    const unlimited = new ClientLogLimiter(CLIENT_LOG_DEFAULTS, () => 0);
    const batch = { events: 1000, characters: 100_000 };
    expect(Array.from({ length: 50 }, () => unlimited.take('u', batch)).every((w) => w === 0)).toBe(true);
    expect(limitsClientLog({ eventsPerMinute: 1000 })).toBe(true);
    const limiter = new ClientLogLimiter(CLIENT_LOG_SUGGESTED_LIMITS, () => 0);
    expect([limiter.take('u', batch), limiter.take('u', batch), limiter.take('u', batch)]).toEqual([0, 0, 30]);
  });

  it('limits only the measures that are set', () => {
    let now = 0;
    const limiter = new ClientLogLimiter({ requestsPerMinute: 2 }, () => now);
    const huge = { events: 1_000_000, characters: 1e9 };
    expect([limiter.take('u', huge), limiter.take('u', huge), limiter.take('u', huge)]).toEqual([0, 0, 30]);
    now = 30_000;
    expect(limiter.take('u', huge)).toBe(0);
  });
});

describe('storableText', () => {
  it('replaces lone surrogates and NUL with U+FFFD and keeps pairs and other text', () => {
    expect(storableText('a\ud800b')).toBe('a\uFFFDb');
    expect(storableText('\udc00')).toBe('\uFFFD');
    expect(storableText('x\ud800')).toBe('x\uFFFD');
    expect(storableText('nul\u0000')).toBe('nul\uFFFD');
    expect(storableText('\udc00\ud800')).toBe('\uFFFD\uFFFD');
    expect(storableText('emoji \ud83d\ude00 ok')).toBe('emoji \ud83d\ude00 ok');
    expect(storableText('plain')).toBe('plain');
  });
});

describe('requestIdOf', () => {
  const req = (remoteAddress: string, id?: string) =>
    ({ socket: { remoteAddress }, headers: id === undefined ? {} : { 'x-request-id': id } }) as unknown as IncomingMessage;

  it('keeps the x-request-id of a trusted proxy only, cut to 64 characters', () => {
    const trusted = trustedPeerOf(['10.0.0.0/8']);
    expect(requestIdOf(req('10.1.2.3', 'from-the-proxy'), trusted)).toEqual({ reqId: 'from-the-proxy' });
    expect(requestIdOf(req('::ffff:10.1.2.3', 'x'.repeat(80)), trusted).reqId).toBe('x'.repeat(64));
    const untrusted = requestIdOf(req('192.168.1.9', 'someone-elses-id'), trusted);
    expect(untrusted.reqId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(untrusted.clientReqId).toBe('someone-elses-id');
  });

  it('trusts nobody without trustedProxies, and makes an id when none is sent', () => {
    const none = trustedPeerOf([]);
    expect(requestIdOf(req('127.0.0.1', 'mine'), none).reqId).not.toBe('mine');
    expect(requestIdOf(req('127.0.0.1', 'mine')).reqId).not.toBe('mine');
    const made = requestIdOf(req('10.0.0.1'), trustedPeerOf(['10.0.0.1']));
    expect(made.reqId).toHaveLength(36);
    expect(made.clientReqId).toBeUndefined();
  });
});
