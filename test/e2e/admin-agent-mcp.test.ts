/**
 * The MCP servers of running agent sessions as admins see them (issue 23 item 7; DESIGN §9
 * `GET /api/_admin/agent/sessions`, `GET /api/_admin/agent/mcp-servers`), once per backend: the agent
 * fixture with two MCP servers — the real Streamable HTTP server on loopback (bearer token from a
 * secret) and a stdio server whose script does not exist (its process exits at once) — served by two
 * spawned `svc serve` processes on one database. A session on A shows `connected` and `failed` on A
 * and on B; its MCP server going away (a `restart` while it is down) shows `failed`, and coming back
 * `connected`, on B. The configured servers carry names and transports but no URL, header, argument
 * or environment value. Non-admins are refused; malformed `mcp` rows and hostile query parameters
 * never make a 5xx; `openapi.json` describes the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { ChatClient } from '../support/chat-client.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { ident, sql } from '../../dist/runtime/query/sql.js';

const TOKEN = 'mcp-admin-token-7';
const TIMEOUT_MS = 4000;

/** The agent fixture with `catalogue` (HTTP, bearer token from a secret) and `broken` (stdio, no such script). */
function fixtureWithMcp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-admin-mcp-src-'));
  cpSync(join(ROOT, 'test/fixtures/apps/agent'), dir, { recursive: true });
  const svc = JSON.parse(readFileSync(join(dir, 'svc.json'), 'utf8'));
  svc.agent.mcpServers = {
    catalogue: { url: '${env.MCP_URL}', headers: { authorization: 'Bearer ${secrets.MCP_TOKEN}' }, timeoutMs: TIMEOUT_MS },
    broken: { command: 'node', args: ['mcp/missing-server.mjs', '--key=${secrets.MCP_TOKEN}'], env: { BROKEN_KEY: '${secrets.MCP_TOKEN}' } },
  };
  writeFileSync(join(dir, 'svc.json'), JSON.stringify(svc, null, 2));
  return dir;
}

function adminAgentMcpSuite(backend: Backend): void {
  describe(`admin view of agent MCP servers on ${backend}`, () => {
    let source: string;
    let app: PreparedApp;
    let model: ModelServer;
    let mcp: McpTestServer;
    let a: TestServer;
    let b: TestServer;
    let admin: Identity;
    let ada: Identity;
    let chat: ChatClient;
    /** GET on instance `base` as `who` (default: the admin). */
    const get = (base: string, url: string, who: Identity | null = admin) => call(base, 'GET', url, undefined, who?.headers ?? {});
    /** The `mcp` of ada's session as instance `base` lists it (undefined while it is not listed). */
    const mcpOf = async (base: string) => {
      const answer = await get(base, '/_admin/agent/sessions');
      expect(answer.status, answer.text).toBe(200);
      return (answer.json.data as { identityId: string; mcp: unknown }[]).find((s) => s.identityId === ada.id)?.mcp;
    };
    /** Waits until ada's session on `base` lists exactly `want`. */
    const until = (base: string, want: { name: string; status: string }[]) =>
      waitFor(async () => JSON.stringify(await mcpOf(base)) === JSON.stringify(want) || undefined, 10_000).catch(async (err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(await mcpOf(base))} is not ${JSON.stringify(want)}`);
      });

    beforeAll(async () => {
      [model, mcp] = await Promise.all([startModelServer(), startMcpServer(TOKEN)]);
      source = fixtureWithMcp();
      app = await prepareApp(source, backend);
      const env = { ...app.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k', MCP_URL: mcp.url, SVC_SECRET_MCP_TOKEN: TOKEN, SVC_LOG_LEVEL: 'error' };
      // B shares A's database (no Redis: B learns of A's sessions from the lease rows alone).
      [a, b] = await Promise.all([serve(app.dir, env), serve(app.dir, env)]);
      admin = await adminIdentity(app, a.url);
      ada = await userIdentity(app, a.url, 'ada');
    }, 60_000);

    afterAll(async () => {
      chat?.stop();
      await Promise.all([a?.close(), b?.close()]);
      await Promise.all([model?.close(), mcp?.stop()]);
      await app?.cleanup();
      if (source) rmSync(source, { recursive: true, force: true });
    });

    it('shows a running session’s MCP servers on every instance: connected, and failed for one whose process does not start', async () => {
      chat = new ChatClient(a.url, ada);
      await chat.connect();
      const want = [
        { name: 'catalogue', status: 'connected' },
        { name: 'broken', status: 'failed' },
      ];
      await until(a.url, want);
      await until(b.url, want);
      const session = (await get(b.url, '/_admin/agent/sessions')).json.data.find((s: { identityId: string }) => s.identityId === ada.id);
      const instanceOfA = (await get(a.url, '/_admin/status')).json.instances.find((i: { self: boolean }) => i.self).instance;
      expect(session).toMatchObject({ identityId: ada.id, channel: chat.channel, instance: instanceOfA });
      expect(mcp.refused).toBe(0);
    });

    it('records a status change: the server gone at a restart is failed, and connected again once it is back', async () => {
      await mcp.stop();
      await chat.send({ type: 'restart' });
      await until(b.url, [
        { name: 'catalogue', status: 'failed' },
        { name: 'broken', status: 'failed' },
      ]);
      await mcp.start();
      await until(b.url, [
        { name: 'catalogue', status: 'connected' },
        { name: 'broken', status: 'failed' },
      ]);
    });

    it('lists the configured servers with names and transports, and no URL, header, argument or environment value', async () => {
      for (const base of [a.url, b.url]) {
        const answer = await get(base, '/_admin/agent/mcp-servers');
        expect(answer.status).toBe(200);
        expect(answer.json).toEqual({
          data: [
            { name: 'catalogue', transport: 'http', timeoutMs: TIMEOUT_MS, usable: true },
            { name: 'broken', transport: 'stdio', timeoutMs: 30_000, usable: true },
          ],
        });
        for (const secret of [TOKEN, mcp.url, '127.0.0.1', 'Bearer', 'missing-server', '--key', 'BROKEN_KEY', 'node'])
          expect(answer.text).not.toContain(secret);
      }
    });

    it('refuses anonymous callers (401) and non-admins (403)', async () => {
      for (const url of ['/_admin/agent/sessions', '/_admin/agent/mcp-servers']) {
        expect((await get(a.url, url, null)).status).toBe(401);
        const refused = await get(a.url, url, ada);
        expect(refused.status).toBe(403);
        expect(refused.json.code).toBe('FORBIDDEN');
      }
    });

    it('answers [] for a lease row whose mcp is missing or malformed, and never a 5xx to hostile query parameters', async () => {
      const db = await openDatabase(backend, app.env.DATABASE_URL!);
      const rows = [null, 'not json', '{"name":"x"}', '[1,null,"a",{"name":"only"}]', '[{"name":"docs","status":"connected","extra":1}]'];
      const ids = rows.map(() => randomUUID());
      const now = new Date();
      try {
        for (const [i, text] of rows.entries()) {
          await db.query(
            sql`INSERT INTO ${ident('_svc_agent_sessions')} ("identityId", "sessionCredits", "sessionCreditsUsed", "instanceId", "leaseUntil", "channel", "state", "startedAt", "mcp", "createdAt", "updatedAt")
                VALUES (${ids[i]}, ${0}, ${0}, ${'other-instance'}, ${new Date(Date.now() + 60_000)}, ${'agent:x'}, ${'idle'}, ${now}, ${text}, ${now}, ${now})`,
          );
        }
      } finally {
        await db.close();
      }
      const listed = (await get(b.url, '/_admin/agent/sessions?pageSize=100')).json.data as { identityId: string; mcp: unknown }[];
      expect(ids.map((id) => listed.find((s) => s.identityId === id)?.mcp)).toEqual([[], [], [], [], [{ name: 'docs', status: 'connected' }]]);

      const seed = fuzzSeed();
      const r = new Prng(seed);
      const values = ['%00', '', '-1', '1e400', '%', '%E0%A4%A', 'a'.repeat(3000), 'null', '[]', '..%2F..'];
      for (let i = 0; i < 40; i++) {
        const path = r.pick(['/_admin/agent/mcp-servers', '/_admin/agent/sessions', `/_admin/agent/mcp-servers/${encodeURIComponent(r.string(1 + r.int(8)))}`]);
        const value = r.chance(0.5) ? r.pick(values) : encodeURIComponent(r.string(1 + r.int(12)));
        const url = `${path}?${r.pick(['pageSize', 'pageToken', 'name', 'identity'])}=${value}`;
        const answer = await get(a.url, url);
        expect(answer.status, `seed ${seed}: ${url}`).toBeLessThan(500);
        if (answer.status >= 400) expect(answer.json?.code, `seed ${seed}: ${url}`).toEqual(expect.any(String));
      }
    });

    it('describes the sessions’ mcp field and the configured servers in openapi.json', async () => {
      const openapi = (await call(a.url, 'GET', '/_openapi')).json;
      const schemas = openapi.components.schemas;
      const sessions = openapi.paths['/_admin/agent/sessions'].get.responses['200'].content['application/json'].schema;
      expect(sessions.properties.data.items.$ref).toBe('#/components/schemas/svc.AdminAgentSession');
      expect(schemas['svc.AdminAgentSession'].required).toContain('mcp');
      expect(schemas['svc.AdminAgentSession'].properties.mcp.items.$ref).toBe('#/components/schemas/svc.AdminMcpStatus');
      expect(schemas['svc.AdminMcpStatus'].properties.status.enum).toEqual(['connecting', 'connected', 'reconnecting', 'failed']);
      const servers = openapi.paths['/_admin/agent/mcp-servers'].get;
      expect(servers).toMatchObject({ tags: ['admin'], 'x-svc-agent': false });
      expect(servers.responses['200'].content['application/json'].schema.properties.data.items.$ref).toBe('#/components/schemas/svc.AdminMcpServer');
    });
  });
}

for (const backend of backends()) adminAgentMcpSuite(backend);
