/**
 * The console's Jobs page (DESIGN §9, §12) in Chromium through playwright-core, against a spawned
 * `svc serve` of the jobs fixture, once per backend, signed in as an admin service account: a job
 * that always fails (`broken`, maxAttempts 1) shows under "failed" with its last error; "Retry now"
 * runs it again (its record shows the new failure), "Discard" removes it (gone from the API too), and
 * "Retry all failed" makes every failed job run again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { consoleAsServiceAccount, launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { backends } from '../support/backends.js';
import { createServiceAccount, serviceAccountToken, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';

let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.each(backends())('the console Jobs page on %s', (backend) => {
  let app: PreparedApp;
  let server: TestServer;
  let base: string;
  let origin: string;
  let admin: Identity;
  let page: Page;
  const api = (method: string, path: string, body?: unknown) => call(base, method, path, body, admin.headers);
  /** Enqueues a job that fails on its only attempt and waits until it is kept as failed. */
  const failedJob = async (title: string) => {
    const r = await call(base, 'POST', '/_invoke/start', { title, maxAttempts: 1 });
    expect(r.status, r.text).toBe(200);
    await waitFor(async () => (await api('GET', `/_admin/jobs/${r.json.id}`)).json.state === 'failed', 10_000);
    return r.json.id as string;
  };
  const attemptsOf = async (id: string) => (await api('GET', `/_admin/jobs/${id}`)).json;

  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/jobs'), backend);
    server = await serve(app.dir, { ...app.env, SVC_LOG_LEVEL: 'warn' });
    base = server.url;
    origin = base.replace(/\/api$/, '');
    const sa = await createServiceAccount(app, 'console-admin', { admin: true });
    admin = await serviceAccountToken(base, sa.clientId, sa.clientSecret);
    await browser.context.clearCookies();
    page = await consoleAsServiceAccount(browser.context, origin, sa);
  }, 120_000);
  afterAll(async () => {
    await page?.close();
    await server?.close();
    await app?.cleanup();
  });

  it('shows a failed job with its last error; Retry, Discard and Retry all failed work', async () => {
    const first = await failedJob(`broken one ${backend}`);
    const second = await failedJob(`broken two ${backend}`);
    await page.goto(`${origin}/_/#/jobs`);
    await page.click('#jobs-state-failed');
    const cell = page.locator(`#jobs-table tr[data-key="${first}"] td[data-col="lastError"]`);
    await expect.poll(() => cell.textContent(), { timeout: 5000 }).toContain('broken on attempt 1');
    expect(await page.textContent('[data-count="failed"]')).toBe('2');

    // Retry now: the job runs again and fails again (its record shows a new runAt).
    const before = await attemptsOf(first);
    await page.click(`#jobs-table tr[data-key="${first}"]`);
    await page.waitForSelector(`#job-panel[data-job="${first}"]`);
    await page.click('#job-retry');
    await page.waitForSelector(`#jobs-note:text-is("job ${first} is due again")`);
    const after = await waitFor(async () => {
      const j = await attemptsOf(first);
      return j.state === 'failed' && j.runAt !== before.runAt ? j : null;
    }, 10_000);
    expect(after).toMatchObject({ attempts: 1, lastError: expect.stringContaining('broken on attempt 1') });

    // Discard: gone from the page and the API.
    await page.click(`#jobs-table tr[data-key="${second}"]`);
    await page.waitForSelector(`#job-panel[data-job="${second}"]`);
    await page.click('#job-discard');
    await page.waitForSelector(`#jobs-note:text-is("job ${second} was discarded")`);
    expect((await api('GET', `/_admin/jobs/${second}`)).status).toBe(404);
    await page.locator(`#jobs-table tr[data-key="${second}"]`).waitFor({ state: 'detached' });

    // Retry all failed: the remaining failed job is due again, then fails again.
    const runAt = (await attemptsOf(first)).runAt;
    await page.click('#jobs-retry-failed');
    await page.waitForSelector('#jobs-note:text-is("every failed job is due again")');
    await waitFor(async () => {
      const j = await attemptsOf(first);
      return j.state === 'failed' && j.runAt !== runAt;
    }, 10_000);
  }, 60_000);
});
