/**
 * The server survives its PostgreSQL going away (issue 10): `svc serve` examples/shop on a private
 * PostgreSQL (test/support/pg-cluster.ts), 30 loopback clients sending GETs and POSTs for a
 * bounded time, while the database restarts twice and stops for 3 s once. The process never exits
 * and never answers 500; while the database is down every request answers 503 SERVICE_UNAVAILABLE
 * with `Retry-After` and `/api/_ready` answers 503; once it is back, service resumes within 1.5 s.
 * Every wait is bounded: a crashed server fails the test at once with its output.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT, runCli, serve, type TestServer } from '../support/cli.js';
import { adminIdentity } from '../support/auth.js';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.js';

const CLIENTS = 30;
const REQUEST_TIMEOUT_MS = 5000;
const RESUME_DEADLINE_MS = 1500;
const DOWN_MS = 3000;

/** One answer seen by the load (status 0: no HTTP answer at all). */
interface Seen {
  at: number;
  method: string;
  status: number;
  code?: string;
  retryAfter: string | null;
  failure?: string;
}

describe('PostgreSQL restarts under load', () => {
  let cluster: PgCluster | undefined;
  let server: TestServer | undefined;
  let dir: string | undefined;
  let exited: Promise<string>;

  beforeAll(async () => {
    cluster = await startPgCluster();
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    await admin.query('CREATE DATABASE shop');
    await admin.end();
    dir = mkdtempSync(join(tmpdir(), 'svc-app-'));
    cpSync(join(ROOT, 'examples/shop'), dir, { recursive: true, filter: (p) => !/[/\\](\.svc|data|node_modules)$/.test(p) });
    const env = { DATABASE_URL: cluster.url('shop') };
    const generated = await runCli(['generate', dir], env);
    expect(generated.code, generated.stderr).toBe(0);
    server = await serve(dir, env);
    const s = server;
    let stderr = '';
    s.child.stderr?.on('data', (d) => {
      stderr += d;
    });
    exited = new Promise((done) =>
      s.child.on('close', (code, signal) => {
        done(`svc serve exited (code ${code}, signal ${signal}); stderr:\n${stderr.slice(-2000)}\nlast output:\n${s.output().slice(-1500)}`);
      }),
    );
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null) await server.close();
    await cluster?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('never exits or answers 500; 503 with Retry-After while down; resumes within 1.5 s', async () => {
    const base = server!.url;
    const { headers } = await adminIdentity({ dir: dir!, env: { DATABASE_URL: cluster!.url('shop') } }, base);
    const seen: Seen[] = [];
    let running = true;
    let crashed: string | undefined;
    void exited.then((why) => {
      crashed = why;
      running = false;
    });
    const request = async (method: string, url: string, body?: unknown): Promise<Seen> => {
      const at = Date.now();
      try {
        const r = await fetch(base + url, {
          method,
          headers: { ...headers, 'content-type': 'application/json' },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await r.text();
        let code: string | undefined;
        try {
          code = JSON.parse(text).code;
        } catch {
          /* not JSON */
        }
        return { at, method, status: r.status, code, retryAfter: r.headers.get('retry-after') };
      } catch (err) {
        return { at, method, status: 0, retryAfter: null, failure: (err as Error).name + ': ' + (err as Error).message };
      }
    };
    const client = async (i: number) => {
      for (let n = 0; running; n++) {
        const s =
          n % 3 === 2
            ? await request('POST', '/Customer', { name: `Load ${i}-${n}`, vip: n % 2 === 0 })
            : await request('GET', `/Product?pageSize=5&pageNo=${(n % 5) + 1}`);
        seen.push(s);
      }
    };
    /** Resolves after `ms`, or throws at once when the server has exited. */
    const pause = async (ms: number) => {
      await Promise.race([
        new Promise((r) => setTimeout(r, ms)),
        exited.then((why) => {
          throw new Error(why);
        }),
      ]);
    };
    /** Polls until `url` answers 200; the time it took, in ms. Throws after `deadlineMs`. */
    const resumes = async (url: string, deadlineMs: number): Promise<number> => {
      const from = Date.now();
      for (;;) {
        if (crashed) throw new Error(crashed);
        const r = await request('GET', url);
        if (r.status === 200) return Date.now() - from;
        if (Date.now() - from > deadlineMs)
          throw new Error(`${url} did not answer 200 within ${deadlineMs} ms after the database came back (last: ${JSON.stringify(r)})`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };

    const load = Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
    const resumeTimes: number[] = [];
    let downFrom = 0;
    let downUntil = 0;
    const readyWhileDown: Seen[] = [];
    try {
      await pause(1000);
      for (let round = 0; round < 2; round++) {
        await cluster!.restart();
        resumeTimes.push(await resumes('/_ready', RESUME_DEADLINE_MS), await resumes('/Product?pageSize=1', RESUME_DEADLINE_MS));
        await pause(500);
      }
      await cluster!.stop();
      // Requests already waiting on the old connections settle first; then everything must be 503.
      await pause(300);
      downFrom = Date.now();
      for (let t = 0; t < DOWN_MS; t += 500) {
        readyWhileDown.push(await request('GET', '/_ready'));
        await pause(500);
      }
      downUntil = Date.now();
      await cluster!.start();
      resumeTimes.push(await resumes('/_ready', RESUME_DEADLINE_MS), await resumes('/Product?pageSize=1', RESUME_DEADLINE_MS));
      await pause(1000);
    } finally {
      running = false;
      await Promise.race([load, new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS + 1000))]);
    }

    expect(crashed, crashed).toBeUndefined();
    expect(server!.child.exitCode).toBeNull();
    const describeSeen = (list: Seen[]) => JSON.stringify(list.slice(0, 5));
    const failures = seen.filter((s) => s.status === 0 || (s.status >= 500 && s.status !== 503));
    expect(failures, `requests answered 500 or not at all: ${describeSeen(failures)}`).toEqual([]);
    const down = seen.filter((s) => s.at >= downFrom && s.at < downUntil);
    expect(down.length, 'the load kept running while the database was down').toBeGreaterThan(CLIENTS);
    const wrong = down.filter((s) => s.status !== 503 || s.code !== 'SERVICE_UNAVAILABLE' || !/^\d+$/.test(s.retryAfter ?? ''));
    expect(wrong, `answers while the database was down: ${describeSeen(wrong)}`).toEqual([]);
    for (const r of readyWhileDown) expect(r.status).toBe(503);
    expect(seen.filter((s) => s.status === 201).length, 'POSTs succeeded between the restarts').toBeGreaterThan(0);
    expect(Math.max(...resumeTimes)).toBeLessThan(RESUME_DEADLINE_MS);
  });
});
