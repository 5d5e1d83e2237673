/**
 * Where the agent's credits went (issue 23 item 7; DESIGN §7, §9): the fixture app
 * test/fixtures/apps/agent served in this process with a scripted model on loopback and a clock that
 * can be moved ahead. A thread turn, a `compact` and a `ctx.agent.ask` each spend credits; the
 * admin chart `GET /api/_admin/agent/usage` adds up to this month's use of the ledger
 * (`GET /api/_agent/credits`) at any step, split per source right; concurrent charges add up; old
 * minute and hour buckets are pruned; a charge stands when its usage cannot be recorded; hostile
 * query parameters answer 4xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pino } from 'pino';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { backends } from '../support/backends.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient } from '../support/chat-client.js';
import { call, runScenario, useHeaders } from '../support/scenario.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');
// The base rung: 15 credits per 1k input tokens, 60 per 1k output (no cached tokens here).
const TURN = { usage: { prompt: 2000, completion: 300 }, cost: 48 }; // 30 + 18
const COMPACT = { usage: { prompt: 1000, completion: 100 }, cost: 21 }; // 15 + 6
const ASK = { usage: { prompt: 200, completion: 50 }, cost: 6 }; // ceil(3 + 3)
const DAY_MS = 86_400_000;

/** Runs one statement on the app's own database (outside the server), e.g. to break a table. */
async function execute(url: string, text: string): Promise<void> {
  if (url.startsWith('file:')) {
    const db = new Database(url.slice('file:'.length));
    try {
      db.exec(text);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

type Step = { time: string; credits: number; turns: number; bySource: { turn: number; ask: number; compact: number } };
const total = (data: Step[]) =>
  data.reduce(
    (n, s) => ({
      credits: n.credits + s.credits,
      turns: n.turns + s.turns,
      turn: n.turn + s.bySource.turn,
      ask: n.ask + s.bySource.ask,
      compact: n.compact + s.bySource.compact,
    }),
    { credits: 0, turns: 0, turn: 0, ask: 0, compact: 0 },
  );

for (const backend of backends()) {
  describe(`agent credit usage on ${backend}`, () => {
    let app: PreparedApp;
    let model: ModelServer;
    let server: RunningServer;
    let base: string;
    let admin: Identity;
    let writer: Identity;
    let shiftMs = 0; // the server's clock runs this far ahead of the real one
    const started = Date.now();

    const usage = async (query: string): Promise<Step[]> => {
      const r = await call(base, 'GET', `/_admin/agent/usage${query}`);
      expect(r.status, r.text).toBe(200);
      return r.json.data;
    };
    const around = (ms: number, step: number) => `?from=${new Date(ms - 3_600_000).toISOString()}&to=${new Date(ms + 3_600_000).toISOString()}&step=${step}`;
    const ask = async () =>
      (await call(base, 'POST', '/_invoke/agentAdmin', { op: 'ask', args: JSON.stringify({ messages: [{ role: 'user', content: 'Quick' }] }) }, writer.headers))
        .json;

    beforeAll(async () => {
      model = await startModelServer();
      app = await prepareApp(FIXTURE, backend);
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' },
        logger: pino({ level: 'silent' }),
        clock: () => new Date(Date.now() + shiftMs),
      });
      base = server.url;
      admin = await adminIdentity(app, base);
      writer = await userIdentity(app, base, 'writer', ['writer']);
      useHeaders(base, admin.headers);
    });

    afterAll(async () => {
      if (base) useHeaders(base, null);
      await server?.close();
      await model?.close();
      await app?.cleanup();
    });

    it('a turn, a compact and an ask each spend credits; the chart adds up to the month use at any step, per source', async () => {
      const chat = new ChatClient(base, writer);
      try {
        await chat.connect({ apiTools: 'none' });
        model.script({ text: ['Cats are mammals.'], usage: TURN.usage });
        expect((await chat.turn('Tell me about cats')).find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
        model.script({ text: ['We talked about cats.'], usage: COMPACT.usage });
        const from = chat.events.length;
        await chat.send({ type: 'compact' });
        await chat.next('compacted', from);
      } finally {
        chat.stop();
      }
      model.script({ text: ['yes'], usage: ASK.usage });
      expect((await ask()).result).toMatchObject({ text: 'yes' });

      const spent = TURN.cost + COMPACT.cost + ASK.cost;
      const credits = (await call(base, 'GET', '/_agent/credits')).json;
      expect(credits).toMatchObject({ credits: spent, monthUsed: spent });
      const want = { credits: spent, turns: 1, turn: TURN.cost, ask: ASK.cost, compact: COMPACT.cost };
      // The console's chart: the last 30 days per day (whole-hour steps read the hour buckets).
      const daily = await usage('?step=86400');
      expect(daily).toHaveLength(31);
      expect(total(daily)).toEqual(want);
      if (Math.floor(started / DAY_MS) === Math.floor(Date.now() / DAY_MS))
        expect(daily.at(-1)).toEqual({
          time: new Date(Math.floor(started / DAY_MS) * DAY_MS).toISOString(),
          credits: spent,
          turns: 1,
          bySource: { turn: TURN.cost, ask: ASK.cost, compact: COMPACT.cost },
        });
      // Minute buckets answer steps under an hour with the same totals, in the right step.
      for (const step of [60, 300, 3600, 5400]) expect(total(await usage(around(started, step))), `step ${step}`).toEqual(want);
      const perMinute = await usage(around(started, 60));
      expect(perMinute).toHaveLength(Math.ceil((started + 3_600_000 - Math.floor((started - 3_600_000) / 60_000) * 60_000) / 60_000));
      const busy = perMinute.filter((s) => s.credits > 0);
      expect(busy.length).toBeGreaterThanOrEqual(1);
      expect(Date.parse(busy[0].time)).toBeGreaterThanOrEqual(Math.floor(started / 60_000) * 60_000);
      expect(Date.parse(busy.at(-1)!.time)).toBeLessThanOrEqual(Date.now());
      // Outside the range: nothing.
      expect(total(await usage(around(started - 3 * 3_600_000, 60))).credits).toBe(0);
    });

    it('concurrent charges add up exactly in the buckets', async () => {
      const before = total(await usage(around(Date.now(), 60)));
      model.fallback = { text: ['ok'], usage: ASK.usage };
      const answers = await Promise.all(Array.from({ length: 20 }, () => ask()));
      expect(answers.every((a) => a.result?.text === 'ok')).toBe(true);
      const after = total(await usage(around(Date.now(), 60)));
      expect(after.ask - before.ask).toBe(20 * ASK.cost);
      expect(total(await usage(around(Date.now(), 3600))).ask).toBe(after.ask);
      expect((await call(base, 'GET', '/_agent/credits')).json.monthUsed).toBe(after.credits);
    });

    it('refuses steps it cannot answer and hostile parameters with 4xx, never a 5xx', async () => {
      const old = new Date(Date.now() - 40 * DAY_MS).toISOString();
      for (const s of [
        { name: 'step not whole minutes', url: '/_admin/agent/usage?step=90', status: 400, contains: ['step'] },
        {
          name: 'minute step before the minute buckets',
          url: `/_admin/agent/usage?step=60&from=${old}&to=${new Date(Date.now() - 39 * DAY_MS).toISOString()}`,
          status: 400,
          contains: ['35 days'],
        },
        {
          name: 'hour step that far back',
          url: `/_admin/agent/usage?step=3600&from=${old}&to=${new Date(Date.now() - 39 * DAY_MS).toISOString()}`,
          status: 200,
        },
        { name: 'too many steps', url: '/_admin/agent/usage?step=60', status: 400, contains: ['2000 steps'] },
        { name: 'from after to', url: `/_admin/agent/usage?from=${new Date().toISOString()}&to=${old}`, status: 400 },
        { name: 'a user', url: '/_admin/agent/usage', headers: writer.headers, status: 403 },
        { name: 'anonymous', url: '/_admin/agent/usage', headers: { authorization: '' }, status: 401 },
      ])
        await runScenario(base, s);
      const seed = fuzzSeed();
      const r = new Prng(seed);
      const values = [
        '',
        '-60',
        '0',
        '59',
        '61',
        '60.0',
        '6e1',
        '1e400',
        'NaN',
        '%00',
        '%E0%A4%A',
        'a'.repeat(3000),
        '2026-13-45',
        '99999999999999999',
        '2678460',
      ];
      for (let i = 0; i < 60; i++) {
        const query = Array.from(
          { length: 1 + r.int(3) },
          () => `${r.pick(['from', 'to', 'step', 'step[]'])}=${r.chance(0.7) ? r.pick(values) : encodeURIComponent(r.string(1 + r.int(10)))}`,
        );
        const answer = await call(base, 'GET', `/_admin/agent/usage?${query.join('&')}`);
        expect(answer.status, `seed ${seed}: ${query.join('&')}`).toBeLessThan(500);
        if (answer.status >= 400) expect(answer.json?.code, `seed ${seed}`).toEqual(expect.any(String));
      }
    });

    it('prunes minute buckets after 35 days and hour buckets after 400; a charge stands when its usage cannot be recorded', async () => {
      model.fallback = { text: ['ok'], usage: ASK.usage };
      const hourly = () => usage(around(started, 3600));
      const minutes = () => usage(around(started, 60));
      expect(total(await minutes()).credits).toBeGreaterThan(0);
      const kept = total(await hourly());

      shiftMs = 36 * DAY_MS; // the next charge, in a new hour, prunes
      expect((await ask()).result.text).toBe('ok');
      expect(total(await minutes()).credits).toBe(0);
      expect(total(await hourly())).toEqual(kept);

      shiftMs = 401 * DAY_MS;
      expect((await ask()).result.text).toBe('ok');
      expect(total(await hourly()).credits).toBe(0);

      // Without the table (an app whose migrations predate it), charges still count.
      const before = (await call(base, 'GET', '/_agent/credits')).json.credits;
      await execute(app.env.DATABASE_URL!, 'DROP TABLE "_svc_agent_credit_usage"');
      expect((await ask()).result.text).toBe('ok');
      expect((await call(base, 'GET', '/_agent/credits')).json.credits).toBe(before + ASK.cost);
    });
  });
}
