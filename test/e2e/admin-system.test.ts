/**
 * `/api/_admin/realtime`, `status`, `schema` and `agent/*` (DESIGN §9), once per backend against a
 * spawned `svc serve` of the secure fixture: a real Web PubSub connection joined to a channel shows in
 * the connection and member counts; status carries readiness, the applied migrations, the version and
 * this instance; the schema is the manifest; agent sessions, threads (rows written to the app's real
 * database as the agent's thread store writes them), a transcript with credits per turn, and usage per
 * step and source (rows of `_svc_agent_credit_usage` as the credit ledger writes them); every admin operation is in openapi.json with the tag `admin` and `x-svc-agent: false`, and
 * none is among the agent's tools.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { ident, sql } from '../../dist/runtime/query/sql.js';

function adminSystemSuite(backend: Backend): void {
  describe(`admin realtime, status, schema and agent on ${backend}`, () => {
    let app: PreparedApp;
    let server: TestServer;
    let base: string;
    let admin: Identity;
    let user: Identity;
    const get = (url: string) => call(base, 'GET', url, undefined, admin.headers);

    beforeAll(async () => {
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/secure'), backend);
      server = await serve(app.dir, app.env);
      base = server.url;
      admin = await adminIdentity(app, base);
      user = await userIdentity(app, base, 'watcher');
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('shows connections and channels with their member counts', async () => {
      const before = await get('/_admin/realtime');
      expect(before.status).toBe(200);
      expect(before.json).toEqual({ connections: 0, instances: [expect.objectContaining({ self: true, connections: 0, channels: 0 })], channels: [] });
      const { url } = (await call(base, 'GET', '/_rt/ws', undefined, user.headers)).json;
      const socket = new WebSocket(url, 'json.webpubsub.azure.v1');
      try {
        const connectionId = await new Promise<string>((ok, fail) => {
          socket.on('message', (data) => {
            const m = JSON.parse(String(data));
            if (m.event === 'connected') ok(m.connectionId);
          });
          socket.on('error', fail);
        });
        const joined = await call(base, 'POST', '/_rt/join', { connectionId, channel: 'lobby' }, admin.headers);
        expect(joined.status, joined.text).toBeLessThan(300);
        const during = await get('/_admin/realtime');
        expect(during.json.connections).toBe(1);
        expect(during.json.instances[0]).toMatchObject({ self: true, connections: 1, channels: 1, instance: expect.any(String) });
        expect(during.json.channels).toEqual([{ name: 'lobby', members: 1 }]);
      } finally {
        socket.close();
      }
      await waitFor(async () => (await get('/_admin/realtime')).json.connections === 0);
    });

    it('reports status: readiness, migrations, version and this instance', async () => {
      const status = await get('/_admin/status');
      expect(status.status).toBe(200);
      expect(status.json).toMatchObject({
        ready: { httpStatus: 200, status: 'ready', database: 'ok', migrations: 'ok' },
        migrations: { applied: [expect.stringMatching(/_init$/)], pending: [] },
        version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
        app: 'secure',
        provider: backend,
        logStore: { dropped: 0, retentionDays: 7, maxRows: 100000 },
      });
      expect(status.json.instances).toEqual([{ instance: expect.any(String), seenAt: expect.any(String), self: true }]);
    });

    it('answers the manifest without secret values', async () => {
      const schema = await get('/_admin/schema');
      expect(schema.status).toBe(200);
      expect(schema.json.name).toBe('secure');
      expect(schema.json.collections.map((c: { name: string }) => c.name)).toContain('Note');
      expect(schema.json.settings.logs).toEqual({ retentionDays: 7, maxRows: 100000 });
    });

    it('lists agent sessions, threads, a transcript with credits per turn, and usage per step', async () => {
      const db = await openDatabase(backend, app.env.DATABASE_URL!);
      const threadId = randomUUID();
      const now = new Date();
      const hour = Math.floor(now.getTime() / 3_600_000) * 3_600_000;
      try {
        await db.query(
          sql`INSERT INTO ${ident('_svc_agent_threads')} ("id", "identityId", "preview", "summaryTurns", "createdAt", "updatedAt") VALUES (${threadId}, ${user.id}, ${'find a kettle'}, ${0}, ${now}, ${now})`,
        );
        const items = [
          { type: 'text', delta: 'Looking.' },
          { type: 'tool-call', name: 'GET-Note', args: {} },
          { type: 'mcp-call', server: 'docs', name: 'search' },
        ];
        for (const [seq, credits, status, error] of [
          [1, 120, 'completed', null],
          [2, 30, 'failed', 'the model did not answer'],
        ] as const) {
          await db.query(
            sql`INSERT INTO ${ident('_svc_agent_turns')} ("id", "threadId", "seq", "userText", "messages", "items", "status", "error", "credits", "createdAt")
                VALUES (${randomUUID()}, ${threadId}, ${seq}, ${`question ${seq}`}, ${'[]'}, ${JSON.stringify(items)}, ${status}, ${error}, ${credits}, ${now})`,
          );
        }
        // What the credit ledger records per charge (agent/credit-usage.ts): the two turns, and an ask.
        await db.query(
          sql`INSERT INTO ${ident('_svc_agent_credit_usage')} ("spanSeconds", "startMs", "source", "credits", "calls")
              VALUES (${3600}, ${hour}, ${'turn'}, ${150}, ${2}), (${3600}, ${hour}, ${'ask'}, ${7}, ${1})`,
        );
        await db.query(
          sql`INSERT INTO ${ident('_svc_agent_sessions')} ("identityId", "threadId", "sessionCredits", "sessionCreditsUsed", "instanceId", "leaseUntil", "channel", "state", "startedAt", "createdAt", "updatedAt")
              VALUES (${user.id}, ${threadId}, ${0}, ${150}, ${'other-instance'}, ${new Date(Date.now() + 60_000)}, ${'agent:x'}, ${'idle'}, ${now}, ${now}, ${now})`,
        );
      } finally {
        await db.close();
      }
      const sessions = await get('/_admin/agent/sessions');
      expect(sessions.json.data).toEqual([
        expect.objectContaining({ identityId: user.id, instance: 'other-instance', channel: 'agent:x', state: 'idle', threadId, sessionCreditsUsed: 150 }),
      ]);
      const threads = await get(`/_admin/agent/threads?identity=${user.id}`);
      expect(threads.json.data).toEqual([expect.objectContaining({ id: threadId, preview: 'find a kettle', turns: 2, credits: 150 })]);
      expect((await get('/_admin/agent/threads')).status).toBe(400);
      const thread = await get(`/_admin/agent/threads/${threadId}`);
      expect(thread.status).toBe(200);
      expect(thread.json).toMatchObject({ id: threadId, identityId: user.id, credits: 150 });
      expect(thread.json.turns).toEqual([
        expect.objectContaining({ seq: 1, userText: 'question 1', status: 'completed', error: null, credits: 120 }),
        expect.objectContaining({ seq: 2, status: 'failed', error: 'the model did not answer', credits: 30 }),
      ]);
      expect(thread.json.turns[0].items.map((i: { type: string }) => i.type)).toEqual(['text', 'tool-call', 'mcp-call']);
      expect((await get(`/_admin/agent/threads/${randomUUID()}`)).status).toBe(404);
      const usage = await get(`/_admin/agent/usage?from=${new Date(Date.now() - 3_600_000).toISOString()}&step=3600`);
      expect(usage.status).toBe(200);
      expect(usage.json.data.reduce((n: number, s: { credits: number }) => n + s.credits, 0)).toBe(157);
      expect(usage.json.data.reduce((n: number, s: { turns: number }) => n + s.turns, 0)).toBe(2);
      expect(usage.json.data.at(-1)).toEqual({ time: new Date(hour).toISOString(), credits: 157, turns: 2, bySource: { turn: 150, ask: 7, compact: 0 } });
    });

    it('lists every admin operation in openapi.json with the tag admin and x-svc-agent false, and none as an agent tool', async () => {
      const openapi = (await call(base, 'GET', '/_openapi')).json;
      const adminPaths = Object.keys(openapi.paths).filter((p) => p.startsWith('/_admin/'));
      expect(adminPaths.length).toBeGreaterThanOrEqual(11);
      for (const path of adminPaths) {
        for (const [method, op] of Object.entries(openapi.paths[path]) as [string, Record<string, unknown>][]) {
          expect(op.tags, `${method} ${path}`).toEqual(['admin']);
          expect(op['x-svc-agent'], `${method} ${path}`).toBe(false);
        }
      }
      const tools = JSON.stringify(JSON.parse(readFileSync(join(app.dir, '.svc', 'agent-tools.json'), 'utf8')));
      expect(tools).not.toContain('_admin');
    });
  });
}

for (const backend of backends()) adminSystemSuite(backend);
