/**
 * `get`, `post`, `patch` of function code (SPEC §4.8 rule 2): what they send to the app's own API — the
 * caller's `Authorization` and `Cookie` and the request id, never `Origin` — and how a non-2xx answer
 * becomes a `FunctionApiError`. The API is stood in for by a real HTTP server on loopback that records
 * each request; the e2e suite runs the same helpers against `svc serve`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectionClient, FunctionApiError } from '../../../runtime/functions/collection-client.js';
import type { FunctionJob } from '../../../runtime/functions/context.js';

interface Seen { method?: string; url?: string; headers: IncomingHttpHeaders; body: string }
const seen: Seen[] = [];
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.setHeader('content-type', 'application/json');
      if (req.url?.includes('missing')) {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: 'Note "missing" was not found', code: 'NOT_FOUND' }));
      } else {
        res.end(JSON.stringify({ data: [], echoed: req.url }));
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(() => new Promise((ok) => server.close(ok)));

const job = (headers: Record<string, string>): FunctionJob => ({
  modulePath: '/unused', req: { method: 'GET', headers: {}, query: {}, bodyJson: null, bodyRaw: '' }, me: null,
  api: { name: 'app', baseUrl: 'http://public.example/api' }, secrets: {}, allowFetch: false,
  loopback: { baseUrl, headers }, readable: ['Note', 'OpenNotes', 'NoteStats'], writable: ['Note', 'OpenNotes'],
});

describe('collectionClient', () => {
  const credentials = { authorization: 'Bearer abc', cookie: 'svc_access=xyz', 'x-request-id': 'req-1' };

  test('forwards the caller credentials and request id, never Origin, and sends JSON', async () => {
    seen.length = 0;
    const client = collectionClient(job(credentials), fetch);
    await client.get('Note', { filter: 'count gt 1', pageSize: 5, count: true, select: undefined });
    await client.post('OpenNotes', [{ title: 'a' }]);
    await client.patch('Note', 'a/b', { count: 2 });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /api/Note?filter=count+gt+1&pageSize=5&count=true', 'POST /api/OpenNotes', 'PATCH /api/Note/a%2Fb',
    ]);
    for (const s of seen) {
      expect(s.headers).toMatchObject({ authorization: 'Bearer abc', cookie: 'svc_access=xyz', 'x-request-id': 'req-1', accept: 'application/json' });
      expect(s.headers).not.toHaveProperty('origin');
    }
    expect(seen[1]).toMatchObject({ headers: { 'content-type': 'application/json' }, body: '[{"title":"a"}]' });
    expect(seen[0].headers).not.toHaveProperty('content-type');
  });

  test('an anonymous caller sends no credentials', async () => {
    seen.length = 0;
    await collectionClient(job({ 'x-request-id': 'req-2' }), fetch).get('NoteStats');
    expect(seen[0].headers).not.toHaveProperty('authorization');
    expect(seen[0].headers).not.toHaveProperty('cookie');
  });

  test('a non-2xx answer throws FunctionApiError with status and parsed body', async () => {
    const err = await collectionClient(job(credentials), fetch).patch('Note', 'missing', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FunctionApiError);
    expect(err).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' }, message: 'PATCH /api/Note/missing answered 404: Note "missing" was not found' });
  });

  test('refuses names that are not collections, views or queries, and writes to queries', async () => {
    const client = collectionClient(job(credentials), fetch);
    await expect(client.get('someFunction')).rejects.toThrow('get: "someFunction" is not a collection, view or query of this app');
    await expect(client.post('NoteStats', {})).rejects.toThrow('post: "NoteStats" is not a collection or view of this app');
    await expect(client.patch('Note', '', {})).rejects.toThrow('patch: the id must be a non-empty string');
  });
});
