/**
 * The shop's chat widget (examples/shop/public/index.html, issue 13 "Beyond the seed") in a real
 * browser: Debian's Chromium through playwright-core signs in on /login, lands on the widget, which
 * follows the SPEC §4.12 flow over a raw WebSocket and the shop's agentConnect function. A scripted
 * model server streams an answer with markdown (and an HTML tag that must stay text), calls the UI tool
 * showProduct, which the page answers by showing the product, then finishes; the thread list resumes
 * the conversation. Reloaded in the middle of a long answer, the page shows the answer so far (the
 * `history` of the running turn, DESIGN §7a) and keeps streaming it.
 * With `getProduct` set to ask (the shop's read-only tools never ask under its
 * `ask-writes`), the widget shows an approval request with Approve / Deny: an approved call runs, a
 * denied one reaches the model as declined. A pasted screenshot and a dropped PDF become attachment
 * chips, are uploaded, and reach the model as image and file parts (DESIGN §7a).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { pino } from 'pino';
import { launchChromium } from '../support/browser.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, createUser } from '../support/auth.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { makePdf, png } from '../support/files.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');

let app: PreparedApp;
let model: ModelServer;
let server: RunningServer;
let origin: string;
let productId: string;
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;

beforeAll(async () => {
  model = await startModelServer();
  app = await prepareApp(SHOP, 'sqlite', (dir) => {
    const svc = JSON.parse(readFileSync(join(dir, 'svc.json'), 'utf8'));
    svc.agent.approval.tools = { getProduct: 'ask' };
    writeFileSync(join(dir, 'svc.json'), JSON.stringify(svc, null, 2));
  });
  server = await startServer({ appDir: app.dir, port: 0, env: { ...process.env, ...app.env, SHOP_MODEL_URL: model.url }, logger: pino({ level: 'silent' }) });
  origin = server.url.replace(/\/api$/, '');
  const admin = await adminIdentity(app, server.url);
  const created = await fetch(`${server.url}/Product`, {
    method: 'POST',
    headers: { ...admin.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ sku: 'K-1', name: 'Blue Kettle', price: 24.5, stock: 3, category: 'kitchen', active: true }),
  });
  expect(created.status).toBe(201);
  productId = (await created.json()).data[0];
  await createUser(app, 'shopper', 'shopper-password-1');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await model?.close();
  await app?.cleanup();
});

describe('the shop chat widget in Chromium', () => {
  it('signs in, chats with a streamed markdown answer, answers a UI tool by showing the product, and resumes the thread', async () => {
    const page = await signedIn();

    model.script(
      { text: ['Let me show you the **Blue', ' Kettle**. ', '<b>raw</b>'], toolCalls: [{ name: 'showProduct', args: { id: productId } }] },
      { text: ['It is ', 'on the page.'], delayMs: 20 },
    );
    await page.fill('#text', 'Show me a kettle');
    await page.click('#send button');

    await expect.poll(() => page.textContent('#shown .card h4'), { timeout: 15_000 }).toBe('Blue Kettle — 24.5');
    await expect.poll(() => page.locator('.assistant').last().textContent(), { timeout: 15_000 }).toBe('It is on the page.');
    await expect.poll(() => page.textContent('#status')).toBe('Assistant: idle');
    // Markdown rendered, HTML from the model kept as text.
    const first = page.locator('.assistant').first();
    expect(await first.locator('strong').textContent()).toBe('Blue Kettle');
    expect(await first.locator('b').count()).toBe(0);
    expect(await first.textContent()).toContain('<b>raw</b>');
    // The UI tool's result reached the model; the model saw the user's message and the shop's tools.
    const last = model.requests.at(-1)!.body;
    expect(String(last.messages.find((m) => m.role === 'tool')!.content)).toContain('"shown":true');
    expect(last.messages.some((m) => m.role === 'user' && m.content === 'Show me a kettle')).toBe(true);
    expect(last.tools!.map((t) => t.function.name)).toEqual(expect.arrayContaining(['listProduct', 'getProduct', 'listRates', 'showProduct', 'update_plan']));
    expect(last.tools!.map((t) => t.function.name)).not.toContain('deleteProduct');

    // A new conversation, then the list of past ones resumes the first.
    await page.click('#new-thread');
    await page.click('#list-threads');
    await expect.poll(() => page.locator('.thread').count()).toBe(1);
    expect(await page.locator('.thread').first().textContent()).toContain('Show me a kettle');
    await page.locator('.thread').first().click();
    await expect.poll(() => page.locator('#log .user').first().textContent()).toBe('Show me a kettle');
    expect(await page.locator('#log .assistant').last().textContent()).toBe('It is on the page.');
    await page.close();
  });

  it('reloaded in the middle of a long answer, shows the answer so far and keeps streaming (DESIGN §7a)', async () => {
    const page = await browser!.context.newPage();
    await page.goto(`${origin}/`);
    await expect.poll(() => page.textContent('#status'), { timeout: 10_000 }).toBe('Assistant: idle');
    const deltas = Array.from({ length: 60 }, (_, i) => `word${i} `);
    const full = deltas.join('').trim();
    model.script({ text: deltas, delayMs: 80 });
    await page.fill('#text', 'Tell me a long story');
    await page.click('#send button');
    await expect.poll(() => page.locator('.assistant').last().textContent(), { timeout: 10_000 }).toContain('word5 ');

    await page.reload();
    // The first text shown after the reload is the answer so far: more than nothing, less than all.
    const first = await expect
      .poll(async () => ((await page.locator('.assistant').count()) > 0 ? await page.locator('.assistant').last().textContent() : ''), { timeout: 10_000 })
      .toMatch(/word\d/)
      .then(() => page.locator('.assistant').last().textContent());
    expect(full.startsWith(first!.trim())).toBe(true);
    expect(first!.trim().length).toBeLessThan(full.length);
    expect(await page.locator('#log .user').last().textContent()).toBe('Tell me a long story');
    // It keeps streaming into the same answer, to the end.
    await expect.poll(async () => (await page.locator('.assistant').last().textContent())?.trim(), { timeout: 15_000 }).toBe(full);
    await expect.poll(() => page.textContent('#status')).toBe('Assistant: idle');
    // One answer, shown once: nothing of it was repeated or left out between the history and the live frames.
    expect(await page.locator('.assistant', { hasText: 'word0 ' }).count()).toBe(1);
    await page.close();
  });

  it('takes a pasted image and a dropped PDF as attachments: uploads them, shows chips, and the model receives them (DESIGN §7a)', async () => {
    const page = await signedIn();
    await page.click('#new-thread');
    const image = await png(6, 4);
    const pdf = makePdf('Receipt 77 kettle');
    // A screenshot pasted into the text field, a PDF dropped on the conversation: real DataTransfer events.
    await page.evaluate(
      ({ image, pdf }) => {
        const file = (b64: string, name: string, type: string) => new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name, { type });
        const pasted = new DataTransfer();
        pasted.items.add(file(image, 'screenshot.png', 'image/png'));
        document.getElementById('text')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: pasted, bubbles: true, cancelable: true }));
        const dropped = new DataTransfer();
        dropped.items.add(file(pdf, 'receipt.pdf', 'application/pdf'));
        document.querySelector('main')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dropped, bubbles: true, cancelable: true }));
      },
      { image: image.toString('base64'), pdf: pdf.toString('base64') },
    );
    await expect.poll(() => page.locator('#chips .chip[data-state=ready]').count(), { timeout: 10_000 }).toBe(2);
    expect(await page.locator('#chips .chip').allTextContents()).toEqual([expect.stringContaining('screenshot.png'), expect.stringContaining('receipt.pdf')]);
    model.script({ text: ['A kettle receipt.'] });
    await page.fill('#text', 'What are these?');
    await page.click('#send button');
    await expect.poll(() => page.locator('.assistant').last().textContent(), { timeout: 15_000 }).toBe('A kettle receipt.');
    expect(await page.locator('#chips .chip').count()).toBe(0);
    const user = model.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'user')
      .at(-1)!;
    expect(user.content).toEqual([
      { type: 'text', text: 'What are these?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${image.toString('base64')}` } },
      { type: 'file', file: { filename: 'receipt.pdf', file_data: `data:application/pdf;base64,${pdf.toString('base64')}` } },
    ]);
    // The message shows the image (its signed url after a resume; the same bytes).
    await page.click('#list-threads');
    await expect.poll(() => page.locator('.thread', { hasText: 'What are these?' }).count()).toBe(1);
    await page.locator('.thread', { hasText: 'What are these?' }).click();
    await expect.poll(() => page.locator('#log .user img').count(), { timeout: 10_000 }).toBe(1);
    const src = await page.locator('#log .user img').getAttribute('src');
    expect(src).toMatch(/^\/api\/_agent\/uploads\/[0-9a-f-]{36}\?v=.*&exp=\d+&sig=/);
    expect(Buffer.from(await (await fetch(`${origin}${src}`)).arrayBuffer()).equals(image)).toBe(true);
    expect(await page.locator('#log .user a', { hasText: 'receipt.pdf' }).count()).toBe(1);
    await page.close();
  });

  /** A new page signed in as the shopper, the widget idle. */
  async function signedIn() {
    const page = await browser!.context.newPage();
    await page.goto(`${origin}/login?returnUrl=${encodeURIComponent('/')}`);
    await page.fill('#username', 'shopper');
    await page.fill('#password', 'shopper-password-1');
    await Promise.all([page.waitForURL(`${origin}/`), page.click('button[type=submit]')]);
    await expect.poll(() => page.textContent('#status'), { timeout: 10_000 }).toBe('Assistant: idle');
    return page;
  }
  /** The content of the last tool result the model was sent. */
  const lastToolResult = () =>
    String(
      model.requests
        .at(-1)!
        .body.messages.filter((m) => m.role === 'tool')
        .at(-1)!.content,
    );

  it('shows an approval request with Approve / Deny: an approved call runs, a denied one is declined', async () => {
    const page = await signedIn();

    model.script({ toolCalls: [{ name: 'getProduct', args: { id: productId } }] }, { text: ['It costs 24.5.'] });
    await page.fill('#text', 'What does the kettle cost?');
    await page.click('#send button');
    const first = page.locator('.approval').first();
    await expect.poll(() => first.textContent(), { timeout: 15_000 }).toContain(`Read product #${productId}`);
    await first.locator('button', { hasText: 'Approve' }).click();
    await expect.poll(() => first.locator('.answer').textContent(), { timeout: 15_000 }).toBe('Approved');
    await expect.poll(() => page.locator('.assistant').last().textContent(), { timeout: 15_000 }).toBe('It costs 24.5.');
    expect(lastToolResult()).toContain('Blue Kettle');

    model.script({ toolCalls: [{ name: 'getProduct', args: { id: productId } }] }, { text: ['As you wish.'] });
    await page.fill('#text', 'Look again');
    await page.click('#send button');
    const second = page.locator('.approval').nth(1);
    await expect.poll(() => second.count(), { timeout: 15_000 }).toBe(1);
    await second.locator('button', { hasText: 'Deny' }).click();
    await expect.poll(() => second.locator('.answer').textContent(), { timeout: 15_000 }).toBe('Declined');
    await expect.poll(() => page.locator('.assistant').last().textContent(), { timeout: 15_000 }).toBe('As you wish.');
    expect(lastToolResult()).toContain('the user declined');
    await page.close();
  });
});
