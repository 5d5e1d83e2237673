/**
 * Agent credits (issue 14; SPEC §3 credit states, §8 "Credits"; DESIGN §7): the fixture app
 * test/fixtures/apps/agent served in this process with an injectable clock and a scripted model. Every
 * turn and `ask` is charged to the app at its rung's prices; `business` counts up and never blocks;
 * a monthly cap pauses turns and `ask` only, and lifts at the Europe/Oslo month end, when an admin
 * raises the cap, or lifts the pause; `self-serve` counts a balance down and refuses at 0 until an
 * admin adds credits. The admin endpoints and `svc credits` show the same figures as the events.
 * 50 concurrent turns and asks across identities add up to the credit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { prepareApp, ROOT, runCli, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { backends } from '../support/backends.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient } from '../support/chat-client.js';
import { waitFor } from '../support/wait.js';
import { osloMonth, startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');
// base rung: 15 per 1k input, 4 per 1k cached, 60 per 1k output.
const USAGE = { prompt: 2000, completion: 500, cached: 1000 }; // ceil(1000/1000×15 + 1000/1000×4 + 500/1000×60) = 49
const TURN_COST = 49;

describe('osloMonth', () => {
  it.each([
    ['2026-01-31T22:59:59Z', '2026-01'],
    ['2026-01-31T23:00:00Z', '2026-02'], // CET (+1): midnight in Oslo
    ['2026-03-29T00:59:59Z', '2026-03'], // the DST change night (last Sunday of March)
    ['2026-03-31T21:59:59Z', '2026-03'],
    ['2026-03-31T22:00:00Z', '2026-04'], // CEST (+2): midnight in Oslo
    ['2026-10-25T00:30:00Z', '2026-10'], // back to CET
    ['2026-10-31T22:59:59Z', '2026-10'],
    ['2026-10-31T23:00:00Z', '2026-11'],
    ['2026-12-31T23:00:00Z', '2027-01'],
  ])('%s is in %s', (at, month) => {
    expect(osloMonth(new Date(at))).toBe(month);
  });
});

for (const backend of backends()) {
  describe(`agent credits on ${backend}`, () => {
    let app: PreparedApp;
    let model: ModelServer;
    let server: RunningServer;
    let base: string;
    let admin: Identity;
    let writer: Identity;
    let clock = new Date('2026-03-31T21:00:00Z'); // 23:00 in Oslo, the last hour of March

    async function start(): Promise<void> {
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' },
        logger: pino({ level: 'silent' }),
        clock: () => clock,
      });
      base = server.url;
    }

    async function call(who: Identity | null, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
      const r = await fetch(`${base}${path}`, {
        method,
        headers: { ...(who?.headers ?? {}), ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      return { status: r.status, json: text ? JSON.parse(text) : null };
    }

    const agentOp = async (op: string, args: unknown) => (await call(writer, 'POST', '/_invoke/agentAdmin', { op, args: JSON.stringify(args) })).json;
    const prompt = (identityId: string) => agentOp('prompt', { identityId, message: 'Go' });
    const ask = () => agentOp('ask', { messages: [{ role: 'user', content: 'Quick' }] });
    const credits = async () => (await call(admin, 'GET', '/_agent/credits')).json;

    beforeAll(async () => {
      model = await startModelServer();
      model.fallback = { text: ['ok'], usage: USAGE };
      app = await prepareApp(FIXTURE, backend);
      await start();
      admin = await adminIdentity(app, base);
      writer = await userIdentity(app, base, 'writer', ['writer']);
    });

    afterAll(async () => {
      await server?.close();
      await model?.close();
      await app?.cleanup();
    });

    it('admin only: 401 anonymous, 403 for a user; business mode starts at 0', async () => {
      expect((await call(null, 'GET', '/_agent/credits')).status).toBe(401);
      expect((await call(writer, 'GET', '/_agent/credits')).status).toBe(403);
      expect((await call(writer, 'PATCH', '/_agent/credits', { addBalance: 5 })).status).toBe(403);
      expect(await credits()).toEqual({ mode: 'business', credits: 0, monthlyCap: null, monthUsed: 0, paused: false });
      expect((await call(admin, 'PATCH', '/_agent/credits', { monthlyCap: 'lots' })).json.error).toContain('monthlyCap');
      expect((await call(admin, 'PATCH', '/_agent/credits', { bogus: 1 })).status).toBe(400);
    });

    it('business: each turn and ask is charged at its rung price; the figures agree everywhere', async () => {
      expect((await prompt(writer.id)).result).toMatchObject({ status: 'completed' });
      const asked = (await ask()).result;
      expect(asked.credits).toBe(2 * TURN_COST);
      expect(await credits()).toMatchObject({ credits: 2 * TURN_COST, monthUsed: 2 * TURN_COST, paused: false });
      // The console's view (DESIGN §9): the turn keeps what it was charged; the chart has the turn and the ask.
      const threads = (await call(admin, 'GET', `/_admin/agent/threads?identity=${writer.id}`)).json.data;
      expect(threads).toEqual([expect.objectContaining({ turns: 1, credits: TURN_COST })]);
      const transcript = (await call(admin, 'GET', `/_admin/agent/threads/${threads[0].id}`)).json;
      expect(transcript.turns.map((t: { credits: number; status: string }) => [t.status, t.credits])).toEqual([['completed', TURN_COST]]);
      // Charged at the server's clock (the last hour of March 2026, UTC day 2026-03-31).
      const usage = (await call(admin, 'GET', '/_admin/agent/usage?from=2026-03-31T00:00:00Z&to=2026-04-01T00:00:00Z&step=86400')).json.data;
      expect(usage).toEqual([
        { time: '2026-03-31T00:00:00.000Z', credits: 2 * TURN_COST, turns: 1, bySource: { turn: TURN_COST, ask: TURN_COST, compact: 0 } },
      ]);
    });

    it('a monthly cap pauses turns and ask only; it lifts at the Oslo month end, on a higher cap, or on resume', async () => {
      expect((await call(admin, 'PATCH', '/_agent/credits', { monthlyCap: 3 * TURN_COST })).json).toMatchObject({ monthlyCap: 3 * TURN_COST, paused: false });
      expect((await prompt(writer.id)).result.status).toBe('completed'); // reaches the cap
      expect(await credits()).toMatchObject({ monthUsed: 3 * TURN_COST, paused: true });
      const refused = (await prompt(writer.id)).result;
      expect(refused).toMatchObject({ status: 'failed', error: expect.stringContaining('cap') });
      expect(await ask()).toMatchObject({ refused: 403, body: { error: expect.stringContaining('paused') } });
      expect((await call(writer, 'GET', '/Book')).status).toBe(200); // the app keeps serving
      const requests = model.requests.length;

      // Midnight in Oslo (22:00 UTC in summer time): a new month, the pause is gone.
      clock = new Date('2026-03-31T22:00:01Z');
      expect(await credits()).toMatchObject({ monthUsed: 0, paused: false, credits: 3 * TURN_COST });
      expect((await prompt(writer.id)).result.status).toBe('completed');
      expect(model.requests.length).toBe(requests + 1);
      expect(await credits()).toMatchObject({ monthUsed: TURN_COST, credits: 4 * TURN_COST });

      // Reach the cap again, then raise it.
      await prompt(writer.id);
      await prompt(writer.id);
      expect((await credits()).paused).toBe(true);
      expect((await call(admin, 'PATCH', '/_agent/credits', { monthlyCap: 10 * TURN_COST })).json).toMatchObject({ paused: false });
      expect((await prompt(writer.id)).result.status).toBe('completed');

      // An admin pause, lifted with svc credits --resume; --cap none removes the cap.
      expect((await call(admin, 'PATCH', '/_agent/credits', { paused: true })).json.paused).toBe(true);
      expect((await ask()).refused).toBe(403);
      const cli = await runCli(['credits', app.dir, '--resume', '--cap', 'none'], app.env);
      expect(cli.code, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout)).toEqual(await credits());
      expect(JSON.parse(cli.stdout)).toMatchObject({ mode: 'business', monthlyCap: null, paused: false });
      expect((await ask()).result.text).toBe('ok');
      expect((await runCli(['credits', app.dir, '--add', 'many'], app.env)).code).not.toBe(0);
    });

    it('50 concurrent turns and asks across identities add up to the credit', async () => {
      const before = (await credits()).credits;
      const identities = await Promise.all(Array.from({ length: 5 }, (_, i) => userIdentity(app, base, `crowd${i}-${backend}`)));
      const work = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? prompt(identities[i % 5].id) : ask()));
      const results = await Promise.all(work);
      expect(results.every((r) => r.result && (r.result.status === 'completed' || typeof r.result.text === 'string'))).toBe(true);
      expect((await credits()).credits).toBe(before + 50 * TURN_COST);
    });

    it("a cap set at or below this month's use pauses turns and ask at once, before any charge", async () => {
      const before = await credits();
      expect(before).toMatchObject({ monthlyCap: null, paused: false });
      expect(before.monthUsed).toBeGreaterThan(1);
      expect((await call(admin, 'PATCH', '/_agent/credits', { monthlyCap: 1 })).json).toMatchObject({ monthlyCap: 1, paused: true });
      const requests = model.requests.length;
      expect((await prompt(writer.id)).result).toMatchObject({ status: 'failed', error: expect.stringContaining('cap of 1 credits is reached') });
      expect(await ask()).toMatchObject({ refused: 403, body: { error: expect.stringContaining('cap') } });
      // A resume cannot lift a reached cap; removing the cap does.
      expect((await call(admin, 'PATCH', '/_agent/credits', { paused: false })).json.paused).toBe(true);
      expect(model.requests.length).toBe(requests);
      expect((await credits()).credits).toBe(before.credits);
      expect((await call(admin, 'PATCH', '/_agent/credits', { monthlyCap: null })).json).toMatchObject({ monthlyCap: null, paused: false });
    });

    describe('over a client', () => {
      let chat: ChatClient;
      let reader: Identity;
      // The base rung's price of a usage (the same formula as creditsOf).
      const price = (input: number, output: number, cached = 0) => Math.ceil((input / 1000) * 15 + (cached / 1000) * 4 + (output / 1000) * 60);
      // A cut-off model call: ceil(chars / 4) of the request body sent and of what was streamed back.
      const estimate = (bodyChars: number, streamedChars: number) => price(Math.ceil(bodyChars / 4), Math.ceil(streamedChars / 4));

      beforeAll(async () => {
        reader = await userIdentity(app, base, `meter-${backend}`);
        chat = new ChatClient(base, reader);
        await chat.connect({ apiTools: 'none' });
      });
      afterAll(() => chat?.stop());

      it('compact is refused like a turn: paused by an admin, or over the session credit limit', async () => {
        expect((await chat.turn('Remember the cats')).find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
        let requests = model.requests.length;
        let used = (await credits()).credits;
        expect((await call(admin, 'PATCH', '/_agent/credits', { paused: true })).json.paused).toBe(true);
        let from = chat.events.length;
        await chat.send({ type: 'compact' });
        expect((await chat.next('error', from)).message).toContain('paused by an admin');
        expect((await call(admin, 'PATCH', '/_agent/credits', { paused: false })).json.paused).toBe(false);

        // A limit of 1 credit, reached by one more turn.
        expect((await agentOp('setCredits', { identityId: reader.id, sessionCredits: 1 })).result).toEqual({ sessionCredits: 1 });
        expect((await chat.turn('One more')).find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
        requests = model.requests.length;
        used = (await credits()).credits;
        from = chat.events.length;
        await chat.send({ type: 'compact' });
        expect((await chat.next('error', from)).message).toBe('Session credit limit reached');
        expect(model.requests.length).toBe(requests);
        expect((await credits()).credits).toBe(used);
        expect(chat.events.slice(from).some((e) => e.type === 'compacted')).toBe(false);
        await agentOp('setCredits', { identityId: reader.id, sessionCredits: 0 });
      });

      it('cancel mid-stream charges the model call in flight: an estimate from what was sent and streamed', async () => {
        const before = (await credits()).credits;
        model.script({ text: ['x'.repeat(400), 'y'.repeat(200)], hang: true });
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'Tell a long story' });
        await waitFor(() => chat.events.slice(from).filter((e) => e.type === 'text').length === 2);
        await chat.send({ type: 'cancel' });
        expect(await chat.next('turn-completed', from)).toMatchObject({ status: 'failed', error: 'cancelled' });
        await chat.next('credits', from);
        expect((await credits()).credits).toBe(before + estimate(model.requests.at(-1)!.bodyChars, 600));
      });

      it('restart mid-stream charges the model call in flight the same way', async () => {
        const before = (await credits()).credits;
        model.script({ text: ['z'.repeat(1000)], hang: true });
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'And another' });
        await chat.next('text', from);
        await chat.send({ type: 'restart' });
        expect(await chat.next('turn-completed', from)).toMatchObject({ status: 'failed', error: 'restarted' });
        await chat.next('credits', from);
        expect((await credits()).credits).toBe(before + estimate(model.requests.at(-1)!.bodyChars, 1000));
      });

      it("cancel after the provider's usage arrived (a UI tool still running) charges that usage exactly", async () => {
        const before = (await credits()).credits;
        model.script({ toolCalls: [{ name: 'showBook', args: { id: 'b-1' } }], usage: USAGE });
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'Show a book' });
        await chat.next('tool-call', from);
        await chat.send({ type: 'cancel' });
        expect(await chat.next('turn-completed', from)).toMatchObject({ status: 'failed', error: 'cancelled' });
        await chat.next('credits', from);
        expect((await credits()).credits).toBe(before + TURN_COST);
        expect(price(1000, 500, 1000)).toBe(TURN_COST);
      });
    });

    it('self-serve counts a balance down, refuses at 0 while the app serves, and an admin top-up resumes it; counters survive a restart', async () => {
      await server.close();
      const file = join(app.dir, 'svc.json');
      const settings = JSON.parse(readFileSync(file, 'utf8'));
      settings.credits = { mode: 'self-serve', initialBalance: 2 * TURN_COST - 1 };
      writeFileSync(file, JSON.stringify(settings));
      expect((await runCli(['generate', app.dir], app.env)).code).toBe(0);
      await start();
      const balance = (await credits()).credits; // initialBalance − everything consumed before
      expect(balance).toBeLessThan(0);
      expect((await prompt(writer.id)).result).toMatchObject({ status: 'failed', error: expect.stringContaining('balance') });
      const topUp = 2 * TURN_COST - 1 - balance;
      expect((await call(admin, 'PATCH', '/_agent/credits', { addBalance: topUp })).json).toMatchObject({ mode: 'self-serve', credits: 2 * TURN_COST - 1 });
      expect((await prompt(writer.id)).result.status).toBe('completed');
      expect((await credits()).credits).toBe(TURN_COST - 1);
      expect((await prompt(writer.id)).result.status).toBe('completed'); // a positive balance may go below 0 once
      expect((await credits()).credits).toBe(-1);
      expect((await ask()).refused).toBe(403);
      expect((await call(writer, 'GET', '/Book')).status).toBe(200);
    });
  });
}
