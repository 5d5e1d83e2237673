/**
 * Behind a TLS-terminating proxy (issue 32 §1, docs/deploy.md "Behind a TLS-terminating proxy"):
 * HAProxy terminates TLS with a self-signed certificate for `club.example` (made here with
 * `openssl`) in front of two `svc serve` instances of examples/shop (PostgreSQL, a private Redis),
 * sending `X-Forwarded-Proto: https` and `X-Forwarded-Host`; svc.json `trustedProxies` is
 * `["127.0.0.1"]`. Through the proxy, as a browser at `https://club.example:<port>` would:
 * the hosted `/login` form signs in, `_auth` sets cookies (Secure), a cookie-authenticated PATCH is
 * served, and `_rt/ws` hands out a `wss://club.example` URL. A client that is not a trusted proxy
 * (it connects from 127.0.0.2) forging the forwarded headers straight at an instance changes
 * nothing; Chromium (the certificate ignored, `club.example` mapped to 127.0.0.1) signs in at
 * `/login` and saves a row in the console. A third instance with svc.json `publicUrl` and no trusted
 * proxy, behind its own TLS HAProxy: the public origin is that setting whatever the request says
 * (Host allowed, origin check, Secure cookies, `_rt/ws`, OpenAPI `servers`), and in Chromium an
 * OpenID sign-in (`test/support/oidc-provider.ts`) comes back through the proxy to
 * `<publicUrl>/login/demo/callback`, and the verification and reset mails (`test/support/smtp.ts`)
 * link to `publicUrl` and their forms are accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { createServiceAccount, createUser, serviceAccountToken } from '../support/auth.js';
import { jpeg, sha256, uploadFile } from '../support/blobs.js';
import { launchChromium } from '../support/browser.js';
import { PrivateRedis } from '../support/redis-server.js';
import { HaproxyProcess } from '../support/haproxy.js';
import { freePort } from '../support/pg-cluster.js';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { startSmtp, type TestSmtp } from '../support/smtp.js';

const SHOP = join(ROOT, 'examples/shop');

let certDir = '';
let ca: Buffer;
let app: PreparedApp;
let publicApp: PreparedApp;
let redis: PrivateRedis;
let proxy: HaproxyProcess;
const servers: TestServer[] = [];
let publicServer: TestServer;
let publicProxy: HaproxyProcess;
let idp: TestOidcProvider;
let smtp: TestSmtp;
let pem = '';
/** The publicUrl app's public origin, `https://club.example:<its proxy's port>`. */
let pub = '';
/** `https://club.example:<proxy port>`: the origin the browser sees. */
let site = '';
let proxyPort = 0;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One request. `via: 'proxy'`: TLS to HAProxy with SNI and Host `club.example` (the test's CA
 * trusted); `via: <instance URL>`: plain HTTP straight to an instance, from `localAddress`.
 */
function send(
  via: 'proxy' | string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  localAddress?: string,
): Promise<Answer> {
  return new Promise((ok, fail) => {
    const common = { method, path, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } };
    const req =
      via === 'proxy'
        ? httpsRequest({
            ...common,
            host: '127.0.0.1',
            port: proxyPort,
            servername: 'club.example',
            ca,
            headers: { host: `club.example:${proxyPort}`, ...common.headers },
          })
        : httpRequest({ ...common, host: new URL(via).hostname, port: Number(new URL(via).port), localAddress });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => ok({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', fail);
    req.end(body);
  });
}

const cookiesOf = (a: Answer): string[] => a.headers['set-cookie'] ?? [];
const cookieHeader = (a: Answer): string =>
  cookiesOf(a)
    .map((c) => c.split(';')[0])
    .join('; ');
const json = { 'content-type': 'application/json' };
const formType = { 'content-type': 'application/x-www-form-urlencoded' };

function trust(dir: string, extra: Record<string, unknown>): void {
  const file = join(dir, 'svc.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...extra }, null, 2));
}

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
  const key = join(certDir, 'key.pem');
  const cert = join(certDir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=club.example',
      '-addext',
      'subjectAltName=DNS:club.example',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  ca = readFileSync(cert);
  pem = join(certDir, 'haproxy.pem');
  writeFileSync(pem, Buffer.concat([ca, readFileSync(key)]));

  redis = await PrivateRedis.onFreePort();
  await redis.start();
  app = await prepareApp(SHOP, 'postgresql', (dir) => {
    trust(dir, { trustedProxies: ['127.0.0.1'], allowedHosts: ['club.example'] });
    // Customer needs sign-in to read: its photo's URL is signed.
    const file = join(dir, 'collections', 'Customer.json');
    const customer = JSON.parse(readFileSync(file, 'utf8'));
    customer.properties.photo = { type: 'blob' };
    writeFileSync(file, JSON.stringify(customer));
  });
  const env = { ...app.env, REDIS_URL: redis.url };
  servers.push(await serve(app.dir, env));
  servers.push(await serve(app.dir, env));
  for (const s of servers) {
    const ready = await fetch(`${s.url}/_ready`);
    if (ready.status !== 200) throw new Error(`not ready: ${await ready.text()}`);
  }
  proxy = await HaproxyProcess.start(
    servers.map((s, i) => ({ name: `s${i}`, address: new URL(s.url).host })),
    undefined,
    pem,
  );
  proxyPort = Number(new URL(proxy.url).port);
  site = `https://club.example:${proxyPort}`;
  await createUser(app, 'alice', 'pw-alice-long');

  idp = await startOidcProvider();
  smtp = await startSmtp();
  const publicPort = await freePort();
  pub = `https://club.example:${publicPort}`;
  publicApp = await prepareApp(SHOP, 'sqlite', (dir) => {
    const file = join(dir, 'svc.json');
    const svc = JSON.parse(readFileSync(file, 'utf8'));
    svc.publicUrl = `https://Club.Example:${publicPort}/`;
    svc.auth.providers.demo.issuer = '${env.TEST_OIDC_ISSUER}';
    svc.mail = { ...svc.mail, smtp: { url: '${secrets.SMTP_URL}' } };
    writeFileSync(file, JSON.stringify(svc, null, 2));
  });
  publicServer = await serve(publicApp.dir, {
    ...publicApp.env,
    TEST_OIDC_ISSUER: idp.issuer,
    SVC_SECRET_DEMO_OIDC: 'idp-secret',
    SVC_SECRET_SMTP_URL: smtp.url,
  });
  idp.register({ clientId: 'shop', clientSecret: 'idp-secret', redirectUris: [`${pub}/login/demo/callback`] });
  publicProxy = await HaproxyProcess.start([{ name: 'p0', address: new URL(publicServer.url).host }], undefined, pem, publicPort);
  await createUser(publicApp, 'bob', 'pw-bob-long');
}, 120_000);

afterAll(async () => {
  await proxy?.stop();
  await publicProxy?.stop();
  await idp?.close();
  await smtp?.close();
  for (const s of [...servers, publicServer]) if (s && s.child.exitCode === null && s.child.signalCode === null) await s.close();
  await redis?.stop();
  await app?.cleanup();
  await publicApp?.cleanup();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

/** Signs alice in through `_auth` at `via` with `headers`; answers the response. */
const signIn = (via: string, headers: Record<string, string>, user = 'alice', localAddress?: string) =>
  send(
    via,
    'POST',
    '/api/_auth',
    { ...json, ...headers },
    JSON.stringify({ authority: 'password', username: user, password: `pw-${user}-long` }),
    localAddress,
  );

describe('two instances behind HAProxy terminating TLS (trustedProxies: 127.0.0.1)', () => {
  it('signs in at the hosted /login form: 303 with Secure cookies, not 403 "sent from another site"', async () => {
    const body = new URLSearchParams({ username: 'alice', password: 'pw-alice-long', returnUrl: '/_/' }).toString();
    const r = await send('proxy', 'POST', '/login', { ...formType, origin: site, referer: `${site}/login` }, body);
    expect(r.text).not.toContain('sent from another site');
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe('/_/');
    const cookies = cookiesOf(r);
    expect(cookies.map((c) => c.split('=')[0]).sort()).toEqual(['svc_access', 'svc_refresh']);
    for (const c of cookies) expect(c).toMatch(/;\s*Secure/i);
  });

  it('_auth sets Secure cookies; a cookie-authenticated PATCH is served; _refresh works; _rt/ws hands out wss://club.example', async () => {
    const r = await signIn('proxy', { origin: site });
    expect(r.status).toBe(200);
    const cookies = cookiesOf(r);
    expect(cookies).toHaveLength(2);
    for (const c of cookies) expect(c).toMatch(/;\s*Secure/i);
    const bearer = { authorization: `Bearer ${JSON.parse(r.text).access_token}` };
    const created = await send('proxy', 'POST', '/api/Customer', { ...json, ...bearer }, JSON.stringify({ name: 'Ada', country: 'GB' }));
    expect(created.status).toBe(201);
    const id = JSON.parse(created.text).data[0];
    // Twice: round robin reaches both instances.
    for (const name of ['Ada L.', 'Ada Lovelace']) {
      const patched = await send('proxy', 'PATCH', `/api/Customer/${id}`, { ...json, origin: site, cookie: cookieHeader(r) }, JSON.stringify({ name }));
      expect(patched.text).not.toContain('cross-origin');
      expect(patched.status).toBe(200);
    }
    // Another site's page is still refused.
    const foreign = await send(
      'proxy',
      'PATCH',
      `/api/Customer/${id}`,
      { ...json, origin: 'https://evil.example', cookie: cookieHeader(r) },
      JSON.stringify({ name: 'x' }),
    );
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.text).code).toBe('FORBIDDEN');
    // The same host over http is another origin.
    const plain = await send(
      'proxy',
      'PATCH',
      `/api/Customer/${id}`,
      { ...json, origin: `http://club.example:${proxyPort}`, cookie: cookieHeader(r) },
      '{"name":"x"}',
    );
    expect(plain.status).toBe(403);
    const refreshed = await send('proxy', 'POST', '/api/_refresh', { origin: site, cookie: cookieHeader(r) });
    expect(refreshed.status).toBe(200);
    for (const c of cookiesOf(refreshed)) expect(c).toMatch(/;\s*Secure/i);
    const ws = await send('proxy', 'GET', '/api/_rt/ws', { cookie: cookieHeader(r) });
    expect(JSON.parse(ws.text).url).toMatch(new RegExp(`^wss://club\\.example:${proxyPort}/api/_rt/client\\?access_token=`));
    const hub = await send('proxy', 'GET', '/api/_rt/hub', { cookie: cookieHeader(r) });
    expect(JSON.parse(hub.text).url).toBe(`${site}/api/_rt/signalr`);
  });

  it('a client that is not a trusted proxy forging X-Forwarded-Proto/Host straight at an instance changes nothing', async () => {
    const direct = servers[0].url.replace(/\/api$/, '');
    const own = `http://${new URL(direct).host}`;
    const forged = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'club.example', 'x-forwarded-for': '127.0.0.1' };
    // Origin check: the forged public origin is not believed.
    const r = await signIn(direct, { ...forged, origin: 'https://club.example' }, 'alice', '127.0.0.2');
    expect(r.status).toBe(200);
    expect(cookiesOf(r)).toEqual([]);
    // Its own origin is: cookies, but not Secure.
    const mine = await signIn(direct, { ...forged, origin: own }, 'alice', '127.0.0.2');
    expect(cookiesOf(mine)).toHaveLength(2);
    for (const c of cookiesOf(mine)) expect(c).not.toMatch(/Secure/i);
    const bearer = { authorization: `Bearer ${JSON.parse(mine.text).access_token}` };
    const created = await send(direct, 'POST', '/api/Customer', { ...json, ...bearer }, '{"name":"Bo","country":"SE"}', '127.0.0.2');
    const id = JSON.parse(created.text).data[0];
    const patch = await send(
      direct,
      'PATCH',
      `/api/Customer/${id}`,
      { ...json, ...forged, origin: 'https://club.example', cookie: cookieHeader(mine) },
      '{"name":"x"}',
      '127.0.0.2',
    );
    expect(patch.status).toBe(403);
    expect(JSON.parse(patch.text).error).toMatch(/cross-origin requests authenticated by cookie are refused/);
    const ws = await send(direct, 'GET', '/api/_rt/ws', { ...forged, cookie: cookieHeader(mine) }, undefined, '127.0.0.2');
    expect(JSON.parse(ws.text).url).toMatch(new RegExp(`^ws://${new URL(direct).host.replace(/\./g, '\\.')}/api/_rt/client`));
    // The same headers from the trusted proxy's address are believed.
    const trusted = await send(direct, 'GET', '/api/_rt/ws', { ...forged, cookie: cookieHeader(mine) }, undefined, '127.0.0.1');
    expect(JSON.parse(trusted.text).url).toMatch(/^wss:\/\/club\.example\/api\/_rt\/client/);
  });
});

describe('Chromium through the TLS proxy (https://club.example, certificate errors ignored)', () => {
  it('signs in at /login, then signs in to /_/ and saves a row with a cookie-authenticated PATCH; opens a signed blob URL', async () => {
    const admin = await createServiceAccount(app, 'console-admin', { admin: true });
    const browser = await launchChromium([`--host-resolver-rules=MAP club.example 127.0.0.1`, '--ignore-certificate-errors'], true);
    try {
      const page = await browser.context.newPage();
      await page.goto(`${site}/login?returnUrl=${encodeURIComponent('/api/_me')}`);
      await page.fill('#username', 'alice');
      await page.fill('#password', 'pw-alice-long');
      await Promise.all([page.waitForURL(`${site}/api/_me`), page.click('button[type=submit]')]);
      expect(JSON.parse((await page.textContent('body'))!)).toMatchObject({ username: 'alice' });
      const cookies = await browser.context.cookies(`${site}/api/_refresh`);
      expect(cookies.filter((c) => c.name.startsWith('svc_')).map((c) => [c.name, c.secure])).toEqual(
        expect.arrayContaining([
          ['svc_access', true],
          ['svc_refresh', true],
        ]),
      );
      const ada = await page.evaluate(async () => {
        const r = await fetch('/api/Customer', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Grace', country: 'US' }),
        });
        return { status: r.status, body: await r.json() };
      });
      expect(ada.status).toBe(201);
      const id = ada.body.data[0];

      await browser.context.clearCookies();
      await page.goto(`${site}/_/`);
      await page.click('#signin-service');
      await page.fill('#signin-first', admin.clientId);
      await page.fill('#signin-second', admin.clientSecret);
      await page.click('button[type=submit]');
      await page.waitForSelector('#who');
      const patches: number[] = [];
      page.on('response', (r) => {
        if (r.request().method() === 'PATCH') patches.push(r.status());
      });
      await page.goto(`${site}/_/#/data/Customer/${encodeURIComponent(id)}`);
      await page.waitForSelector('#row-props');
      await page.click('#edit-row');
      await page.fill('#field-name', 'Grace Hopper');
      await page.click('#save-row');
      await expect.poll(() => page.locator('#row-props [data-prop="name"] dd').textContent()).toBe('Grace Hopper');
      expect(patches).toEqual([200]);

      // A signed blob URL opens through the proxy without credentials.
      const token = await serviceAccountToken(servers[1].url, admin.clientId, admin.clientSecret);
      const bytes = await jpeg(20, 10);
      const up = await uploadFile(`${servers[1].url}/Customer/${id}/photo`, bytes, { name: 'g.jpg', type: 'image/jpeg', headers: token.headers });
      expect(up.status).toBe(200);
      const signed = await page.evaluate(async (rowId) => (await (await fetch(`/api/Customer/${rowId}`)).json()).photo.url as string, id);
      expect(signed).toMatch(/\?v=.+&exp=\d+&sig=/);
      await browser.context.clearCookies();
      const opened = await page.goto(`${site}${signed}`);
      expect(opened!.status()).toBe(200);
      expect(sha256(await opened!.body())).toBe(sha256(bytes));
    } finally {
      await browser.close();
    }
  });
});

describe('svc.json publicUrl', () => {
  it('is the one public origin: Host allowed, origin checks, Secure cookies, _rt URLs and OpenAPI servers follow it', async () => {
    const direct = publicServer.url.replace(/\/api$/, '');
    const host = { host: 'club.example' };
    // Its host is allowed (no 421), whatever allowedHosts says.
    const signedIn = await signIn(direct, { ...host, origin: pub }, 'bob');
    expect(signedIn.status).toBe(200);
    expect(cookiesOf(signedIn)).toHaveLength(2);
    for (const c of cookiesOf(signedIn)) expect(c).toMatch(/;\s*Secure/i);
    // The socket's own origin is not the app's origin any more.
    const socketOrigin = await signIn(direct, { origin: `http://${new URL(direct).host}` }, 'bob');
    expect(cookiesOf(socketOrigin)).toEqual([]);
    const bearer = { authorization: `Bearer ${JSON.parse(signedIn.text).access_token}` };
    const created = await send(direct, 'POST', '/api/Customer', { ...json, ...bearer }, '{"name":"Cy","country":"FR"}');
    const id = JSON.parse(created.text).data[0];
    const ok = await send(direct, 'PATCH', `/api/Customer/${id}`, { ...json, ...host, origin: pub, cookie: cookieHeader(signedIn) }, '{"name":"Cyd"}');
    expect(ok.status).toBe(200);
    const forged = await send(
      direct,
      'PATCH',
      `/api/Customer/${id}`,
      { ...json, origin: 'http://evil.example', host: 'evil.example', 'x-forwarded-host': 'evil.example', cookie: cookieHeader(signedIn) },
      '{"name":"x"}',
    );
    expect([403, 421]).toContain(forged.status);
    const viaIp = await send(
      direct,
      'PATCH',
      `/api/Customer/${id}`,
      { ...json, origin: `http://${new URL(direct).host}`, cookie: cookieHeader(signedIn) },
      '{"name":"x"}',
    );
    expect(viaIp.status).toBe(403);
    const ws = await send(direct, 'GET', '/api/_rt/ws', { cookie: cookieHeader(signedIn), 'x-forwarded-proto': 'http', 'x-forwarded-host': 'evil.example' });
    expect(JSON.parse(ws.text).url.startsWith(`${pub.replace('https', 'wss')}/api/_rt/client?access_token=`)).toBe(true);
    const login = await send(direct, 'POST', '/login', { ...formType, ...host, origin: pub }, 'username=bob&password=pw-bob-long&returnUrl=%2F');
    expect(login.status).toBe(303);
    for (const c of cookiesOf(login)) expect(c).toMatch(/;\s*Secure/i);
    const openapi = JSON.parse((await send(direct, 'GET', '/api/_openapi')).text);
    expect(openapi.servers).toEqual([{ url: `${pub}/api` }]);
  });

  it('in Chromium through its TLS proxy: OpenID sign-in comes back through the proxy; verification and reset mails link to publicUrl and work', async () => {
    const browser = await launchChromium([`--host-resolver-rules=MAP club.example 127.0.0.1`, '--ignore-certificate-errors'], true);
    try {
      await browser.context.route(/fonts\.googleapis\.com/, (route) => route.abort());
      const page = await browser.context.newPage();
      const me = () => page.evaluate(async () => (await fetch('/api/_me')).json());
      // OpenID: the redirect URI is <publicUrl>/login/demo/callback, registered at the provider.
      await page.goto(`${pub}/login?returnUrl=${encodeURIComponent('/api/_me')}`);
      await page.getByRole('link', { name: 'Continue with Demo ID' }).click();
      await page.waitForURL((u) => u.origin === idp.issuer);
      if (await page.locator('input[name="login"]').count()) {
        await page.fill('input[name="login"]', 'dora');
        await page.fill('input[name="password"]', 'any-password');
        await page.click('button[type="submit"]');
      }
      await page.waitForLoadState();
      if (new URL(page.url()).origin === idp.issuer && (await page.locator('button:has-text("Continue")').count()))
        await page.click('button:has-text("Continue")');
      await page.waitForURL(`${pub}/api/_me`);
      expect((await me()).kind ?? (await me()).username).toBeTruthy();
      expect((await browser.context.cookies(`${pub}/api/_refresh`)).filter((c) => c.name.startsWith('svc_')).every((c) => c.secure)).toBe(true);

      // Sign-up mail: the verification link points at publicUrl and confirms through the proxy.
      await browser.context.clearCookies();
      await page.goto(`${pub}/login`);
      const signup = await page.evaluate(async () => {
        const r = await fetch('/api/_signup', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'carol', password: 'pw-carol-long', email: 'carol@example.test' }),
        });
        return r.status;
      });
      expect(signup).toBe(201);
      const verifyLink = /https:\/\/\S+\/login\/verify\?token=\S+/.exec((await smtp.next('carol@example.test', 'Confirm')).text)![0];
      expect(verifyLink.startsWith(`${pub}/login/verify?token=`)).toBe(true);
      await page.goto(verifyLink);
      await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
      expect(await page.textContent('body')).not.toMatch(/another site/);

      // Reset mail: the link points at publicUrl; the form it opens is accepted through the proxy.
      await page.evaluate(async () => {
        await fetch('/api/_password-reset', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'carol@example.test' }),
        });
      });
      const resetLink = /https:\/\/\S+\/login\/reset\?token=\S+/.exec((await smtp.next('carol@example.test', 'Reset')).text)![0];
      expect(resetLink.startsWith(`${pub}/login/reset?token=`)).toBe(true);
      await page.goto(resetLink);
      await page.fill('#password', 'pw-carol-new-1');
      const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button[type=submit]')]);
      expect(answer.status()).toBeLessThan(400);
      await page.goto(`${pub}/login?returnUrl=${encodeURIComponent('/api/_me')}`);
      await page.fill('#username', 'carol');
      await page.fill('#password', 'pw-carol-new-1');
      await Promise.all([page.waitForURL(`${pub}/api/_me`), page.click('button[type=submit]')]);
      expect((await me()).username).toBe('carol');
    } finally {
      await browser.close();
    }
  });
});
