/**
 * One set of channel rules for every transport (issue 20 §7; SPEC §4.7 rules 1, 4, 5 and the channel
 * table): each case of the table runs over HTTP (`_rt/join`, `_rt/send`), the Web PubSub socket
 * (`joinGroup`, `sendToGroup`) and the hub (`join`, `send`), and gets the same outcome and the same
 * message everywhere (HTTP also its status): anonymous callers 401, private and collection-named
 * channels 400, a private channel a function joined read-write open to that connection's sends, a
 * receive-only membership 403 for sends. LISTEN admits by every LISTEN rule of a collection, not only
 * the first. In-process server on SQLite with test/fixtures/apps/functions (its `rtJoin` function) and a
 * `Feed` collection with two LISTEN rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { prepareApp, runCli, ROOT, type PreparedApp } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { hubRecords, openRaw, RS, type RawSocket } from '../support/hostile.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/functions');

let app: PreparedApp;
let server: RunningServer;
let base: string;
let alice: Identity;
const anonymous = { id: '', token: '', refreshToken: '', headers: {} } as Identity;

/** One identity's sockets: a Web PubSub one and a hub one, with their connection ids. */
interface Sockets {
  who: Identity;
  wps: RawSocket;
  wpsId: string;
  hub: RawSocket;
  hubId: string;
}
const sockets = new Map<Identity, Sockets>();

type Outcome = { ok: true } | { ok: false; message: string; status?: number };

let seq = 0;

async function post(path: string, body: unknown, who: Identity): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

async function open(who: Identity): Promise<Sockets> {
  const { url } = (await (await fetch(`${base}/_rt/ws`, { headers: who.headers })).json()) as { url: string };
  const wps = await openRaw(url, ['json.webpubsub.azure.v1']);
  await waitFor(() => wps.frames.length > 0);
  const { url: hubUrl, accessToken } = (await (await fetch(`${base}/_rt/hub`, { headers: who.headers })).json()) as { url: string; accessToken: string };
  const negotiated = await (
    await fetch(`${hubUrl}/negotiate?negotiateVersion=1`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } })
  ).json();
  const hub = await openRaw(`${hubUrl.replace(/^http/, 'ws')}?id=${negotiated.connectionToken}`, [], hubRecords);
  hub.ws.send(JSON.stringify({ protocol: 'json', version: 1 }) + RS);
  await waitFor(() => hub.frames.length > 0);
  return { who, wps, wpsId: wps.frames[0].connectionId, hub, hubId: negotiated.connectionId };
}

/** The three transports, each answering a join or a send with its outcome. */
const transports: Record<string, (s: Sockets, op: 'join' | 'send', channel: string) => Promise<Outcome>> = {
  http: async (s, op, channel) => {
    const r = op === 'join' ? await post('/_rt/join', { connectionId: s.wpsId, channel }, s.who) : await post('/_rt/send', { channel, body: { x: 1 } }, s.who);
    return r.status === 200 ? { ok: true } : { ok: false, message: r.json.error, status: r.status };
  },
  webPubSub: async (s, op, channel) => {
    const ackId = ++seq;
    const group = `fnapp:${channel}`;
    s.wps.ws.send(
      JSON.stringify(op === 'join' ? { type: 'joinGroup', group, ackId } : { type: 'sendToGroup', group, ackId, dataType: 'json', data: { x: 1 } }),
    );
    const ack = await waitFor(() => s.wps.frames.find((f) => f.type === 'ack' && f.ackId === ackId));
    return ack.success ? { ok: true } : { ok: false, message: ack.error.message };
  },
  hub: async (s, op, channel) => {
    const invocationId = `i${++seq}`;
    s.hub.ws.send(JSON.stringify({ type: 1, invocationId, target: op, arguments: op === 'join' ? [channel] : [channel, { x: 1 }] }) + RS);
    const done = await waitFor(() => s.hub.frames.find((f) => f.type === 3 && f.invocationId === invocationId));
    return done.error === undefined ? { ok: true } : { ok: false, message: done.error };
  },
};

const PRIVATE = (c: string) => `channel "${c}" is private (it contains ":"): only functions may join or send to it`;

/** SPEC §4.7 cases: who, what, where, and the outcome on every transport (`only` narrows an outcome to some). */
const CASES: { name: string; who: () => Identity; op: 'join' | 'send'; channel: string; expect: Outcome; except?: Record<string, Outcome> }[] = [
  {
    name: 'anonymous join',
    who: () => anonymous,
    op: 'join',
    channel: 'lobby',
    expect: { ok: false, status: 401, message: 'joining a channel requires authentication' },
  },
  {
    name: 'anonymous send',
    who: () => anonymous,
    op: 'send',
    channel: 'lobby',
    expect: { ok: false, status: 401, message: 'sending to a channel requires authentication' },
  },
  { name: 'join a regular channel', who: () => alice, op: 'join', channel: 'lobby', expect: { ok: true } },
  { name: 'send to a regular channel', who: () => alice, op: 'send', channel: 'lobby', expect: { ok: true } },
  { name: 'join a private channel', who: () => alice, op: 'join', channel: 'room:1', expect: { ok: false, status: 400, message: PRIVATE('room:1') } },
  {
    name: 'send to a private channel, not a member',
    who: () => alice,
    op: 'send',
    channel: 'room:1',
    expect: { ok: false, status: 400, message: PRIVATE('room:1') },
  },
  {
    name: 'send to a private channel a function joined read-write',
    who: () => alice,
    op: 'send',
    channel: 'room:rw',
    expect: { ok: true },
    // HTTP has no connection: a function's join does not open the channel to it.
    except: { http: { ok: false, status: 400, message: PRIVATE('room:rw') } },
  },
  {
    name: 'send to a channel a function joined receive-only',
    who: () => alice,
    op: 'send',
    channel: 'news',
    expect: { ok: false, message: 'channel "news" was joined receive-only' },
    except: { http: { ok: true } },
  },
  {
    name: 'join a collection-named channel',
    who: () => alice,
    op: 'join',
    channel: 'Note',
    expect: { ok: false, status: 400, message: 'channel "Note" is the name of a collection: its change notifications are received with _listen' },
  },
  {
    name: 'send to a collection-named channel',
    who: () => alice,
    op: 'send',
    channel: 'Note',
    expect: { ok: false, status: 400, message: 'channel "Note" is the name of a collection: its change notifications are received with _listen' },
  },
  {
    name: 'join an empty channel name',
    who: () => alice,
    op: 'join',
    channel: '',
    expect: { ok: false, status: 400, message: 'channel must be a non-empty string' },
  },
  {
    name: 'send to a 201-character name',
    who: () => alice,
    op: 'send',
    channel: 'c'.repeat(201),
    expect: { ok: false, status: 400, message: 'channel is longer than 200 characters' },
  },
];

beforeAll(async () => {
  app = await prepareApp(FIXTURE, 'sqlite');
  writeFileSync(
    join(app.dir, 'collections', 'Feed.json'),
    JSON.stringify({
      name: 'Feed',
      properties: { title: { type: 'string' } },
      access: [
        { method: 'GET', roleNames: ['_AUTHENTICATED_USER'] },
        { method: 'LISTEN', roleNames: ['reader'] },
        { method: 'LISTEN', roleNames: ['auditor'] },
      ],
    }),
  );
  const generated = await runCli(['generate', app.dir], app.env);
  expect(generated.code, generated.stderr).toBe(0);
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env }, logger: pino({ level: 'silent' }) });
  base = server.url;
  alice = await userIdentity(app, base, 'alice');
  for (const who of [anonymous, alice]) sockets.set(who, await open(who));
  // A function joins alice's two socket connections: room:rw read-write, news receive-only.
  const a = sockets.get(alice)!;
  for (const connectionId of [a.wpsId, a.hubId]) {
    for (const [channel, readOnly] of [
      ['room:rw', false],
      ['news', true],
    ] as const) {
      expect((await post('/rtJoin', { connectionId, channel, readOnly }, alice)).json).toEqual({ joined: { group: `fnapp:${channel}` } });
    }
  }
});

afterAll(async () => {
  for (const s of sockets.values()) {
    s.wps.ws.close();
    s.hub.ws.close();
  }
  await server?.close();
  await app?.cleanup();
});

describe('the channel rules of SPEC §4.7 over HTTP, Web PubSub and the hub', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      for (const [transport, run] of Object.entries(transports)) {
        const expected = c.except?.[transport] ?? c.expect;
        const got = await run(sockets.get(c.who())!, c.op, c.channel);
        const { status, ...rest } = expected as { status?: number };
        // Only HTTP answers with a status; sockets carry the same message.
        expect(got, transport).toEqual(transport === 'http' && status !== undefined ? expected : rest);
      }
    });
  }

  it('a client join does not lift a receive-only membership a function gave', async () => {
    const a = sockets.get(alice)!;
    for (const [transport, run] of Object.entries(transports)) {
      expect(await run(a, 'join', 'news'), transport).toEqual({ ok: true });
      expect(await run(a, 'send', 'news'), transport).toEqual(
        transport === 'http' ? { ok: true } : { ok: false, message: 'channel "news" was joined receive-only' },
      );
    }
  });
});

describe('LISTEN rules', () => {
  it('every LISTEN rule of a collection admits its roles; a caller with neither is refused; a collection without one refuses everyone', async () => {
    const reader = await userIdentity(app, base, 'rita', ['reader']);
    const auditor = await userIdentity(app, base, 'audrey', ['auditor']);
    const a = sockets.get(alice)!;
    const listen = async (who: Identity, collection: string) => {
      const own = who === alice ? a.wpsId : (await open(who)).wpsId;
      return post(`/${collection}/_listen`, { connectionId: own, type: 'ws' }, who);
    };
    expect((await listen(reader, 'Feed')).status).toBe(200);
    // The second rule counts too (the old check took only the first).
    expect((await listen(auditor, 'Feed')).status).toBe(200);
    const refused = await listen(alice, 'Feed');
    expect(refused).toMatchObject({ status: 403, json: { code: 'FORBIDDEN', error: 'LISTEN on Feed is not allowed for this caller' } });
    const anon = await post('/Feed/_listen', { connectionId: sockets.get(anonymous)!.wpsId, type: 'ws' }, anonymous);
    expect(anon).toMatchObject({ status: 401, json: { code: 'UNAUTHORIZED' } });
    expect(await listen(alice, 'Note')).toMatchObject({ status: 403, json: { error: 'Note has no LISTEN rule: its changes cannot be listened to' } });
  });
});
