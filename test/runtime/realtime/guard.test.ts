/**
 * The guard at the edge of real-time (runtime/realtime/guard.ts, issue 20 §1): close reasons are cut by
 * bytes at a character boundary, `contain` turns throws and rejections into one `onError` call (itself
 * contained), and the URL of an upgrade request whose path starts with `//` is read as a path.
 */
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { closeReason, contain, describe as quote, upgradeUrl, MAX_CLOSE_REASON_BYTES } from '../../../dist/runtime/realtime/guard.js';

describe('closeReason', () => {
  it('keeps a short reason and cuts a long one to 123 bytes without splitting a character', () => {
    expect(closeReason('bye')).toBe('bye');
    for (const ch of ['é', '中', '😀', 'a']) {
      const cut = closeReason(`unknown message type "${ch.repeat(200)}"`);
      expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
      expect(Buffer.byteLength(cut)).toBeGreaterThan(MAX_CLOSE_REASON_BYTES - 4);
      expect(cut).not.toContain('\ufffd');
      expect(cut.startsWith('unknown message type "')).toBe(true);
    }
  });
});

describe('contain', () => {
  it('hands a throw and a rejection to onError once each, and survives an onError that throws', async () => {
    const seen: unknown[] = [];
    contain(
      () => {
        throw new Error('sync');
      },
      (err) => seen.push((err as Error).message),
    );
    contain(
      () => Promise.reject(new Error('async')),
      (err) => seen.push((err as Error).message),
    );
    contain(
      () => {
        throw new Error('again');
      },
      () => {
        throw new Error('onError fails too');
      },
    );
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['sync', 'async']);
  });
});

describe('upgradeUrl and describe', () => {
  it('reads //, //% and //[ as paths; quotes any client value in at most 101 characters', () => {
    for (const path of ['//', '//%', '//[', '//x/api/_rt/client?access_token=%']) {
      expect(upgradeUrl({ url: path } as IncomingMessage)?.pathname.startsWith('//')).toBe(true);
    }
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(quote(deep)).toBe('an array');
    expect(quote('é'.repeat(500))).toHaveLength(101);
  });
});
