/**
 * @module Raw tools of the hostile-client suites (issue 20): a raw HTTP upgrade over TCP, raw Web
 * PubSub and SignalR hub sockets that record their frames and close, and a seeded PRNG whose seed a
 * failing test prints so that the run can be repeated (`SVC_FUZZ_SEED=<seed>`).
 */
import { connect } from 'node:net';
import WebSocket from 'ws';

export const RS = '\u001e';

/** What a raw upgrade request got: the HTTP status (101 when upgraded) and the response head and body. */
export interface UpgradeAnswer {
  status: number;
  text: string;
}

/**
 * Sends `request` (a whole HTTP request head, `\r\n`-terminated) to `port` on loopback and reads the
 * answer's head (and body, when the server closes). Rejects when nothing comes within `timeoutMs`.
 */
export function rawRequest(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<UpgradeAnswer> {
  return new Promise((ok, fail) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(String(request).slice(0, 200))}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      ok({ status: m ? Number(m[1]) : 0, text });
    };
    socket.on('data', (d) => {
      text += d.toString('latin1');
      // An upgraded socket stays open: its head is the whole answer.
      if (/^HTTP\/1\.1 101/.test(text) && text.includes('\r\n\r\n')) done();
    });
    socket.on('close', done);
    socket.on('error', () => {});
    socket.write(request);
  });
}

/** An upgrade request head for `path` with the usual WebSocket headers, overridden or removed (null) by `headers`. */
export function upgradeRequest(path: string, headers: Record<string, string | null> = {}): string {
  const all: Record<string, string | null> = {
    Host: '127.0.0.1',
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version': '13',
    ...headers,
  };
  const lines = Object.entries(all)
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}: ${v}`);
  return `GET ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/** A raw socket with the text frames it got (parsed when JSON) and its close code and reason. */
export interface RawSocket {
  ws: WebSocket;
  frames: any[];
  /** Resolves when the socket closes. */
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens a raw socket on `url` with `protocols` (and extra upgrade `headers`); resolves once open (rejects on an error before). */
export function openRaw(
  url: string,
  protocols: string[] = [],
  split: (text: string) => string[] = (t) => [t],
  headers: Record<string, string> = {},
): Promise<RawSocket> {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, protocols, { headers });
    const frames: any[] = [];
    const closed = new Promise<{ code: number; reason: string }>((done) => ws.once('close', (code, reason) => done({ code, reason: reason.toString() })));
    ws.on('message', (d) => {
      for (const part of split(String(d))) {
        try {
          frames.push(JSON.parse(part));
        } catch {
          frames.push(part);
        }
      }
    });
    ws.on('error', () => {});
    ws.once('open', () => ok({ ws, frames, closed }));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      fail(new Error(`upgrade refused with ${res.statusCode}`));
    });
    ws.once('error', (err) => fail(err));
  });
}

/** The hub messages of a text frame (records end with 0x1E). */
export const hubRecords = (text: string): string[] => text.split(RS).filter((p) => p !== '');

/** A seeded PRNG (mulberry32) with the few draws the fuzz suites need. */
export class Prng {
  private state: number;
  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** A string of `length` characters drawn from ASCII, Latin-1, CJK, emoji, lone surrogates and controls. */
  string(length: number): string {
    const pools = ['abcdefghijklmnopqrstuvwxyz0123456789', 'é€ü', '中文字', '😀🚀', '\ud800\udfff', '\u0000\u001e\n"\\%/:?#[]', ' '];
    let out = '';
    for (let i = 0; i < length; i++) {
      const pool = this.pick(pools);
      const chars = [...pool];
      out += this.pick(chars);
    }
    return out;
  }
}

/** The seed of this run: `SVC_FUZZ_SEED` or a random one. */
export function fuzzSeed(): number {
  const given = process.env.SVC_FUZZ_SEED;
  return given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}
