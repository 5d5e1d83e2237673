/**
 * @module What `GET /` and `GET /api` answer (issue 32 §4): the URL `svc serve` prints is the API's, so
 * it answers a small index instead of a 404. `/api` gives JSON (or the HTML page to a browser);
 * `/` gives the HTML page when the app's `public/` has no `index.html` of its own.
 */
import type { Request, Response } from 'express';
import type { AppManifest } from '../manifest.js';
import { escapeHtml, ICON } from '../auth/login-page.js';

/** The links of the index: the OpenAPI document, the hosted sign-in page and, when served, the console. */
export interface IndexLinks {
  name: string;
  openapi: string;
  login: string;
  console?: string;
}

/** The index's links, as root-relative paths. */
export function indexLinks(manifest: AppManifest): IndexLinks {
  return {
    name: manifest.name,
    openapi: '/api/_openapi',
    login: '/login',
    ...(manifest.settings.console !== false ? { console: '/_/' } : {}),
  };
}

/** The HTML page: the app's name and one link per entry of `indexLinks`. */
export function indexPage(links: IndexLinks): string {
  const items = [
    `<li><a href="${links.openapi}">API description</a> (OpenAPI 3.1, JSON): every collection, view, query and function under <code>/api</code></li>`,
    `<li><a href="${links.login}">Sign in</a></li>`,
    links.console ? `<li><a href="${links.console}">Console</a> (admins)</li>` : '',
  ].filter(Boolean);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(links.name)}</title><link rel="icon" href="${ICON}">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{font-size:.9em}</style>
</head><body>
<h1>${escapeHtml(links.name)}</h1>
<p>This is the <strong>${escapeHtml(links.name)}</strong> API, served by svc.</p>
<ul>
${items.join('\n')}
</ul>
</body></html>
`;
}

/** Sends the HTML page with a policy that allows no script and no framing (same-origin fetches stay open for tools run in the page). */
export function sendIndexPage(res: Response, links: IndexLinks): void {
  res.set('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-ancestors 'none'");
  res.set('x-content-type-options', 'nosniff');
  res.type('html').send(indexPage(links));
}

/** `GET /api`: the links as JSON, or the HTML page when the client prefers HTML (a browser). */
export function apiIndex(manifest: AppManifest) {
  const links = indexLinks(manifest);
  return (req: Request, res: Response) => {
    if (req.accepts(['json', 'html']) === 'html') sendIndexPage(res, links);
    else res.json(links);
  };
}
