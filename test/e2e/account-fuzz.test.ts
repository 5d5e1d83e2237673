/**
 * @module Hostile input to the account endpoints of DESIGN §11 (sign-up, verification, reset, the own
 * account, the `/login` account forms): malformed JSON, wrong types, huge and non-ASCII strings, deep
 * nesting, form bodies, drawn from one seed (`SVC_FUZZ_SEED` replays a run). Every answer is a 2xx or a
 * 4xx with the error body of DESIGN §4, never a 5xx, and the process keeps serving. The parsers are
 * the same on both databases, so this runs on SQLite; the mail transport points at a closed port, so
 * mails that are sent fail in the background, which must not reach the caller either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity, type Identity } from '../support/auth.js';
import { json, value } from '../support/fuzz-cases.js';
import { fuzzSeed, Prng } from '../support/hostile.js';

/** Each endpoint, its method and the fields its body names (random values go into those too). */
const ENDPOINTS: { method: string; path: string; fields: string[]; signedIn?: boolean; form?: boolean }[] = [
  { method: 'POST', path: '/api/_signup', fields: ['username', 'password', 'email'] },
  { method: 'POST', path: '/api/_verify-email', fields: ['token'] },
  { method: 'POST', path: '/api/_password-reset', fields: ['email'] },
  { method: 'POST', path: '/api/_password-reset/confirm', fields: ['token', 'password'] },
  { method: 'POST', path: '/api/_me/password', fields: ['current', 'password'], signedIn: true },
  { method: 'DELETE', path: '/api/_me', fields: ['password'], signedIn: true },
  { method: 'POST', path: '/login/signup', fields: ['username', 'password', 'email', 'returnUrl'], form: true },
  { method: 'POST', path: '/login/forgot', fields: ['email', 'returnUrl'], form: true },
  { method: 'POST', path: '/login/reset', fields: ['token', 'password'], form: true },
];
const BODIES_PER_ENDPOINT = 40;
const MAX_BYTES = 64 * 1024;
const BROKEN_JSON = ['', '{', '{"username":', '[]', 'null', '"x"', '1e400', '{"a":1}}', '\u0000', '{"password":"\ud800"}'];

/** One hostile body for `fields`: broken JSON, any JSON value, an object of those fields with any values, or a form. */
function body(r: Prng, fields: string[], form: boolean): { text: string; type: string } {
  const kind = r.int(form ? 5 : 4);
  if (kind === 0) return { text: r.pick(BROKEN_JSON), type: 'application/json' };
  if (kind === 1) return { text: json(value(r, MAX_BYTES)), type: 'application/json' };
  if (kind === 4 || form) {
    const pairs = fields.filter(() => r.chance(0.8)).map((f) => `${encodeURIComponent(f)}=${encodeURIComponent(r.string(r.int(r.chance(0.1) ? 5000 : 60)))}`);
    if (r.chance(0.2)) pairs.push('%E0%A4%A=%', '&&=', `${r.string(3)}=${r.string(3)}`);
    return { text: pairs.join('&'), type: 'application/x-www-form-urlencoded' };
  }
  const object = Object.fromEntries(fields.filter(() => r.chance(0.8)).map((f) => [f, r.chance(0.3) ? r.string(r.int(300)) : value(r, MAX_BYTES, 1)]));
  return { text: json(object), type: r.chance(0.9) ? 'application/json' : r.pick(['text/plain', 'application/json; charset=latin1', '']) };
}

describe('hostile input to the account endpoints', () => {
  let app: PreparedApp;
  let server: TestServer;
  let origin: string;
  let user: Identity;
  const seed = fuzzSeed();

  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/signup'), 'sqlite');
    // A closed port: every mail sent fails after the answer was given.
    app.env = { ...app.env, SVC_SECRET_SMTP_URL: 'smtp://127.0.0.1:9' };
    server = await serve(app.dir, app.env);
    origin = new URL(server.url).origin;
    user = await userIdentity(app, server.url, 'fuzzed-user');
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it(`answers ${ENDPOINTS.length * BODIES_PER_ENDPOINT} hostile bodies with 2xx or 4xx and keeps serving (seed ${seed})`, async () => {
    const r = new Prng(seed);
    for (const endpoint of ENDPOINTS) {
      for (let i = 0; i < BODIES_PER_ENDPOINT; i++) {
        const { text, type } = body(r, endpoint.fields, endpoint.form === true);
        const headers: Record<string, string> = { origin, ...(type && { 'content-type': type }), ...(endpoint.signedIn && user.headers) };
        const res = await fetch(origin + endpoint.path, { method: endpoint.method, headers, body: text, redirect: 'manual' });
        const answer = await res.text();
        const what = `${endpoint.method} ${endpoint.path} (${type}) ${JSON.stringify(text.slice(0, 120))}: ${res.status} ${answer.slice(0, 200)}`;
        expect(res.status, what).toBeLessThan(500);
        if (res.status >= 400 && !endpoint.form) {
          const error = JSON.parse(answer) as { code?: unknown; error?: unknown };
          expect(typeof error.code, what).toBe('string');
          expect(typeof error.error, what).toBe('string');
        }
      }
    }
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${server.url}/_health`)).status).toBe(200);
    expect(server.output()).not.toMatch(/"level":(50|60)/); // no error or fatal log line: nothing unexpected was thrown
  }, 240_000);
});
