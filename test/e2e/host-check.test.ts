/**
 * The Host check (issue 30 item 11, DNS rebinding) against real `svc serve` processes over loopback:
 * with `Host`/`Origin` `rebind.attacker.example` a page could sign in through `_auth` and create an
 * admin service account by cookie; now every HTTP request and WebSocket upgrade naming a host that is
 * not allowed answers 421 `HOST_NOT_ALLOWED` with the DESIGN §4 body. Allowed by default: localhost,
 * `*.localhost`, IP addresses and the bound address; svc.json `allowedHosts` adds names and
 * `.domains`, or `"all"`. A server bound to 0.0.0.0 without `allowedHosts` warns once at start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareApp, ROOT, runCli, serve, type PreparedApp, type TestServer } from '../support/cli.js';

const SIGNUP = join(ROOT, 'test/fixtures/apps/signup');
const ATTACKER = 'rebind.attacker.example';

/** A raw HTTP/1.1 exchange, so that `Host` is sent exactly as given; answers the status, headers and body. */
function rawRequest(port: number, head: string, body = '', connection = 'close'): Promise<{ status: number; head: string; body: string }> {
  return new Promise((ok, fail) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => {
      data += d;
    });
    socket.on('error', fail);
    socket.on('close', () => {
      const end = data.indexOf('\r\n\r\n');
      ok({ status: Number(data.slice(9, 12)), head: data.slice(0, end), body: data.slice(end + 4) });
    });
    socket.write(`${head}\r\nConnection: ${connection}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}

const get = (port: number, path: string, host: string) => rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}`);
const upgrade = (port: number, host: string) =>
  rawRequest(
    port,
    `GET /api/_rt/client HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: json.webpubsub.azure.v1`,
    '',
    'Upgrade',
  );

async function serveWith(svc: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<{ app: PreparedApp; server: TestServer; port: number }> {
  const app = await prepareApp(SIGNUP, 'sqlite', (dir) => {
    const file = join(dir, 'svc.json');
    const { mail: _mail, ...rest } = JSON.parse(readFileSync(file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...rest, ...svc }));
  });
  const server = await serve(app.dir, { ...app.env, ...env });
  return { app, server, port: Number(new URL(server.url).port) };
}

describe('the Host check', () => {
  describe('on a server bound to 127.0.0.1 without allowedHosts', () => {
    let app: PreparedApp;
    let server: TestServer;
    let port: number;

    beforeAll(async () => {
      ({ app, server, port } = await serveWith({}));
      const made = await runCli(['user', 'create', app.dir, '--username', 'root', '--password', 'root-password', '--admin'], app.env);
      expect(made.code, made.stderr).toBe(0);
    });
    afterAll(async () => {
      await server?.close();
      await app?.cleanup();
    });

    it('refuses the rebinding attack: _auth and a cookie-authenticated admin write under a foreign Host answer 421', async () => {
      const credentials = JSON.stringify({ authority: 'password', username: 'root', password: 'root-password' });
      const json = 'Content-Type: application/json';
      const signIn = await rawRequest(port, `POST /api/_auth HTTP/1.1\r\nHost: ${ATTACKER}\r\nOrigin: http://${ATTACKER}\r\n${json}`, credentials);
      expect(signIn.status).toBe(421);
      expect(signIn.head).toMatch(/^HTTP\/1\.1 421 Misdirected Request/);
      expect(signIn.head).not.toMatch(/set-cookie/i);
      const error = JSON.parse(signIn.body);
      expect(error).toEqual({ code: 'HOST_NOT_ALLOWED', error: expect.stringContaining('"allowedHosts"') });
      expect(error.error).toContain(ATTACKER);

      // The same sign-in at the server's own address sets the cookie; replayed under the foreign Host it is refused.
      const own = await rawRequest(port, `POST /api/_auth HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${json}`, credentials);
      expect(own.status).toBe(200);
      const cookie = [...own.head.matchAll(/^set-cookie: ([^;]+)/gim)].map((m) => m[1]).join('; ');
      expect(cookie).toContain('svc_access=');
      const account = JSON.stringify({ kind: 'serviceAccount', name: 'backdoor', admin: true });
      const create = (host: string) =>
        rawRequest(port, `POST /api/_admin/identities HTTP/1.1\r\nHost: ${host}\r\nOrigin: http://${host}\r\nCookie: ${cookie}\r\n${json}`, account);
      const refused = await create(ATTACKER);
      expect(refused.status).toBe(421);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'HOST_NOT_ALLOWED' });
      // Every other path too: the console, public files, health.
      for (const path of ['/_/', '/api/_health', '/api/_openapi', '/login']) expect((await get(port, path, ATTACKER)).status, path).toBe(421);
      // The server's own origin still works with the same cookie.
      expect((await create(`127.0.0.1:${port}`)).status).toBe(201);
    });

    it('answers localhost, *.localhost, IP addresses, a trailing dot and no Host at all', async () => {
      for (const host of [`localhost:${port}`, 'LOCALHOST', `app.localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '10.1.2.3', 'localhost.']) {
        expect((await get(port, '/api/_health', host)).status, host).toBe(200);
      }
      const http10 = await rawRequest(port, 'GET /api/_health HTTP/1.0');
      expect(http10.status).toBe(200);
      for (const host of ['localhost.attacker.example', 'attacker.example', '127.0.0.1.nip.io', 'evil-localhost']) {
        expect((await get(port, '/api/_health', host)).status, host).toBe(421);
      }
    });

    it('refuses a WebSocket upgrade under a foreign Host with 421 and the error body; under localhost it reaches the endpoint', async () => {
      const refused = await upgrade(port, ATTACKER);
      expect(refused.status).toBe(421);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'HOST_NOT_ALLOWED' });
      // Under localhost the upgrade reaches the real-time endpoint, which asks for an access token.
      const passed = await upgrade(port, `localhost:${port}`);
      expect(passed.status).toBe(401);
      expect(JSON.parse(passed.body)).toMatchObject({ code: 'UNAUTHORIZED' });
    });

    it('says nothing about allowedHosts at start (bound to loopback)', () => {
      expect(server.output()).not.toContain('allowedHosts');
    });
  });

  describe('with svc.json allowedHosts', () => {
    const servers: { app: PreparedApp; server: TestServer; port: number }[] = [];
    afterAll(async () => {
      for (const s of servers) {
        await s.server.close();
        await s.app.cleanup();
      }
    });

    it('allows the names listed, a dotted entry its domain and subdomains; "all" any Host; bound to 0.0.0.0 it does not warn', async () => {
      const listed = await serveWith({ allowedHosts: ['app.example.com', '.Example.org'] }, { HOST: '0.0.0.0' });
      servers.push(listed);
      for (const host of ['app.example.com', 'APP.example.com:443', 'example.org', 'a.b.example.org:8080']) {
        expect((await get(listed.port, '/api/_health', host)).status, host).toBe(200);
      }
      for (const host of ['evil.example.com', 'example.com', 'badexample.org', ATTACKER])
        expect((await get(listed.port, '/api/_health', host)).status, host).toBe(421);
      expect((await upgrade(listed.port, 'ws.example.org')).status).toBe(401); // past the Host check: the endpoint asks for a token
      expect((await upgrade(listed.port, ATTACKER)).status).toBe(421);
      expect(listed.server.output()).not.toContain('without svc.json "allowedHosts"');

      const all = await serveWith({ allowedHosts: 'all' });
      servers.push(all);
      expect((await get(all.port, '/api/_health', ATTACKER)).status).toBe(200);
    });

    it('warns in one line at start when bound to 0.0.0.0 without allowedHosts', async () => {
      const open = await serveWith({}, { HOST: '0.0.0.0' });
      servers.push(open);
      const lines = open.server
        .output()
        .split('\n')
        .filter((l) => l.includes('allowedHosts'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('listening on 0.0.0.0 without svc.json \\"allowedHosts\\"');
      expect((await get(open.port, '/api/_health', ATTACKER)).status).toBe(421);
    });
  });
});
