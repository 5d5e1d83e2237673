/**
 * The console's data grid on 100,000 rows of the shop (issue 23 "Tests and figures"), against a
 * spawned `svc serve` on SQLite: the rows go into the app's SQLite file in one INSERT … SELECT (the
 * shop's search triggers index them as any insert would), then Chromium opens the grid, which knows
 * the count from the first page and is scrolled to the end, every page fetched by its keyset cursor
 * (`lastKey`). Prints and checks the time to first render and the time to reach the end. SQLite only:
 * the grid's paging is the same on both backends, and console.test.ts runs it on each with 5,000 rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { consoleAsServiceAccount, launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { createServiceAccount } from '../support/auth.js';
import { openDatabase } from '../../dist/runtime/data/database.js';
import { sql } from '../../dist/runtime/query/sql.js';

const ROWS = 100_000;
/** Row n's id: UUID-shaped, in id order (keyset paging walks ids). */
const idOf = (n: number) => `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`;

describe('the data grid on 100,000 rows (sqlite)', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let app: PreparedApp;
  let server: TestServer;
  let origin: string;
  let page: Page;

  beforeAll(async () => {
    [browser, app] = await Promise.all([launchChromium(), prepareApp(join(ROOT, 'examples/shop'), 'sqlite')]);
    server = await serve(app.dir, { ...app.env, SHOP_MODEL_URL: 'http://127.0.0.1:9/v1', SVC_LOG_LEVEL: 'warn' });
    origin = server.url.replace(/\/api$/, '');
    const db = await openDatabase('sqlite', app.env.DATABASE_URL!);
    try {
      const now = new Date();
      await db.query(sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS - 1})
        INSERT INTO "Product" ("id", "sku", "name", "description", "price", "stock", "category", "active", "createdAt", "updatedAt")
        SELECT printf('00000000-0000-7000-8000-%012d', i), printf('B-%06d', i), 'Bulk ' || i, NULL, i % 97, 1, 'tools', 1, ${now}, ${now} FROM n`);
    } finally {
      await db.close();
    }
    const sa = await createServiceAccount(app, 'grid-admin', { admin: true });
    page = await consoleAsServiceAccount(browser.context, origin, sa);
    await page.waitForSelector('#sidebar'); // the model is loaded: the data page has picked its first resource
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await server?.close();
    await app?.cleanup();
  });

  it('renders the first rows, then scrolls to the last of 100,000 rows through keyset cursors', async () => {
    const lists: string[] = [];
    page.on('request', (r) => {
      if (/\/api\/Product\?/.test(r.url())) lists.push(r.url());
    });
    const started = Date.now();
    await page.goto(`${origin}/_/#/data/Product`);
    await page.waitForSelector('#grid .grid-row .td[data-col="name"]:text-is("Bulk 0")');
    const firstRender = Date.now() - started;
    expect(await page.textContent('#row-count')).toBe(`${ROWS} rows`);
    expect(await page.locator('#grid .grid-row').count()).toBeLessThan(120); // virtualized

    const scrolling = Date.now();
    await expect
      .poll(
        async () => {
          await page.$eval('#grid', (el) => el.scrollTo(0, el.scrollHeight));
          return page.getAttribute('#grid', 'data-rows');
        },
        { timeout: 120_000, intervals: [100] },
      )
      .toBe(String(ROWS));
    await page.waitForSelector(`#grid .td[data-col="name"]:text-is("Bulk ${ROWS - 1}")`);
    const toEnd = Date.now() - scrolling;
    // Every page after the first by keyset cursor, each cursor the id of the previous page's last row.
    const cursors = lists.slice(1).map((u) => new URL(u).searchParams.get('lastKey'));
    expect(lists[0]).toContain('count=true');
    expect(cursors.every((c) => c !== null && /^00000000-0000-7000-8000-\d{12}$/.test(c))).toBe(true);
    const pageSize = Number(new URL(lists[0]).searchParams.get('pageSize'));
    expect(cursors).toContain(idOf(ROWS - pageSize - 1));
    expect(lists.length).toBe(ROWS / pageSize + 1); // the last request answers no rows
    console.log(`console grid on ${ROWS} rows (sqlite): first render ${firstRender} ms, end reached in ${toEnd} ms, ${lists.length} pages of ${pageSize}`);
    expect(firstRender).toBeLessThan(10_000);
  });
});
