/**
 * Blobs across instances (issue 24 §3): two `svc serve` processes of examples/shop on one PostgreSQL
 * database, one private `redis-server` and one s3rver bucket, all on loopback. A resumable (tus)
 * upload whose requests alternate between the instances finishes with the right bytes and metadata;
 * two PATCHes of one upload on two instances are serialized (the second waits for the first to let
 * go, then answers 409 at the offset the first reached, and the upload resumes intact); malformed
 * upload ids and junk on the lock channel change nothing; the orphan sweep deletes an old object no
 * row names and keeps a committed blob and a fresh object, one instance per interval; and a lock
 * holder killed mid-PATCH blocks the upload no longer than the lock's lifetime (`LOCK_TTL_MS`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { request, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { prepareApp, ROOT, serve, type PreparedApp, type TestServer } from '../support/cli.js';
import { adminIdentity, type Identity } from '../support/auth.js';
import { PrivateRedis } from '../support/redis-server.js';
import { bytesOf, sha256, startS3, uploadFile, type S3Server } from '../support/blobs.js';
import { waitFor } from '../support/wait.js';
import { LOCK_TTL_MS } from '../../dist/runtime/blobs/tus-lock.js';

const SHOP = join(ROOT, 'examples/shop');
const MIB = 1024 * 1024;

let app: PreparedApp;
let redis: PrivateRedis;
let control: Redis;
let s3: S3Server;
let a: TestServer;
let b: TestServer;
let admin: Identity;

const tusHeaders = () => ({ ...admin.headers, 'tus-resumable': '1.0.0' });
const b64 = (text: string) => Buffer.from(text).toString('base64');
const lockKey = (upload: string) => `svc:shop:tus-lock:${upload}`;

async function newProduct(on: TestServer): Promise<string> {
  const r = await fetch(`${on.url}/Product`, {
    method: 'POST',
    headers: { ...admin.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ sku: `s${Math.random()}`.slice(0, 30), name: 'Lamp', price: 5 }),
  });
  expect(r.status).toBe(201);
  return (await r.json()).data[0];
}

/** Creates an upload of `size` bytes on `on`; returns its path after `/api` (…/tus/<upload>) and id. */
async function createUpload(on: TestServer, product: string, size: number, name = 'lamp.bin'): Promise<{ path: string; id: string }> {
  const r = await fetch(`${on.url}/Product/${product}/image/tus`, {
    method: 'POST',
    headers: { ...tusHeaders(), 'upload-length': String(size), 'upload-metadata': `filename ${b64(name)},filetype ${b64('application/x-lamp')}` },
  });
  expect(r.status).toBe(201);
  const id = r.headers.get('location')!.split('/').pop()!;
  return { path: `/Product/${product}/image/tus/${id}`, id };
}

const patch = (on: TestServer, path: string, offset: number, body: Uint8Array) =>
  fetch(on.url + path, {
    method: 'PATCH',
    headers: { ...tusHeaders(), 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
    body,
  });

const offsetOn = async (on: TestServer, path: string) => {
  const r = await fetch(on.url + path, { method: 'HEAD', headers: tusHeaders() });
  expect(r.status).toBe(200);
  return Number(r.headers.get('upload-offset'));
};

/** A PATCH that sends `first` of its `total` bytes and then holds the request open. */
function openPatch(on: TestServer, path: string, total: number, first: Uint8Array): { req: ClientRequest; answer: Promise<number | 'closed'> } {
  const url = new URL(on.url + path);
  const req = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'PATCH',
    headers: { ...tusHeaders(), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(total) },
  });
  const answer = new Promise<number | 'closed'>((ok) => {
    req.on('response', (res) => {
      res.resume();
      ok(res.statusCode!);
    });
    req.on('error', () => ok('closed'));
  });
  req.write(first);
  return { req, answer };
}

beforeAll(async () => {
  redis = await PrivateRedis.onFreePort();
  await redis.start();
  control = new Redis(redis.url);
  s3 = await startS3();
  app = await prepareApp(SHOP, 'postgresql');
  // Sweeps every half second with a grace period of ten minutes: the test ages objects past it.
  const env = { ...app.env, ...s3.env, REDIS_URL: redis.url, SVC_BLOB_SWEEP_INTERVAL_MS: '500', SVC_BLOB_SWEEP_GRACE_MS: String(10 * 60_000) };
  [a, b] = await Promise.all([serve(app.dir, env), serve(app.dir, env)]);
  admin = await adminIdentity(app, a.url);
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  control?.disconnect();
  await redis?.stop();
  await s3?.close();
  await app?.cleanup();
});

describe('blobs on two instances (PostgreSQL, Redis, S3)', () => {
  it('a tus upload whose requests alternate between the instances finishes with the right bytes and metadata', async () => {
    const product = await newProduct(a);
    // Ten MiB in four PATCHes: the S3 store's 8 MiB part and its incomplete parts cross instances.
    const bytes = bytesOf(10 * MIB, 3);
    const { path } = await createUpload(a, product, bytes.length, 'big lamp.bin');
    const cuts = [0, 2.5 * MIB, 5 * MIB, 7.5 * MIB, bytes.length];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const on = i % 2 === 0 ? b : a;
      expect(await offsetOn(i % 2 === 0 ? a : b, path)).toBe(cuts[i]);
      last = await patch(on, path, cuts[i], bytes.subarray(cuts[i], cuts[i + 1]));
      expect(last.status, await last.clone().text()).toBe(i < 3 ? 204 : 200);
    }
    const meta = await last!.json();
    expect(meta).toMatchObject({ name: 'big lamp.bin', size: bytes.length, contentType: 'application/x-lamp', sha256: sha256(bytes) });
    const row = await (await fetch(`${b.url}/Product/${product}`, { headers: admin.headers })).json();
    expect(row.image).toEqual(meta);
    const download = await fetch(`${a.url}/Product/${product}/image`);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(bytes));
    expect(await control.exists(lockKey(path.split('/').pop()!))).toBe(0);
  });

  it('two concurrent PATCHes of one upload on two instances are serialized, and the upload stays intact', async () => {
    const product = await newProduct(a);
    const bytes = bytesOf(MIB, 4);
    const { path, id } = await createUpload(a, product, bytes.length);
    const first = openPatch(a, path, bytes.length, bytes.subarray(0, 300_000));
    await waitFor(async () => (await control.exists(lockKey(id))) === 1);
    // B waits for A to let go (A's request ends after tus's drain time, keeping what it wrote), then
    // finds the offset moved: 409, never a second writer on the same bytes.
    const second = await patch(b, path, 0, bytes);
    expect(second.status, await second.clone().text()).toBe(409);
    expect(await first.answer).not.toBe(200);
    first.req.destroy();
    const offset = await offsetOn(b, path);
    expect(offset).toBe(300_000);
    const done = await patch(a, path, offset, bytes.subarray(offset));
    expect(done.status).toBe(200);
    expect((await done.json()).sha256).toBe(sha256(bytes));
    expect(sha256(Buffer.from(await (await fetch(`${b.url}/Product/${product}/image`)).arrayBuffer()))).toBe(sha256(bytes));
  });

  it('malformed upload ids and junk on the lock channel answer 4xx or nothing, and uploads still work (fuzz)', async () => {
    const product = await newProduct(b);
    const ids = [
      '%00',
      '..%2F..%2Fx',
      `Product.${product}.image.${'g'.repeat(32)}`,
      'x'.repeat(5000),
      '%E2%82',
      '%ZZ',
      `Product.${product}.image.%2e%2e`,
      '😀',
    ];
    for (const on of [a, b])
      for (const id of ids)
        for (const method of ['HEAD', 'PATCH', 'DELETE']) {
          const r = await fetch(`${on.url}/Product/${product}/image/tus/${id}`, {
            method,
            headers: { ...tusHeaders(), 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
            body: method === 'PATCH' ? 'x' : undefined,
          }).catch(() => undefined);
          if (r) expect(r.status, `${method} ${id}`).toBeGreaterThanOrEqual(400);
          if (r) expect(r.status, `${method} ${id}`).toBeLessThan(500);
        }
    const junk = [
      '',
      'null',
      '{"t":"release"}',
      '{"t":"release","id":7}',
      '{"t":"unlocked","id":null}',
      '{',
      'x'.repeat(200_000),
      JSON.stringify({ t: 'release', id: '*' }),
    ];
    for (const text of junk) await control.publish('svc:shop:tus-lock', text);
    const { path } = await createUpload(b, product, 3);
    const r = await patch(a, path, 0, Buffer.from('abc'));
    expect(r.status).toBe(200);
    expect((await fetch(`${a.url}/Product/${product}/image`)).status).toBe(200);
  });

  it('the sweep deletes an old object no row names; a committed blob and a fresh object stay; one instance per interval', async () => {
    const product = await newProduct(a);
    const up = await uploadFile(`${b.url}/Product/${product}/image`, bytesOf(1000, 5), { headers: admin.headers });
    expect(up.status).toBe(200);
    const committed = (await s3.keys(`Product/${product}/`))[0];
    s3.age(committed, 2 * 60 * 60_000);
    const orphan = `Product/${randomUUID()}/image/${randomUUID()}/original`;
    const fresh = `Product/${randomUUID()}/image/${randomUUID()}/original`;
    await s3.put(orphan, 'left by a crash');
    s3.age(orphan, 2 * 60 * 60_000);
    await s3.put(fresh, 'an upload about to commit');
    await waitFor(async () => !(await s3.keys(orphan)).length, 10_000);
    expect(await s3.keys(committed)).toEqual([committed]);
    expect(await s3.keys(fresh)).toEqual([fresh]);
    // Logged with the count, by one instance only (the Redis gate: never two sweeps of one interval).
    const deleted = () =>
      [a, b]
        .flatMap((s) => s.output().split('\n'))
        .filter((line) => line.includes('blob sweep: deleted'))
        .map((line) => JSON.parse(line).deleted as number);
    await waitFor(() => deleted().length > 0); // the log line may reach stdout after the delete
    expect(deleted()).toEqual([1]);
    expect(sha256(Buffer.from(await (await fetch(`${a.url}/Product/${product}/image`)).arrayBuffer()))).toBe(sha256(bytesOf(1000, 5)));
  });

  it('a lock holder killed mid-PATCH blocks the upload no longer than the lock lifetime', async () => {
    const product = await newProduct(b);
    const bytes = bytesOf(MIB, 6);
    const { path, id } = await createUpload(b, product, bytes.length);
    const held = openPatch(a, path, bytes.length, bytes.subarray(0, 200_000));
    await waitFor(async () => (await control.exists(lockKey(id))) === 1);
    const exited = new Promise((ok) => a.child.once('exit', ok));
    a.child.kill('SIGKILL');
    await exited;
    await held.answer;
    // The dead holder's lock is still there: B waits for it to expire, not for a release.
    expect(await control.pttl(lockKey(id))).toBeGreaterThan(0);
    const started = Date.now();
    const offset = await offsetOn(b, path);
    expect(Date.now() - started).toBeLessThan(LOCK_TTL_MS + 2000);
    const done = await patch(b, path, offset, bytes.subarray(offset));
    expect(done.status).toBe(200);
    expect((await done.json()).sha256).toBe(sha256(bytes));
  });
});
