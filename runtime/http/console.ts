/**
 * @module Serves the console (DESIGN §9) at `/_/`: the prebuilt Preact app of `dist/console/` (built
 * by `npm run build` from `console/`). `GET /_/` and every client-side route under it answer the app
 * shell (`index.html`, `Cache-Control: no-cache`); `/_/assets/<hashed name>` answers that file,
 * cached for a year as immutable. Every response, errors included, carries the console's
 * Content-Security-Policy (`consoleCsp`: the shell's scripts run by a per-response nonce, nothing else
 * does), `X-Content-Type-Options: nosniff` and `Referrer-Policy: same-origin`.
 * A path that leaves the assets folder, or is not valid percent-encoding, is refused (404/400) and
 * never read.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Request, Response } from 'express';

/**
 * The Content-Security-Policy of a console response (DESIGN §9, tightened by issue 30 item 12): scripts
 * run only when they carry `nonce` (the shell's, fresh per response; Vite writes it on the entry
 * script, and its preload helper on what it adds; the modules these import inherit it). `'self'`
 * alone would run any same-origin URL, such as an uploaded blob, if markup were ever injected.
 * @param nonce - the shell's nonce; absent (assets, errors): no script may run in the document
 */
export function consoleCsp(nonce?: string): string {
  const scripts = nonce ? `'nonce-${nonce}'` : "'none'";
  return `default-src 'self'; script-src ${scripts}; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`;
}

/** The headers of every console response (DESIGN §9); the shell's CSP carries its nonce (`consoleCsp`). */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': consoleCsp(),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
});

/** What the console's build writes where each response's nonce goes (console/vite.config.ts `html.cspNonce`). */
const NONCE_PLACEHOLDER = 'SVC_CSP_NONCE';

/** Where `npm run build` puts the console: `dist/console/`, beside `dist/runtime/`. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
};

/** An asset name as Vite writes them: one path segment of safe characters with an extension. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}\.[a-z0-9]{1,8}$/;

function fail(res: Response, status: number, code: string, message: string): void {
  res.status(status).set('cache-control', 'no-store').json({ error: message, code });
}

/**
 * Express middleware for `/_` (mount it with `app.use('/_', consoleHandler())`).
 * @param dir the built console (default `CONSOLE_DIR`); when its `index.html` is missing every console
 *   route answers 404 `NOT_FOUND` ("the console is not built").
 * Answers GET and HEAD only (405 otherwise); answers every path under `/_` itself (never calls `next`).
 */
export function consoleHandler(dir: string = CONSOLE_DIR) {
  const root = resolve(dir);
  const assets = join(root, 'assets');
  let shell: string | undefined;
  // Mounted at `/_`, so `req.path` is the rest (`/`, `/assets/x.js`); Express never routes `/_x` here.
  return (req: Request, res: Response): void => {
    res.set(CONSOLE_HEADERS);
    // `/_` alone redirects to `/_/`, where the shell's relative URLs resolve.
    if (req.originalUrl === '/_' || req.originalUrl.startsWith('/_?')) {
      res.redirect(301, '/_/');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.set('allow', 'GET, HEAD');
      return fail(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not supported on the console (GET, HEAD)`);
    }
    let path: string;
    try {
      path = decodeURIComponent(req.path);
    } catch {
      return fail(res, 400, 'INVALID_PARAMETER', 'the path is not valid percent-encoding');
    }
    if (path.includes('\0') || path.includes('\\')) return fail(res, 400, 'INVALID_PARAMETER', 'the path holds a character no console file has');
    if (path.startsWith('/assets/')) {
      const name = path.slice('/assets/'.length);
      const file = join(assets, name);
      if (!ASSET_NAME.test(name) || !file.startsWith(assets + sep) || !existsSync(file) || !statSync(file).isFile())
        return fail(res, 404, 'NOT_FOUND', `no console asset ${JSON.stringify(name.slice(0, 200))}`);
      res.set('cache-control', 'public, max-age=31536000, immutable');
      res.type(TYPES[extname(name)] ?? 'application/octet-stream');
      res.set('content-length', String(statSync(file).size));
      if (req.method === 'HEAD') return void res.end();
      createReadStream(file).pipe(res);
      return;
    }
    if (path.split('/').some((part) => part === '..' || part === '.')) return fail(res, 404, 'NOT_FOUND', 'no console page has a "." or ".." path segment');
    // The console routes by hash (`/_/#/data/Order`): a path route, as a link written by hand, goes there.
    if (path !== '/' && path !== '/index.html') {
      const route = path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
      res.redirect(302, `/_/#/${route}`);
      return;
    }
    try {
      shell ??= readFileSync(join(root, 'index.html'), 'utf8');
    } catch {
      return fail(res, 404, 'NOT_FOUND', 'the console is not built (npm run build builds it into dist/console/)');
    }
    const nonce = randomBytes(16).toString('base64');
    res.set('cache-control', 'no-cache');
    res.set('content-security-policy', consoleCsp(nonce));
    res.type('html').send(shell.replaceAll(NONCE_PLACEHOLDER, nonce));
  };
}
