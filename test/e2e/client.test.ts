/**
 * The generated `.svc/client.ts` used as a real client: transpiled with the TypeScript compiler and
 * imported, then driven against `svc serve` of the `typed` fixture over loopback, on every backend.
 * Functions are served by the functions runtime; here the collection methods, errors and options are covered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { backends } from '../support/backends.js';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { userIdentity } from '../support/auth.js';

type Row = Record<string, unknown> & { id: string };
type Collection = {
  list(p?: object): Promise<{ data: Row[]; meta?: { count?: number } }>;
  get(id: string, p?: object): Promise<Row>;
  create(b: object | object[]): Promise<{ data: string[] }>;
  update(id: string, b: object): Promise<Row>;
  patch(id: string, b: object): Promise<Row>;
  delete(id: string): Promise<void>;
  deleteMany(ids: string[]): Promise<void>;
};
type ClientModule = {
  createClient(o: object): { collections: Record<string, Collection>; views: object; functions: Record<string, Record<string, unknown>> };
  ApiError: new (...a: unknown[]) => Error & { status: number; body: { code: string } };
};

describe.each(backends())('generated client on %s', (backend) => {
  let app: PreparedApp;
  let server: TestServer;
  let mod: ClientModule;
  beforeAll(async () => {
    app = await prepareApp(join(ROOT, 'test/fixtures/apps/typed'), backend);
    server = await serve(app.dir, app.env);
    const source = readFileSync(join(app.dir, '.svc/client.ts'), 'utf8');
    const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
    const file = join(app.dir, 'client.mjs');
    writeFileSync(file, js);
    mod = (await import(pathToFileURL(file).href)) as ClientModule;
  });
  afterAll(async () => {
    await server?.close();
    await app?.cleanup();
  });

  it('lists, creates, reads, replaces, patches and deletes rows', async () => {
    const api = mod.createClient({ baseUrl: server.url });
    const notes = api.collections.Note;
    const { data: ids } = await notes.create([
      { title: 'First', rating: 4 },
      { title: 'Second', status: 'published' },
    ]);
    expect(ids).toHaveLength(2);
    const page = await notes.list({ filter: 'rating eq 4', count: 'true' });
    expect(page.meta?.count).toBe(1);
    expect(page.data.map((n) => n.title)).toEqual(['First']);
    expect(await notes.get(ids[1], { select: 'title' })).toEqual({ id: ids[1], title: 'Second' });
    expect(await notes.patch(ids[0], { pinned: true })).toMatchObject({ title: 'First', pinned: true, rating: 4 });
    expect(await notes.update(ids[0], { title: 'Replaced' })).toMatchObject({ title: 'Replaced', rating: null, pinned: false });
    await notes.delete(ids[0]);
    await notes.deleteMany([ids[1]]);
    expect((await notes.list({ count: 'only' })).meta?.count).toBe(0);
  });

  it('throws ApiError with the error body on a non-2xx answer', async () => {
    const api = mod.createClient({ baseUrl: `${server.url}/`, headers: { 'x-request-id': 'client-test' } });
    const missing = '01890000-0000-7000-8000-000000000000';
    const err = await api.collections.Note.get(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(mod.ApiError);
    expect(err).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    const invalid = await api.collections.Note.create({ rating: 2 }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
  });

  it('sends the bearer token and lets a custom fetch see every request', async () => {
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const user = await userIdentity(app, server.url, 'client-user');
    const api = mod.createClient({
      baseUrl: server.url,
      token: async () => user.token,
      fetch: (url: string, init: { headers: Record<string, string> }) => {
        seen.push({ url, headers: init.headers });
        return fetch(url, init);
      },
    });
    await api.collections.Note.list({ pageSize: 1, filter: 'title eq "a b"' });
    expect(seen).toHaveLength(1);
    expect(seen[0].url).toBe(`${server.url}/Note?pageSize=1&filter=title%20eq%20%22a%20b%22`);
    expect(seen[0].headers.authorization).toBe(`Bearer ${user.token}`);
    expect(Object.keys(api.functions).sort()).toEqual([
      'greet',
      'opaque',
      'ping',
      'reindex_every_note_in_the_archive_and_report_progress_to_the_use',
      'stats',
      'sum',
    ]);
  });
});
