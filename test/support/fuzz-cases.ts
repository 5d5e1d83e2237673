/**
 * @module Generators of hostile real-time input for realtime-fuzz.test.ts (issue 20 §1): upgrade
 * requests (paths, percent escapes, headers, subprotocols, tokens), Web PubSub frames (invalid JSON,
 * wrong types, huge and non-ASCII strings, deep nesting, binary, out-of-range numbers) and hub frames
 * (handshakes, invocations, partial records). Everything is drawn from a `Prng`: one seed, one run.
 */
import { RS, upgradeRequest, type Prng } from './hostile.js';

/** A piece of JSON text inserted as is (numbers JSON.stringify cannot write: `1e400`, `-0`, `1.5e-400`). */
class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of `value`, with `RawJson` pieces inserted verbatim. */
export function json(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(json).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}:${json(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const NUMBERS = ['1e400', '-1e400', '-0', '1.5e-400', '9007199254740993', '-1', '0.5', '1e21', '123456789012345678901234567890'];

/** A JSON value: scalars, out-of-range numbers, huge and non-ASCII strings, deep nesting. */
export function value(r: Prng, maxBytes: number, depth = 0): unknown {
  switch (r.int(depth > 2 ? 6 : 9)) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return new RawJson(r.pick(NUMBERS));
    case 3:
      return r.int(1000) - 500;
    case 4:
      return r.string(r.int(40));
    case 5:
      return r.chance(0.1) ? 'é'.repeat(Math.floor((maxBytes * r.pick([0.3, 0.49, 0.51, 1.1])) / 2)) : r.string(r.int(200));
    case 6:
      return Array.from({ length: r.int(5) }, () => value(r, maxBytes, depth + 1));
    case 7:
      return Object.fromEntries(Array.from({ length: r.int(5) }, () => [r.string(r.int(8)), value(r, maxBytes, depth + 1)]));
    default: {
      // Nesting deeper than any recursion can follow, within the frame limit.
      const n = r.pick([63, 64, 65, 1000, Math.max(1, Math.floor(maxBytes / 2) - 100)]);
      return new RawJson(r.chance(0.5) ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n));
    }
  }
}

/** A frame to send: text or binary. */
export interface Frame {
  data: string | Buffer;
  binary: boolean;
}

const WPS_TYPES = ['joinGroup', 'leaveGroup', 'sendToGroup', 'event', 'ping', 'sequenceAck', 'teleport', 'JOINGROUP', ''];

/** One Web PubSub client frame. */
export function wpsFrame(r: Prng, maxBytes: number): Frame {
  const kind = r.int(10);
  if (kind === 0) return { data: Buffer.from(r.string(r.int(100))), binary: true };
  if (kind === 1) return { data: r.pick(['', '{', '{"type":', '[]', 'null', '"x"', '1e400', '{"type":"ping"', '\u0000', r.string(50)]), binary: false };
  if (kind === 2) return { data: json(value(r, maxBytes)), binary: false };
  const frame: Record<string, unknown> = {
    type: r.chance(0.8) ? r.pick(WPS_TYPES) : r.chance(0.5) ? 'é'.repeat(60) : value(r, maxBytes, 2),
    group: r.chance(0.7) ? r.pick(['shop:chat', 'shop:fuzz', 'shop:Product', 'shop:a:b', 'shop:', 'other:x', '']) : value(r, maxBytes, 2),
    ackId: r.chance(0.5) ? undefined : r.chance(0.6) ? r.int(100) : new RawJson(r.pick([...NUMBERS, '"1"', 'null', '[]'])),
    dataType: r.chance(0.7) ? r.pick(['json', 'text', 'binary']) : value(r, maxBytes, 2),
    data: value(r, maxBytes),
    noEcho: r.chance(0.5) ? undefined : value(r, maxBytes, 2),
    sequenceId: r.chance(0.5) ? undefined : new RawJson(r.pick([...NUMBERS, '3', '"3"'])),
    event: r.chance(0.5) ? undefined : value(r, maxBytes, 2),
  };
  return { data: json(frame), binary: false };
}

/** The hub's first frame: a valid handshake most of the time, else a malformed one. */
export function hubHandshake(r: Prng): string | null {
  if (r.chance(0.8)) return null;
  return (
    r.pick([
      '{"protocol":"json","version":1}',
      '{"protocol":"messagepack","version":1}',
      '{"protocol":"json","version":2}',
      `{"protocol":${json(value(r, 1000, 2))},"version":1}`,
      '{"protocol":"json"',
      '[]',
      r.string(30),
    ]) + (r.chance(0.8) ? RS : '')
  );
}

/** One hub frame after the handshake: one or more records, sometimes left without their 0x1E. */
export function hubFrame(r: Prng, maxBytes: number): Frame {
  if (r.chance(0.05)) return { data: Buffer.from([0x1e, 0x00, 0xff]), binary: true };
  const records = Array.from({ length: 1 + r.int(3) }, () => {
    if (r.chance(0.1)) return r.pick(['{', '', 'null', '[1]', r.string(20)]);
    return json({
      type: r.chance(0.7) ? r.pick([1, 1, 1, 4, 5, 6, 8, 99]) : r.chance(0.5) ? 'é'.repeat(60) : value(r, maxBytes, 2),
      invocationId: r.chance(0.5) ? r.string(r.int(10)) : value(r, maxBytes, 2),
      target: r.chance(0.7) ? r.pick(['join', 'leave', 'send', 'SEND', 'stream', '']) : value(r, maxBytes, 2),
      arguments: r.chance(0.7) ? [r.pick(['fuzz', 'a:b', 'Product', '', 'é'.repeat(300)]), value(r, maxBytes)] : value(r, maxBytes, 1),
    });
  });
  const text = records.join(RS) + (r.chance(0.9) ? RS : '');
  return { data: text, binary: false };
}

/** `encodeURIComponent` that takes lone surrogates too (as the bytes of U+D800, which servers must also survive). */
const encode = (s: string): string => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};

/** One raw upgrade request (`tokens` are real one-time or hub tokens, `liveIds` connection ids now open). */
export function upgrade(r: Prng, tokens: string[], liveIds: string[]): string {
  const paths = ['/api/_rt/client', '/api/_rt/signalr', '/api/_rt/hub', '/api/_rt/', '//', '//%', '//[', '/api//_rt/client', '/api/_rt/client/'];
  if (r.chance(0.2)) {
    // A recovery of a live connection with a forged token (right length in characters, not in bytes, …).
    const token = r.pick(['é' + 'a'.repeat(31), 'a'.repeat(32), '', '%', encode(r.string(32)), tokens.length ? r.pick(tokens) : 'x']);
    const id = liveIds.length && r.chance(0.8) ? r.pick(liveIds) : encode(r.string(r.int(20)));
    return upgradeRequest(`/api/_rt/client?awps_connection_id=${id}&awps_reconnection_token=${r.chance(0.5) ? encode(token) : token}`, {
      'Sec-WebSocket-Protocol': 'json.reliable.webpubsub.azure.v1',
    });
  }
  let path = r.chance(0.8)
    ? r.pick(paths)
    : '/' +
      encode(r.string(r.int(30)))
        .replace(/%2F/g, '/')
        .replace(/%25/g, '%');
  const escape = () => r.pick(['%', '%zz', '%C3', '%00', '%E9', encode(r.string(r.int(30)))]);
  const params: string[] = [];
  for (const name of ['access_token', 'awps_connection_id', 'awps_reconnection_token', 'id']) {
    if (!r.chance(0.4)) continue;
    const v = r.pick([
      escape(),
      r.chance(0.5) && tokens.length ? r.pick(tokens) : 'x',
      liveIds.length ? r.pick(liveIds) : 'i.x',
      'é'.repeat(16) + 'a'.repeat(16),
    ]);
    params.push(`${name}=${v}`);
  }
  if (params.length || r.chance(0.1)) path += '?' + params.join('&');
  const header = () =>
    r.chance(0.3)
      ? null
      : r.pick(['', ',', 'json.webpubsub.azure.v1', 'json.reliable.webpubsub.azure.v1, chat', 'é', r.string(20).replace(/[^ -~\u00e9]/g, '')]);
  return upgradeRequest(path, {
    'Sec-WebSocket-Protocol': header(),
    'Sec-WebSocket-Key': r.chance(0.8) ? 'dGhlIHNhbXBsZSBub25jZQ==' : r.pick([null, '', 'short', 'é']),
    'Sec-WebSocket-Version': r.chance(0.8) ? '13' : r.pick([null, '8', 'x']),
    Authorization: r.chance(0.8) ? null : r.pick(['Bearer', 'Bearer x', `Bearer ${tokens[0] ?? ''}`, 'Basic é']),
    'X-Request-Id': r.chance(0.9) ? null : 'r'.repeat(r.pick([1, 64, 5000])),
  });
}

/**
 * A malformed body of the agent's `approval` frame (issue 34 §1) as a JSON text: `reqId` of the wrong
 * type or one of `liveReqIds`, `approved` never a boolean (so no frame of this generator can approve
 * or deny), `note` of any type, extra keys. The agent must ignore it (and log why), never crash.
 */
export function approvalFrame(r: Prng, maxBytes: number, liveReqIds: string[]): string {
  const frame: Record<string, unknown> = {
    type: 'approval',
    reqId: r.chance(0.4) && liveReqIds.length ? r.pick(liveReqIds) : r.chance(0.5) ? r.string(r.int(40)) : value(r, maxBytes, 2),
    approved: r.chance(0.2) ? undefined : r.pick<unknown>(['true', 'false', 1, 0, null, [], {}, 'yes', new RawJson('1e400')]),
    note: r.chance(0.5) ? undefined : value(r, maxBytes, 2),
  };
  if (r.chance(0.3)) frame[r.string(r.int(8))] = value(r, maxBytes, 2);
  return json(frame);
}
