/**
 * @module Launches the system Chromium (found or installed by the global set-up, see chromium.ts)
 * through playwright-core, headless, with a fresh profile that `close()` removes.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { DEBIAN_CHROMIUM } from './chromium.js';

/** The browser the global set-up found (`SVC_TEST_CHROMIUM`), else Debian's. */
export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? DEBIAN_CHROMIUM;

/**
 * A headless Chromium with a fresh profile (`--user-data-dir`); `close()` stops it and deletes the profile.
 * @param extraArgs - more command-line switches, e.g. `--host-resolver-rules=MAP club.example 127.0.0.1`
 * @param ignoreHTTPSErrors - accept any certificate (a test's self-signed one)
 */
export async function launchChromium(extraArgs: string[] = [], ignoreHTTPSErrors = false): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = mkdtempSync(join(tmpdir(), 'svc-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      ignoreHTTPSErrors,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        ...extraArgs,
      ],
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Opens the console at `origin` (`http://127.0.0.1:<port>`, no `/api`) in a new page of `context` and
 * signs in with a service account's client id and secret; resolves once the signed-in header shows.
 */
export async function consoleAsServiceAccount(context: BrowserContext, origin: string, sa: { clientId: string; clientSecret: string }): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}/_/`);
  await page.click('#signin-service');
  await page.fill('#signin-first', sa.clientId);
  await page.fill('#signin-second', sa.clientSecret);
  await page.click('button[type=submit]');
  await page.waitForSelector('#who');
  return page;
}
