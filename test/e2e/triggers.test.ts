/**
 * Triggers end to end (DESIGN §12, issue 33 §1–§3), on test/fixtures/apps/triggers, once per backend
 * (SQLite: SQL triggers writing `_svc_jobs`; PostgreSQL: plpgsql triggers calling Graphile Worker's `add_job`).
 * - Every HTTP write path is captured in its transaction: POST one and bulk, nested children, PATCH, PUT,
 *   DELETE one and bulk, and a function's writes; each event reaches the trigger's function once, with
 *   `ctx.event` = the body, the caller of the write as `callerId`, `before`/`after` shaped as a GET answers.
 * - `filter` and `changed` narrow what fires.
 * - A trigger function mails a receipt through the app's mail settings (`ctx.mail`, a real SMTP server on
 *   loopback); a list of addresses, a subject with CR/LF, an oversized text or a NUL are refused.
 * - A row of 360,000 characters with quotes, backslashes, emoji and a lone surrogate arrives in the
 *   event exactly as a GET answers it.
 * - A rolled-back write never fires: a bulk POST with one bad row, a bad PATCH, a bulk DELETE with an
 *   unknown id, children with one bad child.
 * - A function that throws twice runs three times (back-off) and succeeds once.
 * - A trigger whose function updates the row that fired it stops at the depth bound (8).
 * - A webhook trigger POSTs the event signed per Standard Webhooks: the receiver verifies every request,
 *   a tampered body fails verification, a 500 answer is retried with the same `webhook-id`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { waitFor } from '../support/wait.js';
import { startSmtp, type TestSmtp } from '../support/smtp.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

interface Seen {
  eventId: string;
  trigger: string;
  op: string;
  collection: string;
  rowId: string;
  callerId: string | null;
  attempt: number;
  before: string | null;
  after: string | null;
}

interface Delivery {
  id: string;
  body: string;
  verified: boolean;
  tamperedVerified: boolean;
}

/** A webhook receiver on loopback: verifies each request; answers 500 to the first delivery of a "hook-retry…" order. */
async function receiver(secret: string): Promise<{ server: Server; url: string; got: Delivery[] }> {
  const got: Delivery[] = [];
  const wh = new Webhook(secret);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      };
      const ok = (b: string) => {
        try {
          wh.verify(b, headers);
          return true;
        } catch {
          return false;
        }
      };
      const d: Delivery = { id: headers['webhook-id'], body, verified: ok(body), tamperedVerified: ok(body.replace('hook', 'HOOK')) };
      got.push(d);
      const event = JSON.parse(body) as { after: { title: string } };
      const first = got.filter((x) => x.id === d.id).length === 1;
      res.statusCode = event.after.title.startsWith('hook-retry') && first ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, got };
}

function suite(backend: Backend): void {
  describe(`triggers on ${backend}`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let hooks: Awaited<ReturnType<typeof receiver>>;
    let smtp: TestSmtp;
    let admin: Identity;
    let alice: Identity;
    let bob: Identity;
    const as = (who: Identity | null, method: string, url: string, body?: unknown) => call(server.url, method, url, body, who ? who.headers : {});
    const seen = async () => (await as(null, 'GET', '/Seen?pageSize=1000')).json.data as Seen[];
    const pendingJobs = async () => {
      const r = await as(admin, 'GET', '/_admin/jobs?limit=1000');
      expect(r.status, r.text).toBe(200);
      return r.json.data as { task: string; state: string }[];
    };
    const settled = () => waitFor(async () => (await pendingJobs()).every((j) => j.state === 'failed'), 30_000);
    const created = async (who: Identity, collection: string, body: unknown) => {
      const r = await as(who, 'POST', `/${collection}`, body);
      expect(r.status, r.text).toBe(201);
      return r.json.data as string[];
    };

    beforeAll(async () => {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      hooks = await receiver(secret);
      smtp = await startSmtp();
      // The app's mail settings (DESIGN §11), which ctx.mail uses.
      app = await prepareApp(join(ROOT, 'test/fixtures/apps/triggers'), backend, (dir) =>
        writeFileSync(
          join(dir, 'svc.json'),
          JSON.stringify({ name: 'triggers', jobs: { pollIntervalMs: 200 }, mail: { from: 'Shop <shop@example.com>', smtp: { url: '${env.SMTP_URL}' } } }),
        ),
      );
      const env = { ...process.env, ...app.env, HOOK_URL: hooks.url, SVC_SECRET_HOOK: secret, SMTP_URL: smtp.url };
      server = await startServer({ appDir: app.dir, port: 0, env });
      admin = await adminIdentity(app, server.url);
      alice = await userIdentity(app, server.url, 'alice');
      bob = await userIdentity(app, server.url, 'bob');
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
      hooks?.server.close();
      await smtp?.close();
    });

    it('captures every HTTP and function write path with the caller, once each', async () => {
      const [a1] = await created(alice, 'Order', { title: 'a1' });
      const [b1, b2] = await created(alice, 'Order', [{ title: 'b1' }, { title: 'b2' }]);
      const [c1] = await created(alice, 'Order', { title: 'c1', 'Line.order': [{ name: 'l1' }, { name: 'l2' }] });
      const lines = (await as(null, 'GET', `/Line?filter=order eq "${c1}"&sortBy=name`)).json.data as { id: string }[];
      expect(lines).toHaveLength(2);
      expect((await as(bob, 'PATCH', `/Order/${a1}`, { paid: true })).status).toBe(200);
      expect((await as(bob, 'PUT', `/Order/${b1}`, { title: 'b1x' })).status).toBe(200);
      expect((await as(bob, 'PATCH', `/Order/${a1}`, { total: 3 })).status).toBe(200);
      expect((await as(bob, 'DELETE', `/Line/${lines[0].id}`)).status).toBe(204);
      expect((await as(bob, 'DELETE', '/Order', [b2])).status).toBe(204);
      const f = await as(alice, 'POST', '/_invoke/makeOrder', { title: 'f1' });
      expect(f.status, f.text).toBe(200);
      const f1 = f.json.id as string;
      const want = [
        ['orders', 'create', 'Order', a1, alice.id],
        ['orders', 'create', 'Order', b1, alice.id],
        ['orders', 'create', 'Order', b2, alice.id],
        ['orders', 'create', 'Order', c1, alice.id],
        ['lines', 'create', 'Line', lines[0].id, alice.id],
        ['lines', 'create', 'Line', lines[1].id, alice.id],
        ['orders', 'update', 'Order', a1, bob.id],
        ['paid', 'update', 'Order', a1, bob.id],
        ['orders', 'update', 'Order', b1, bob.id],
        ['orders', 'update', 'Order', a1, bob.id],
        ['lines', 'delete', 'Line', lines[0].id, bob.id],
        ['orders', 'delete', 'Order', b2, bob.id],
        ['orders', 'create', 'Order', f1, alice.id],
        ['orders', 'update', 'Order', f1, alice.id],
      ]
        .map((x) => x.join(' '))
        .sort();
      const key = (s: Seen) => [s.trigger, s.op, s.collection, s.rowId, s.callerId].join(' ');
      await waitFor(async () => (await seen()).length >= want.length, 30_000);
      await settled();
      const all = await seen();
      expect(all.map(key).sort()).toEqual(want);
      expect(new Set(all.map((s) => s.eventId)).size).toBe(all.length);
      expect(all.every((s) => s.attempt === 1)).toBe(true);
      // before/after as a GET answers them: booleans, numbers, ISO times, createdBy.
      const paid = all.find((s) => s.trigger === 'paid')!;
      const before = JSON.parse(paid.before!);
      const after = JSON.parse(paid.after!);
      expect(before).toMatchObject({ id: a1, title: 'a1', paid: false, createdBy: alice.id });
      expect(after).toMatchObject({ id: a1, title: 'a1', paid: true, total: null });
      expect(after.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      const gone = all.find((s) => s.op === 'delete' && s.collection === 'Order')!;
      expect(gone.after).toBeNull();
      expect(JSON.parse(gone.before!)).toMatchObject({ id: b2, title: 'b2' });
      const put = all.find((s) => s.op === 'update' && s.rowId === b1)!;
      expect([JSON.parse(put.before!).title, JSON.parse(put.after!).title]).toEqual(['b1', 'b1x']);
    }, 60_000);

    it('mails the receipt of a paid order through the app mail settings (ctx.mail)', async () => {
      const [id] = await created(alice, 'Order', { title: 'mail-me' });
      expect((await as(bob, 'PATCH', `/Order/${id}`, { paid: true })).status).toBe(200);
      const mail = await smtp.next('buyer@example.com', 'Receipt for mail-me');
      expect(mail.text).toContain(`Order ${id} is paid.`);
      // Hostile input is refused naming the field, and nothing is sent.
      const before = smtp.mails.length;
      for (const [body, field] of [
        [{ to: 'a@example.com, b@example.com', subject: 's', text: 't' }, 'to must be one e-mail address'],
        [{ to: 'a@example.com', subject: 'x\r\nBcc: evil@example.com', text: 't' }, 'subject must be one line'],
        [{ to: 'a@example.com', subject: 's', text: 'x'.repeat(100_001) }, 'text must be a string'],
        [{ to: 'a@example.com', subject: 's', text: 'nul \u0000' }, 'text must be a string'],
        [{}, 'to must be one e-mail address'],
      ] as const) {
        const r = await as(alice, 'POST', '/_invoke/mailTo', body);
        expect(r.status, r.text).toBe(200);
        expect(r.json.error).toContain(field);
      }
      const ok = await as(alice, 'POST', '/_invoke/mailTo', { to: 'c@example.com', subject: 'Hi \ud83d\ude00', text: 'lone \ud800 surrogate' });
      expect(ok.json).toEqual({ result: { sent: true } });
      await smtp.next('c@example.com', 'Hi');
      expect(smtp.mails.length).toBe(before + 1);
    }, 60_000);

    it('delivers a large row with odd strings as a GET answers it', async () => {
      const title = `big ${'é😀\'"\\'.repeat(60_000)} lone \ud800 end`;
      const r = await as(alice, 'POST', '/Order', { title });
      expect(r.status, r.text.slice(0, 300)).toBe(201);
      const id = r.json.data[0] as string;
      const s = await waitFor(async () => (await seen()).find((x) => x.rowId === id), 30_000);
      const stored = (await as(null, 'GET', `/Order/${id}`)).json.title as string;
      expect(stored.length).toBeGreaterThan(350_000);
      expect(JSON.parse(s.after!).title).toBe(stored);
    }, 60_000);

    it('never fires for a rolled-back write', async () => {
      const before = (await seen()).length;
      const [keep] = await created(alice, 'Order', { title: 'rb-keep' });
      expect((await as(alice, 'POST', '/Order', [{ title: 'rb-1' }, { title: 'rb-2', total: -1 }])).status).toBe(400);
      expect((await as(alice, 'POST', '/Order', { title: 'rb-3', 'Line.order': [{ name: 'ok' }, { name: 7 }] })).status).toBe(400);
      expect((await as(alice, 'PATCH', `/Order/${keep}`, { total: -5 })).status).toBe(400);
      expect((await as(alice, 'DELETE', '/Order', [keep, '0190f0f0-0000-7000-8000-000000000000'])).status).toBe(404);
      // A marker after them: once its event is in, the ones before would be too.
      const [marker] = await created(alice, 'Order', { title: 'rb-marker' });
      await waitFor(async () => (await seen()).some((s) => s.rowId === marker), 30_000);
      await settled();
      const fresh = (await seen()).slice(before);
      const titles = fresh.map((s) => JSON.parse((s.after ?? s.before)!).title as string).sort();
      expect(titles).toEqual(['rb-keep', 'rb-marker']);
    }, 60_000);

    it('retries a failing function with back-off, then succeeds once', async () => {
      const t0 = Date.now();
      const [id] = await created(alice, 'Order', { title: 'flaky-1' });
      const s = await waitFor(async () => (await seen()).find((x) => x.rowId === id), 40_000);
      expect(s.attempt).toBe(3);
      // Back-off exp(min(n, 10)) s after the n-th failure: e¹ + e² ≈ 10.1 s before the third attempt.
      expect(Date.now() - t0).toBeGreaterThan(9_500);
      await settled();
      expect((await seen()).filter((x) => x.rowId === id)).toHaveLength(1);
    }, 60_000);

    it('stops a trigger that keeps firing itself at the depth bound', async () => {
      const [id] = await created(alice, 'Counter', { n: 0 });
      expect((await as(alice, 'PATCH', `/Counter/${id}`, { n: 1 })).status).toBe(200);
      // The request's change (depth 0) and the changes of depths 1–8 are delivered: 9 bumps.
      await waitFor(async () => (await as(null, 'GET', `/Counter/${id}`)).json.n === 10, 30_000);
      await settled();
      await new Promise((ok) => setTimeout(ok, 500));
      expect((await as(null, 'GET', `/Counter/${id}`)).json.n).toBe(10);
      const logs = await as(admin, 'GET', '/_admin/logs?kind=job&limit=200');
      expect(logs.status, logs.text).toBe(200);
      expect(JSON.stringify(logs.json)).toContain('deeper than 8: not delivered');
    }, 60_000);

    it('signs webhook deliveries per Standard Webhooks and retries a 500', async () => {
      const [id] = await created(alice, 'Order', { title: 'hook-1' });
      const [retry] = await created(alice, 'Order', { title: 'hook-retry' });
      await created(alice, 'Order', { title: 'no hook' });
      const of = (rowId: string) => hooks.got.filter((d) => JSON.parse(d.body).rowId === rowId);
      await waitFor(() => of(id).length === 1 && of(retry).length === 2, 30_000);
      for (const d of hooks.got) {
        expect(d.verified).toBe(true);
        expect(d.tamperedVerified).toBe(false);
      }
      const [first, second] = of(retry);
      expect(second.id).toBe(first.id);
      expect([JSON.parse(first.body).attempt, JSON.parse(second.body).attempt]).toEqual([1, 2]);
      expect(JSON.parse(of(id)[0].body)).toMatchObject({ trigger: 'hook', op: 'create', collection: 'Order', callerId: alice.id, before: null });
      expect(hooks.got.every((d) => JSON.parse(d.body).after.title.startsWith('hook'))).toBe(true);
    }, 60_000);
  });
}

for (const backend of backends()) suite(backend);
