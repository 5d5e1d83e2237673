/**
 * The console's pages beyond the data grid (DESIGN §9, issue 23), driven by Debian's Chromium through
 * playwright-core against a spawned `svc serve` of the shop example (self-serve credits, a scripted
 * model on loopback), once per backend: identities (a user created, its roles set, its password
 * reset, a refresh-token family revoked, then disabled — its bearer token refused within 5 s; a
 * service account's secret shown once; linked providers), logs (a search by request id finds the
 * request and every line carrying its id; the per-minute chart), a function run with the log lines
 * of that call, real-time (connections per instance, channels with member counts), an agent
 * transcript (turns, tool calls, credits per turn), a running session's MCP servers with their statuses
 * (the loopback MCP server connected, one nobody listens on failed) and the configured servers, the
 * credits panel (cap, pause and resume, top-up, the chart of credits per day) and health (migrations applied and pending, version, instances).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Page } from 'playwright-core';
import { consoleAsServiceAccount, launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { backends } from '../support/backends.js';
import { createServiceAccount, serviceAccountToken, userIdentity, userToken, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient } from '../support/chat-client.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { ident, sql } from '../../dist/runtime/query/sql.js';

const SHOP = join(ROOT, 'examples/shop');
const WITHIN_MS = 5000;
const BALANCE = 100_000;
const MCP_TOKEN = 'console-mcp-token';

let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/**
 * The shop with self-serve credits (so the credits panel offers a top-up) and two MCP servers: the
 * loopback test server (`catalogue`) and one nobody listens on (`down`).
 */
function selfServe(dir: string): void {
  const file = join(dir, 'svc.json');
  const svc = JSON.parse(readFileSync(file, 'utf8'));
  svc.agent.mcpServers = {
    catalogue: { url: '${env.MCP_URL}', headers: { authorization: 'Bearer ${secrets.MCP_TOKEN}' } },
    down: { url: 'http://127.0.0.1:1/mcp' },
  };
  writeFileSync(file, JSON.stringify({ ...svc, credits: { mode: 'self-serve', initialBalance: BALANCE } }));
}

describe.each(backends())('the console pages on %s', (backend) => {
  let app: PreparedApp;
  let model: ModelServer;
  let mcp: McpTestServer;
  let server: TestServer;
  let base: string;
  let origin: string;
  let admin: Identity;
  let page: Page;
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = admin.headers) => call(base, method, path, body, headers);

  beforeAll(async () => {
    [model, mcp] = await Promise.all([startModelServer(), startMcpServer(MCP_TOKEN)]);
    app = await prepareApp(SHOP, backend, selfServe);
    server = await serve(app.dir, { ...app.env, SHOP_MODEL_URL: model.url, MCP_URL: mcp.url, SVC_SECRET_MCP_TOKEN: MCP_TOKEN, SVC_LOG_LEVEL: 'warn' });
    base = server.url;
    origin = base.replace(/\/api$/, '');
    const sa = await createServiceAccount(app, 'console-admin', { admin: true });
    admin = await serviceAccountToken(base, sa.clientId, sa.clientSecret);
    // The previous backend's session cookies (same host, another port) would make the console's first
    // call refresh with them, and that refusal clears the cookies — possibly after the sign-in below.
    await browser.context.clearCookies();
    page = await consoleAsServiceAccount(browser.context, origin, sa);
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    await server?.close();
    await Promise.all([model?.close(), mcp?.stop()]);
    await app?.cleanup();
  });

  /** Opens the identities page on the identity named `name` (searched for), its panel shown. */
  async function openIdentity(name: string): Promise<string> {
    await page.goto(`${origin}/_/#/identities`);
    await page.fill('#identity-search', name);
    await page.press('#identity-search', 'Enter');
    const row = page.locator(`#identities tr[data-key]:has(td[data-col="name"]:text-is("${name}"))`);
    await row.waitFor();
    const id = (await row.getAttribute('data-key'))!;
    await row.click();
    await page.waitForSelector(`#identity-panel h3:has-text("${name}")`);
    return id;
  }

  it('creates a user, sets its roles, resets its password, revokes a session, and disables it: its token is refused within 5 s', async () => {
    await page.goto(`${origin}/_/#/identities`);
    await page.fill('#create-name', 'ada');
    await page.fill('#create-password', 'ada-password-1');
    await page.click('#create-identity button[type=submit]');
    await page.waitForSelector('#create-message:text-is("Created ada")');
    const first = await userToken(base, 'ada', 'ada-password-1');
    const id = await openIdentity('ada');
    expect(id).toBe(first.id);

    await page.fill('#identity-roles', 'admin, clerk');
    await page.click('#set-roles');
    await page.waitForSelector('#identity-message:text-is("Set roles: done")');
    expect((await api('GET', `/_admin/identities/${id}`)).json.roles).toEqual(['admin', 'clerk']);
    await expect.poll(() => page.textContent(`#identities tr[data-key="${id}"] td[data-col="roles"]`)).toBe('["admin","clerk"]');

    await page.fill('#identity-password', 'ada-password-2');
    await page.click('#reset-password');
    await page.waitForSelector('#identity-message:text-is("Reset password: done")');
    expect((await api('POST', '/_auth', { authority: 'password', username: 'ada', password: 'ada-password-1' }, {})).status).toBe(401);
    const second = await userToken(base, 'ada', 'ada-password-2');

    // Two sessions now (one per sign-in); revoke the first one's family in the console.
    const sessions = (await api('GET', `/_admin/identities/${id}/sessions`)).json.data as { familyId: string }[];
    expect(sessions).toHaveLength(2);
    const refresh = (who: Identity) =>
      api('POST', '/_token', new URLSearchParams({ grant_type: 'refresh_token', client_id: 'ada', refresh_token: who.refreshToken }).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
    const family = sessions[1].familyId; // oldest last: the first sign-in
    await openIdentity('ada');
    await page.click(`#sessions tr[data-family="${family}"] button`);
    await page.waitForSelector('#identity-message:text-is("Revoke session: done")');
    expect((await refresh(first)).json.error).toBe('invalid_grant');
    const renewed = await refresh(second);
    expect(renewed.status, renewed.text).toBe(200);
    const token = { authorization: `Bearer ${renewed.json.access_token}` };

    expect((await api('GET', '/_me', undefined, token)).status).toBe(200);
    await page.click('#toggle-disabled');
    await page.waitForSelector('#identity-message:text-is("Disable: done")');
    const disabledAt = Date.now();
    await waitFor(async () => (await api('GET', '/_me', undefined, token)).status === 401, WITHIN_MS);
    expect(Date.now() - disabledAt).toBeLessThan(WITHIN_MS);
    await expect.poll(() => page.textContent(`#identities tr[data-key="${id}"] td[data-col="disabled"]`)).toBe('true');
    expect(await page.textContent('#toggle-disabled')).toBe('Enable');
  });

  it("names a row's creator with a link to its identity, shows users' e-mails, and says 1 row, not 1 rows", async () => {
    const name = `Creator check ${randomUUID()}`;
    const created = await api('POST', '/Customer', { name });
    expect(created.status).toBe(201);
    const rowId = (created.json as { data: string[] }).data[0];
    await page.goto(`${origin}/_/#/data/Customer/${rowId}`);
    const creator = page.locator('#row-props [data-prop="createdBy"] a.identity');
    await expect.poll(() => creator.textContent()).toBe('console-admin');
    expect(await creator.getAttribute('href')).toBe(`#/identities/${admin.id}`);
    // The link opens that identity's panel.
    await creator.click();
    await page.waitForSelector('#identity-panel h3:has-text("console-admin")');
    // The grid names the creator too, and a filter that finds one row says so in the singular.
    await page.goto(`${origin}/_/#/data/Customer`);
    await page.fill('#filter', `name eq "${name}"`);
    await page.click('#apply');
    await expect.poll(() => page.textContent('#row-count')).toBe('1 row');
    await page.waitForSelector('.grid-row[data-index="0"] .td[data-col="createdBy"] a.identity:text-is("console-admin")');
    // The identities list has an e-mail column.
    expect((await api('POST', '/_admin/identities', { kind: 'user', username: 'grace', password: 'grace-password-1', email: 'grace@shop.test' })).status).toBe(
      201,
    );
    await page.goto(`${origin}/_/#/identities`);
    await page.fill('#identity-search', 'grace');
    await page.press('#identity-search', 'Enter');
    await expect
      .poll(() => page.locator('#identities tr[data-key]:has(td[data-col="name"]:text-is("grace")) td[data-col="email"]').textContent())
      .toBe('grace@shop.test');
  });

  it("creates a service account and shows its secret once; a user's linked providers are shown", async () => {
    await page.goto(`${origin}/_/#/identities`);
    await page.selectOption('#create-kind', 'serviceAccount');
    await page.fill('#create-name', 'robot');
    await page.fill('#create-roles', 'reporting');
    await page.click('#create-identity button[type=submit]');
    await page.waitForSelector('#new-secret');
    const shown = JSON.parse((await page.textContent('#new-secret-value'))!) as { clientId: string; clientSecret: string };
    const robot = await serviceAccountToken(base, shown.clientId, shown.clientSecret);
    expect((await api('GET', `/_admin/identities/${robot.id}`)).json).toMatchObject({ kind: 'serviceAccount', name: 'robot', roles: ['reporting'] });
    await page.click('#secret-copied');
    await page.waitForSelector('#new-secret', { state: 'detached' });
    await openIdentity('robot');
    expect(await page.textContent('body')).not.toContain(shown.clientSecret);
    expect(await page.locator('#identity-providers').count()).toBe(0); // service accounts have none

    // A user with a provider link as a provider sign-in writes it (runtime/auth/providers/link.ts).
    const linked = await userIdentity(app, base, 'linked-lena');
    const db = await openDatabase(backend, app.env.DATABASE_URL!);
    try {
      await db.query(
        sql`INSERT INTO ${ident('_svc_user_providers')} ("id", "userId", "provider", "subject", "email", "createdAt") VALUES (${randomUUID()}, ${linked.id}, ${'demo'}, ${'sub-77'}, ${'lena@example.org'}, ${new Date()})`,
      );
    } finally {
      await db.close();
    }
    await openIdentity('linked-lena');
    expect(await page.textContent(`#identities tr[data-key="${linked.id}"] td[data-col="providers"]`)).toBe('demo');
    expect(await page.textContent('#identity-providers td[data-col="subject"]')).toBe('sub-77');
    expect(await page.textContent('#identity-providers td[data-col="email"]')).toBe('lena@example.org');
  });

  it('runs a function and shows the log lines of that call; the logs page finds that request by its id with every line, and charts requests per minute', async () => {
    const customer = await api('POST', '/Customer', { name: 'Log Customer', email: 'log@example.org', country: 'NO' });
    const product = await api('POST', '/Product', { sku: 'LOG-1', name: 'Logged Lamp', price: 10, stock: 5 });
    expect(product.status).toBe(201);
    await page.goto(`${origin}/_/#/functions/placeOrder`);
    await page.waitForSelector('#run-form');
    await page.fill('[data-arg="customer"]', customer.json.data[0]);
    await page.fill('[data-arg="sku"]', 'LOG-1');
    await page.fill('[data-arg="quantity"]', '2');
    await page.click('#run');
    await page.waitForSelector('#run-answer');
    expect(await page.textContent('#run-status')).toBe('201');
    const order = JSON.parse((await page.textContent('#run-body'))!).order as string;
    await page.waitForSelector('#run-lines td[data-col="message"]', { timeout: 10_000 });
    expect(await page.textContent('#run-lines td[data-col="message"]')).toBe(`placed order ${order}: 2 × LOG-1, total 20`);
    expect(await page.textContent('#run-lines td[data-col="source"]')).toBe('placeOrder');
    const reqId = /request (\S+)/.exec((await page.textContent('#run-answer p'))!)![1];

    await page.goto(`${origin}/_/#/logs`);
    await page.fill('[data-log-filter="reqId"]', reqId);
    await page.click('#log-search');
    await page.waitForSelector(`#log-list tr[data-key] td[data-col="reqId"]:text-is("${reqId}")`);
    // The request line and the function's line, and nothing else. The unfiltered list shown before the
    // search holds the same row, so wait for the filtered answer rather than for that row.
    await vi.waitFor(async () => expect(await page.locator('#log-list tbody tr').count()).toBe(2), { timeout: 10_000 });
    await page.click('#log-list tbody tr:has(td[data-col="kind"]:text-is("request"))');
    await page.waitForSelector('#log-request-lines tr[data-key="function"]');
    expect(await page.locator('#log-request-lines tbody tr').count()).toBe(2);
    expect(await page.textContent('#log-request-lines tr[data-key="request"] td[data-col="path"]')).toBe('/api/_invoke/placeOrder');
    expect(await page.textContent('#log-request-lines tr[data-key="request"] td[data-col="status"]')).toBe('201');
    expect(await page.textContent('#log-request-lines tr[data-key="function"] td[data-col="message"]')).toContain(`placed order ${order}`);
    // The chart of requests and errors per minute (uPlot draws on a canvas, with its legend).
    await page.waitForSelector('#log-chart .uplot canvas');
    expect(await page.textContent('#log-chart .u-legend')).toMatch(/requests[\s\S]*errors/);
  });

  it('shows connections per instance and channels with their member counts', async () => {
    const user = await userIdentity(app, base, 'listener');
    const { url } = (await api('GET', '/_rt/ws', undefined, user.headers)).json;
    const socket = new WebSocket(url, 'json.webpubsub.azure.v1');
    try {
      const connectionId = await new Promise<string>((ok, fail) => {
        socket.on('message', (data) => {
          const m = JSON.parse(String(data));
          if (m.event === 'connected') ok(m.connectionId);
        });
        socket.on('error', fail);
      });
      expect((await api('POST', '/_rt/join', { connectionId, channel: 'lobby' })).status).toBeLessThan(300);
      await page.goto(`${origin}/_/#/realtime`);
      await page.waitForSelector('#realtime-state');
      await expect
        .poll(
          async () => {
            await page.click('#rt-refresh');
            return page
              .locator('#rt-channels tr[data-key="lobby"] td[data-col="members"]')
              .textContent({ timeout: 1000 })
              .catch(() => null);
          },
          { timeout: 10_000 },
        )
        .toBe('1');
      const status = (await api('GET', '/_admin/realtime')).json;
      const self = status.instances.find((i: { self: boolean }) => i.self);
      const row = `#rt-instances tr[data-key="${self.instance}"]`;
      expect(await page.textContent(`${row} td[data-col="connections"]`)).toBe('1');
      expect(await page.textContent(`${row} td[data-col="channels"]`)).toBe('1');
      expect(await page.textContent('#rt-connections')).toBe('1');
    } finally {
      socket.close();
    }
  });

  it('shows an agent transcript with its turns, tool calls and credits per turn', async () => {
    const shopper = await userIdentity(app, base, 'shopper');
    const chat = new ChatClient(base, shopper);
    try {
      await chat.connect();
      model.script(
        { toolCalls: [{ name: 'listProduct', args: { pageSize: 1 } }], usage: { prompt: 2000, completion: 100 } },
        { text: ['Here is one.'], usage: { prompt: 2500, completion: 50 } },
      );
      const events = await chat.turn('show me a product');
      expect(events.find((e) => e.type === 'turn-completed')).toMatchObject({ status: 'completed' });
    } finally {
      chat.stop();
    }
    const threads = (await api('GET', `/_admin/agent/threads?identity=${shopper.id}`)).json.data;
    expect(threads).toHaveLength(1);
    const transcript = (await api('GET', `/_admin/agent/threads/${threads[0].id}`)).json;
    expect(transcript.turns[0].credits).toBeGreaterThan(0);

    await page.goto(`${origin}/_/#/agent`);
    await page.fill('#threads-identity', shopper.id);
    await page.click('#show-threads');
    await page.click(`#threads tr[data-key="${threads[0].id}"]`);
    await page.waitForSelector('#transcript .turn[data-seq="1"]');
    expect(await page.textContent('#transcript .turn[data-seq="1"] > summary')).toContain('show me a product — completed');
    expect(await page.textContent('#transcript .turn[data-seq="1"] [data-turn-credits]')).toBe(String(transcript.turns[0].credits));
    expect(await page.locator('#transcript .turn[data-seq="1"] li[data-tool="listProduct"]').count()).toBeGreaterThan(0);
    expect(await page.textContent('#transcript h4')).toContain(`${transcript.credits} credits`);
  });

  it("shows each running session's MCP servers with their statuses, and the configured servers", async () => {
    const user = await userIdentity(app, base, 'mcp-watcher');
    const chat = new ChatClient(base, user);
    try {
      await chat.connect();
      await page.goto(`${origin}/_/#/agent`);
      const server = (name: string) => page.locator(`#agent-sessions tr[data-key="${user.id}"] li[data-mcp-server="${name}"]`);
      // The list refreshes every 5 s; the button makes it at once.
      await expect
        .poll(
          async () => {
            await page.click('#sessions-refresh');
            return Promise.all(
              ['catalogue', 'down'].map((n) =>
                server(n)
                  .getAttribute('data-mcp-status', { timeout: 1000 })
                  .catch(() => null),
              ),
            );
          },
          { timeout: 10_000 },
        )
        .toEqual(['connected', 'failed']);
      expect(await server('catalogue').textContent()).toBe('catalogue: connected');
      expect(await page.textContent('#mcp-servers tr[data-key="catalogue"] td[data-col="transport"]')).toBe('http');
      expect(await page.textContent('#mcp-servers tr[data-key="down"] td[data-col="usable"]')).toBe('true');
      expect(await page.textContent('#mcp-servers')).not.toContain('127.0.0.1');
    } finally {
      chat.stop();
    }
  });

  it('sets a cap, pauses and resumes, tops up, and charts credits per day', async () => {
    await page.goto(`${origin}/_/#/agent`);
    await page.waitForSelector('#credits-mode:text-is("self-serve")');
    const before = (await api('GET', '/_agent/credits')).json;
    expect(await page.textContent('#credits-value')).toBe(String(before.credits));
    expect(before.credits).toBeLessThan(BALANCE); // the transcript's turn was charged

    await page.fill('#cap-input', '90000');
    await page.click('#set-cap');
    await page.waitForSelector('#credits-cap:text-is("90000")');
    expect((await api('GET', '/_agent/credits')).json.monthlyCap).toBe(90000);

    await page.click('#toggle-pause');
    await page.waitForSelector('#credits-paused:text-is("yes")');
    expect((await api('GET', '/_agent/credits')).json.paused).toBe(true);
    expect(await page.textContent('#toggle-pause')).toBe('Resume');
    await page.click('#toggle-pause');
    await page.waitForSelector('#credits-paused:text-is("no")');
    expect((await api('GET', '/_agent/credits')).json.paused).toBe(false);

    await page.fill('#topup-input', '500');
    await page.click('#topup');
    await page.waitForSelector(`#credits-value:text-is("${before.credits + 500}")`);
    expect((await api('GET', '/_agent/credits')).json.credits).toBe(before.credits + 500);

    await page.waitForSelector('#usage-chart .uplot canvas');
    expect(await page.textContent('#usage-chart .u-legend')).toMatch(/all credits[\s\S]*turn[\s\S]*ask[\s\S]*compact/);
  });

  it('shows health: readiness, applied and pending migrations, the version and the instances', async () => {
    const status = (await api('GET', '/_admin/status')).json;
    await page.goto(`${origin}/_/#/health`);
    await page.waitForSelector('#migrations-applied');
    expect(await page.textContent('#ready-status')).toContain('Ready');
    expect(await page.locator('#migrations-applied li').allTextContents()).toEqual(status.migrations.applied);
    expect(status.migrations.applied.length).toBeGreaterThan(0);
    expect(await page.textContent('#migrations-pending')).toBe('none');
    expect(await page.textContent('#svc-version')).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    expect(await page.textContent('#status-app')).toBe(`shop on ${backend}`);
    const self = status.instances.find((i: { self: boolean }) => i.self);
    expect(await page.textContent(`#status-instances tr[data-key="${self.instance}"] td[data-col="self"]`)).toBe('true');
  });
});
