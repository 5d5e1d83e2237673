/**
 * Blobs end to end (SPEC §4.5, DESIGN §4 "Blob details", issue "blobs"), on both databases with the
 * local store: multipart upload and its metadata, download with validators, conditional requests and
 * ranges, RFC 6266 file names, atomic replacement (a reader of the old file never sees a mix), files
 * removed with their row or a null write, a failed upload that leaves the previous file and no orphan,
 * the size limit answered before the body is read, bad requests, access rules (`_CREATOR` on PATCH),
 * change notifications, thumbnails, and the clean-up of temporary files at start. The server runs in
 * this process over real HTTP; the store is its real folder.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import ts from 'typescript';
import sharp from 'sharp';
import { backends, type Backend } from '../support/backends.js';
import { prepareApp, ROOT, runCli, type PreparedApp } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { call } from '../support/scenario.js';
import { bytesOf, jpeg, localFiles, sha256, startS3, uploadFile, type S3Server } from '../support/blobs.js';
import * as tus from 'tus-js-client';
import { waitFor } from '../support/wait.js';
import { startServer, type Change, type RunningServer } from '../../dist/runtime/index.js';

const SHOP = join(ROOT, 'examples/shop');
const MAX = 1024 * 1024;

function blobSuite(backend: Backend, storeKind: 'local' | 's3'): void {
  describe(`blobs on ${backend} (${storeKind} store)`, () => {
    let app: PreparedApp;
    let server: RunningServer;
    let base: string;
    let root: string;
    let s3: S3Server | undefined;
    /** The stored files (keys), sorted; `all`: with temporary and resumable-upload files. */
    const files = async (all = false): Promise<string[]> => (s3 ? (await s3.keys()).filter((k) => all || k.includes('/')) : localFiles(root, { all }));
    let admin: Identity;
    let ada: Identity;
    let bob: Identity;
    const published: Change[][] = [];
    const auth = (who: Identity) => who.headers;

    const newProduct = async () =>
      (await call(base, 'POST', '/Product', { sku: `s${Math.random()}`.slice(0, 30), name: 'Lamp', price: 5 }, auth(admin))).json.data[0] as string;

    beforeAll(async () => {
      app = await prepareApp(SHOP, backend);
      const svcFile = join(app.dir, 'svc.json');
      writeFileSync(svcFile, JSON.stringify({ ...JSON.parse(readFileSync(svcFile, 'utf8')), storage: { maxBytes: MAX, thumbnails: ['100x100', '64x48'] } }));
      // A child collection with a blob: its files go when the parent's write deletes the child.
      const lineFile = join(app.dir, 'collections', 'OrderLine.json');
      const line = JSON.parse(readFileSync(lineFile, 'utf8'));
      line.properties.photo = { type: 'blob' };
      writeFileSync(lineFile, JSON.stringify(line));
      expect((await runCli(['generate', app.dir], app.env)).code).toBe(0);
      root = join(app.dir, 'data', 'blobs');
      if (storeKind === 's3') s3 = await startS3();
      // What a crash mid-upload leaves behind: a temporary file, removed at start.
      mkdirSync(join(root, '.tmp'), { recursive: true });
      writeFileSync(join(root, '.tmp', 'left-by-a-crash'), 'partial');
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env, ...s3?.env },
        logger: pino({ level: 'silent' }),
        sink: { publish: (changes) => published.push(changes) },
      });
      base = server.url;
      admin = await adminIdentity(app, base);
      ada = await userIdentity(app, base, 'ada');
      bob = await userIdentity(app, base, 'bob');
    });
    afterAll(async () => {
      await server?.close();
      await s3?.close();
      await app?.cleanup();
    });

    it('removes temporary files a crash left behind when it starts', () => {
      // (The S3 store leaves the local folder alone; its leftovers are unfinished multipart uploads.)
      expect(localFiles(root, { all: true }).filter((f) => f.startsWith('.tmp/'))).toEqual(s3 ? ['.tmp/left-by-a-crash'] : []);
    });

    it('upload answers the metadata, the row reads it, and the change is a PATCH of the row', async () => {
      const id = await newProduct();
      const bytes = bytesOf(200_000);
      published.length = 0;
      const r = await uploadFile(`${base}/Product/${id}/image`, bytes, { name: 'Ünïcode “photo”.bin', type: 'application/x-test', headers: auth(admin) });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json).toEqual({
        name: 'Ünïcode “photo”.bin',
        size: 200_000,
        contentType: 'application/x-test',
        sha256: sha256(bytes),
        url: expect.stringMatching(new RegExp(`^/api/Product/${id}/image\\?v=[0-9a-f-]{36}&exp=\\d+&sig=[\\w-]{43}$`)),
      });
      const row = await call(base, 'GET', `/Product/${id}`, undefined, auth(admin));
      expect(row.json.image).toEqual(r.json);
      expect(row.json.updatedAt > row.json.createdAt).toBe(true);
      await waitFor(() => published.length > 0);
      expect(published).toEqual([[{ collection: 'Product', action: 'PATCH', ids: [id], lookupIds: [] }]]);
      expect((await files()).filter((f) => f.includes(id))).toEqual([`Product/${id}/image/${r.json.url.split('v=')[1].split('&')[0]}/original`]);
    });

    it('download streams the bytes with type, length, ETag, Last-Modified and an RFC 6266 file name', async () => {
      const id = await newProduct();
      const bytes = bytesOf(70_000, 2);
      const up = await uploadFile(`${base}/Product/${id}/image`, bytes, { name: 'naïve résumé.pdf', type: 'application/pdf', headers: auth(admin) });
      const r = await fetch(`${base}/Product/${id}/image`);
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);
      expect(r.headers.get('content-type')).toBe('application/pdf');
      expect(r.headers.get('content-length')).toBe('70000');
      expect(r.headers.get('etag')).toBe(`"${up.json.sha256}"`);
      expect(new Date(r.headers.get('last-modified')!).getTime()).toBeGreaterThan(Date.now() - 60_000);
      expect(r.headers.get('accept-ranges')).toBe('bytes');
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('content-disposition')).toBe(`inline; filename="na?ve r?sum?.pdf"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.pdf`);
      // HTML would run as the API's origin: it is only ever an attachment.
      const html = await uploadFile(`${base}/Product/${id}/image`, Buffer.from('<script>alert(1)</script>'), {
        name: 'x.html',
        type: 'text/html',
        headers: auth(admin),
      });
      expect(html.status).toBe(200);
      const h = await fetch(`${base}/Product/${id}/image`);
      expect(h.headers.get('content-disposition')).toMatch(/^attachment;/);
      // The versioned url never changes meaning: it may be cached for good.
      const versioned = await fetch(`${base.replace(/\/api$/, '')}${html.json.url}`);
      expect(versioned.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
      expect(h.headers.get('cache-control')).toBe('private, no-cache');
    });

    it('conditional requests answer 304; ranges answer 206 and 416; HEAD sends headers only', async () => {
      const id = await newProduct();
      const bytes = bytesOf(10_000, 3);
      const up = await uploadFile(`${base}/Product/${id}/image`, bytes, { headers: auth(admin) });
      const url = `${base}/Product/${id}/image`;
      const first = await fetch(url);
      const etag = first.headers.get('etag')!;
      await first.arrayBuffer();
      expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-none-match': `W/${etag}, "other"` } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-none-match': '"stale"' } })).status).toBe(200);
      expect((await fetch(url, { headers: { 'if-modified-since': first.headers.get('last-modified')! } })).status).toBe(304);
      expect((await fetch(url, { headers: { 'if-modified-since': new Date(Date.now() - 3_600_000).toUTCString() } })).status).toBe(200);

      const part = await fetch(url, { headers: { range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe('bytes 100-199/10000');
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
      const tail = await fetch(url, { headers: { range: 'bytes=-50' } });
      expect(tail.status).toBe(206);
      expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(9950))).toBe(true);
      const open = await fetch(url, { headers: { range: 'bytes=9990-' } });
      expect(open.headers.get('content-range')).toBe('bytes 9990-9999/10000');
      const outside = await fetch(url, { headers: { range: 'bytes=20000-' } });
      expect(outside.status).toBe(416);
      expect(outside.headers.get('content-range')).toBe('bytes */10000');
      expect((await outside.json()).code).toBe('RANGE_NOT_SATISFIABLE');
      // If-Range with a stale validator: the whole file.
      const stale = await fetch(url, { headers: { range: 'bytes=0-9', 'if-range': '"old"' } });
      expect(stale.status).toBe(200);
      expect((await stale.arrayBuffer()).byteLength).toBe(10_000);
      const head = await fetch(url, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe('10000');
      expect(head.headers.get('etag')).toBe(`"${up.json.sha256}"`);
    });

    it('a second upload replaces the first atomically: a reader of the old file gets all of it, then its files go', async () => {
      const id = await newProduct();
      const old = bytesOf(900_000, 4);
      const first = await uploadFile(`${base}/Product/${id}/image`, old, { headers: auth(admin) });
      const oldVersion = first.json.url.split('v=')[1].split('&')[0];
      // A slow reader: the response is open and only partly read when the replacement commits.
      const reading = await fetch(`${base}/Product/${id}/image`);
      const reader = reading.body!.getReader();
      const chunks: Uint8Array[] = [(await reader.read()).value!];
      const fresh = bytesOf(300_000, 5);
      const second = await uploadFile(`${base}/Product/${id}/image`, fresh, { headers: auth(admin) });
      expect(second.status).toBe(200);
      expect(second.json.sha256).toBe(sha256(fresh));
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
      expect(sha256(Buffer.concat(chunks))).toBe(sha256(old));
      const now = await fetch(`${base}/Product/${id}/image`);
      expect(sha256(Buffer.from(await now.arrayBuffer()))).toBe(sha256(fresh));
      await waitFor(async () => !(await files()).some((f) => f.includes(oldVersion)));
      expect((await files()).filter((f) => f.includes(id))).toEqual([`Product/${id}/image/${second.json.url.split('v=')[1].split('&')[0]}/original`]);
    });

    it('a failed upload leaves the previous file in place and no orphan; past the limit it answers 413 before the body is sent', async () => {
      const id = await newProduct();
      const kept = bytesOf(1000, 6);
      const first = await uploadFile(`${base}/Product/${id}/image`, kept, { headers: auth(admin) });
      const before = await files(true);
      // Declared too large: refused from Content-Length.
      const declared = await uploadFile(`${base}/Product/${id}/image`, bytesOf(MAX + 100_000), { headers: auth(admin) });
      expect(declared.status).toBe(413);
      expect(declared.json).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', error: expect.stringContaining('1 MiB') });
      // Streamed without a length: refused once the limit is passed, while the client is still sending.
      const boundary = 'XyZ';
      // The server answers and closes while the client still sends; on a busy machine the client can
      // see the closed socket (EPIPE, ECONNRESET) before it reads the answer: such a try is made again.
      const streamed = () =>
        new Promise<{ status: number; sent: number }>((resolve, reject) => {
          const req = request(`${base}/Product/${id}/image`, {
            method: 'POST',
            headers: { ...auth(admin), 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
          });
          let sent = 0;
          let answered = false;
          req.on('response', (res) => {
            answered = true;
            res.resume();
            resolve({ status: res.statusCode!, sent });
          });
          req.on('error', (err) => (answered ? undefined : reject(err)));
          req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
          const pump = () => {
            if (answered) return req.destroy();
            if (sent > 100 * MAX) return req.end(`\r\n--${boundary}--\r\n`);
            sent += 64 * 1024;
            if (req.write(bytesOf(64 * 1024))) setImmediate(pump);
            else req.once('drain', pump);
          };
          pump();
        });
      let attempt: { status: number; sent: number } | undefined;
      for (let tries = 1; !attempt; tries++) {
        attempt = await streamed().catch((err: NodeJS.ErrnoException) => {
          if (tries >= 3 || !['EPIPE', 'ECONNRESET'].includes(err.code ?? '')) throw err;
          return undefined;
        });
      }
      const { status, sent } = attempt;
      expect(status).toBe(413);
      // Loopback socket buffers hold a few MiB the server never read; the body was 100 MiB.
      expect(sent).toBeLessThan(20 * MAX);
      // A body cut off mid-file.
      await new Promise<void>((resolve) => {
        const req = request(`${base}/Product/${id}/image`, {
          method: 'POST',
          headers: { ...auth(admin), 'content-type': `multipart/form-data; boundary=${boundary}` },
        });
        req.on('error', () => resolve());
        req.on('response', (res) => {
          res.resume();
          resolve();
        });
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`);
        req.write(bytesOf(100_000));
        setTimeout(() => req.destroy(), 100);
      });
      await waitFor(async () => (await files(true)).join() === before.join()).catch(async () => expect(await files(true)).toEqual(before));
      const row = await call(base, 'GET', `/Product/${id}`, undefined, auth(admin));
      expect(row.json.image).toEqual(first.json);
      expect(sha256(Buffer.from(await (await fetch(`${base}/Product/${id}/image`)).arrayBuffer()))).toBe(sha256(kept));
    });

    it('bad requests answer 400, 404 and 415 with the error body and change nothing', async () => {
      const id = await newProduct();
      const first = await uploadFile(`${base}/Product/${id}/image`, bytesOf(10), { headers: auth(admin) });
      const before = await files(true);
      const wrongPart = await uploadFile(`${base}/Product/${id}/image`, bytesOf(10), { part: 'photo', headers: auth(admin) });
      expect(wrongPart.status).toBe(400);
      expect(wrongPart.json).toMatchObject({ code: 'VALIDATION_FAILED', error: expect.stringContaining('"file"') });
      const noFile = new FormData();
      noFile.append('note', 'hello');
      const missing = await fetch(`${base}/Product/${id}/image`, { method: 'POST', body: noFile, headers: auth(admin) });
      expect(missing.status).toBe(400);
      expect((await missing.json()).error).toMatch(/no part named "file"/);
      const two = await uploadFile(`${base}/Product/${id}/image`, bytesOf(10, 7), {
        headers: auth(admin),
        extra: (form) => form.append('file', new Blob([bytesOf(10, 8)]), 'second.bin'),
      });
      expect(two.status).toBe(400);
      expect(two.json.error).toMatch(/exactly one file part/);
      const notBlob = await uploadFile(`${base}/Product/${id}/name`, bytesOf(10), { headers: auth(admin) });
      expect(notBlob.status).toBe(400);
      expect(notBlob.json.error).toBe('"name" is not a blob property of Product (blob properties: image)');
      const noRow = await uploadFile(`${base}/Product/01900000-0000-7000-8000-000000000000/image`, bytesOf(10), { headers: auth(admin) });
      expect(noRow.status).toBe(404);
      expect(noRow.json.code).toBe('NOT_FOUND');
      const json = await call(base, 'POST', `/Product/${id}/image`, { file: 'x' }, auth(admin));
      expect(json.status).toBe(415);
      expect((await call(base, 'PUT', `/Product/${id}/image`, { file: 'x' }, auth(admin))).status).toBe(405);
      await waitFor(async () => (await files(true)).join() === before.join()).catch(async () => expect(await files(true)).toEqual(before));
      expect((await call(base, 'GET', `/Product/${id}`, undefined, auth(admin))).json.image).toEqual(first.json);
      // A row without a file: 404 on download.
      const empty = await newProduct();
      const none = await fetch(`${base}/Product/${empty}/image`);
      expect(none.status).toBe(404);
      expect((await none.json()).error).toMatch(/has no image/);
    });

    it('the files go with their row, with a null write and with DELETE on the blob; PUT without the property keeps it', async () => {
      const a = await newProduct();
      const b = await newProduct();
      const c = await newProduct();
      const up = async (id: string) => (await uploadFile(`${base}/Product/${id}/image`, bytesOf(500, 9), { headers: auth(admin) })).json;
      const ma = await up(a);
      await up(b);
      await up(c);
      const put = await call(base, 'PUT', `/Product/${a}`, { sku: 'kept', name: 'Lamp', price: 6 }, auth(admin));
      expect(put.status).toBe(200);
      expect(put.json.image).toEqual(ma);
      expect((await call(base, 'PATCH', `/Product/${a}`, { image: 'nope' }, auth(admin))).json).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: '/image' }],
      });
      const cleared = await call(base, 'PATCH', `/Product/${a}`, { image: null }, auth(admin));
      expect(cleared.status).toBe(200);
      expect(cleared.json.image).toBeNull();
      expect((await fetch(`${base}/Product/${a}/image`)).status).toBe(404);
      expect((await call(base, 'DELETE', `/Product/${b}`, undefined, auth(admin))).status).toBe(204);
      const del = await fetch(`${base}/Product/${c}/image`, { method: 'DELETE', headers: auth(admin) });
      expect(del.status).toBe(204);
      await waitFor(async () => !(await files()).some((f) => f.includes(a) || f.includes(b) || f.includes(c)));
      // The emptied row folders go too.
      if (!s3) expect(readdirSync(join(root, 'Product')).some((f) => f === b)).toBe(false);
    });

    it('a child row deleted through its parent takes its files along', async () => {
      const customer = (await call(base, 'POST', '/Customer', { name: 'Cy', country: 'NO' }, auth(admin))).json.data[0];
      const product = await newProduct();
      const order = (
        await call(
          base,
          'POST',
          '/Order',
          { title: 'o', customer: { id: customer }, 'OrderLine.order': [{ product: { id: product }, quantity: 1, unitPrice: 2 }] },
          auth(admin),
        )
      ).json.data[0];
      const lines = (await call(base, 'GET', `/Order/${order}?include=OrderLine.order`, undefined, auth(admin))).json['OrderLine.order'];
      const up = await uploadFile(`${base}/OrderLine/${lines[0].id}/photo`, bytesOf(300, 12), { headers: auth(admin) });
      expect(up.status).toBe(200);
      expect((await files()).some((f) => f.startsWith(`OrderLine/${lines[0].id}/`))).toBe(true);
      expect((await call(base, 'PATCH', `/Order/${order}`, { 'OrderLine.order': [] }, auth(admin))).status).toBe(200);
      await waitFor(async () => !(await files()).some((f) => f.startsWith(`OrderLine/${lines[0].id}/`)));
    });

    it('upload needs the PATCH rule (_CREATOR), download the GET rule; anonymous callers get 401', async () => {
      const customer = (await call(base, 'POST', '/Customer', { name: 'Ada', country: 'GB' }, auth(admin))).json.data[0];
      const created = await call(base, 'POST', '/Order', { title: 'mine', customer: { id: customer } }, auth(ada));
      expect(created.status, created.text).toBe(201);
      const order = created.json.data[0];
      const invoice = Buffer.from('%PDF-1.4 invoice');
      const byBob = await uploadFile(`${base}/Order/${order}/invoice`, invoice, { headers: auth(bob) });
      expect(byBob.status).toBe(403);
      expect(byBob.json.code).toBe('FORBIDDEN');
      expect((await uploadFile(`${base}/Order/${order}/invoice`, invoice)).status).toBe(401);
      const byAda = await uploadFile(`${base}/Order/${order}/invoice`, invoice, { name: 'inv.pdf', type: 'application/pdf', headers: auth(ada) });
      expect(byAda.status).toBe(200);
      expect((await fetch(`${base}/Order/${order}/invoice`)).status).toBe(401);
      const read = await fetch(`${base}/Order/${order}/invoice`, { headers: auth(bob) });
      expect(read.status).toBe(200);
      expect(await read.text()).toBe('%PDF-1.4 invoice');
      expect((await fetch(`${base}/Order/${order}/invoice`, { method: 'DELETE', headers: auth(bob) })).status).toBe(403);
      // A view narrows blob routes as it narrows rows: OpenOrders shows unpaid orders only.
      expect((await fetch(`${base}/OpenOrders/${order}/invoice`, { headers: auth(bob) })).status).toBe(200);
      expect((await call(base, 'PATCH', `/Order/${order}`, { paid: true }, auth(ada))).status).toBe(200);
      expect((await fetch(`${base}/OpenOrders/${order}/invoice`, { headers: auth(bob) })).status).toBe(404);
    });

    it('tus: an interrupted upload resumes where it stopped and ends in the same metadata, under the PATCH rule', async () => {
      const id = await newProduct();
      const other = await newProduct();
      const bytes = bytesOf(700_000, 11);
      const endpoint = `${base}/Product/${id}/image/tus`;
      const create = { 'tus-resumable': '1.0.0', 'upload-length': '10' };
      expect((await fetch(endpoint, { method: 'POST', headers: create })).status).toBe(401);
      expect((await fetch(endpoint, { method: 'POST', headers: { ...create, ...auth(bob) } })).status).toBe(403);
      const tooBig = await fetch(endpoint, { method: 'POST', headers: { ...auth(admin), 'tus-resumable': '1.0.0', 'upload-length': String(MAX + 1) } });
      expect(tooBig.status).toBe(413);
      const options = (extra: Partial<tus.UploadOptions>): tus.UploadOptions => ({
        endpoint,
        chunkSize: 100_000,
        headers: auth(admin),
        metadata: { filename: 'big résumé.bin', filetype: 'application/x-big' },
        retryDelays: null,
        ...extra,
      });
      // The first attempt stops after 300,000 bytes (the client aborts, as a dropped connection would).
      const first = new tus.Upload(bytes, options({}));
      await new Promise<void>((resolve, reject) => {
        first.options.onError = reject;
        first.options.onChunkComplete = (_size, accepted) => {
          if (accepted >= 300_000) void first.abort().then(resolve, reject);
        };
        first.start();
      });
      const url = first.url!;
      expect(url).toMatch(new RegExp(`^${base}/Product/${id}/image/tus/Product\\.${id}\\.image\\.[0-9a-f]{32}$`));
      const head = await fetch(url, { method: 'HEAD', headers: { ...auth(admin), 'tus-resumable': '1.0.0' } });
      expect(head.headers.get('upload-offset')).toBe('300000');
      // The upload belongs to its row and field only.
      const elsewhere = await fetch(url.replace(id, other), { method: 'HEAD', headers: { ...auth(admin), 'tus-resumable': '1.0.0' } });
      expect(elsewhere.status).toBe(404);
      expect((await call(base, 'GET', `/Product/${id}`, undefined, auth(admin))).json.image).toBeNull();
      // The second attempt resumes from the server's offset and finishes with the metadata.
      const sentAgain: number[] = [];
      const body = await new Promise<string>((resolve, reject) => {
        const second = new tus.Upload(
          bytes,
          options({
            uploadUrl: url,
            onError: reject,
            onChunkComplete: (size) => sentAgain.push(size),
            onSuccess: (payload) => resolve(payload.lastResponse.getBody()),
          }),
        );
        second.start();
      });
      expect(sentAgain.reduce((a, b) => a + b, 0)).toBe(400_000);
      const meta = JSON.parse(body);
      expect(meta).toMatchObject({ name: 'big résumé.bin', size: 700_000, contentType: 'application/x-big', sha256: sha256(bytes) });
      expect((await call(base, 'GET', `/Product/${id}`, undefined, auth(admin))).json.image).toEqual(meta);
      expect(sha256(Buffer.from(await (await fetch(`${base}/Product/${id}/image`)).arrayBuffer()))).toBe(sha256(bytes));
      // Nothing of the resumable upload is left behind.
      const leftovers = async () => (await files(true)).filter((f) => f.includes(`Product.${id}.`));
      await waitFor(async () => (await leftovers()).length === 0).catch(async () => expect(await leftovers()).toEqual([]));
    });

    it('tus: only upload ids of the generated form are served (no path climbing into another row); filetype must be a media type', async () => {
      const victim = await newProduct();
      const mine = await newProduct();
      const tusHeaders = { ...auth(admin), 'tus-resumable': '1.0.0' };
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      const created = await fetch(`${base}/Product/${victim}/image/tus`, {
        method: 'POST',
        headers: { ...tusHeaders, 'upload-length': '10', 'upload-metadata': `filename ${b64('a.txt')},filetype ${b64('text/plain; charset=utf-8')}` },
      });
      expect(created.status).toBe(201);
      const upload = created.headers.get('location')!.split('/').pop()!;
      expect((await fetch(`${base}/Product/${victim}/image/tus/${upload}`, { method: 'HEAD', headers: tusHeaders })).status).toBe(200);
      // The prefix of my row, then a climb to the victim's upload: refused before any store sees it.
      for (const forged of [`Product.${mine}.image.%2F..%2F${upload}`, `Product.${mine}.image.${upload.slice(-32)}x`, `Product.${mine}.image.`]) {
        const r = await fetch(`${base}/Product/${mine}/image/tus/${forged}`, { method: 'HEAD', headers: tusHeaders });
        expect(r.status, forged).toBe(404);
        const patched = await fetch(`${base}/Product/${mine}/image/tus/${forged}`, {
          method: 'PATCH',
          headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
          body: 'overwrite!',
        });
        expect(patched.status, forged).toBe(404);
      }
      expect((await fetch(`${base}/Product/${victim}/image/tus/${upload}`, { method: 'HEAD', headers: tusHeaders })).headers.get('upload-offset')).toBe('0');
      // A filetype that would break the download's headers is refused at creation, naming the field.
      for (const type of ['text/plain\r\nx-evil: 1', 'text/plain\n', 'not a type', 'a/b; c="\n"', `a/${'b'.repeat(300)}`]) {
        const bad = await fetch(`${base}/Product/${mine}/image/tus`, {
          method: 'POST',
          headers: { ...tusHeaders, 'upload-length': '3', 'upload-metadata': `filetype ${b64(type)}` },
        });
        expect(bad.status, JSON.stringify(type)).toBe(400);
        expect(await bad.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: '/filetype' }] });
      }
      // A valid one with parameters is kept and the download answers with it.
      const good = await fetch(`${base}/Product/${mine}/image/tus`, {
        method: 'POST',
        headers: { ...tusHeaders, 'upload-length': '3', 'upload-metadata': `filetype ${b64('text/plain; charset=utf-8')}` },
      });
      const done = await fetch(good.headers.get('location')!, {
        method: 'PATCH',
        headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
        body: 'abc',
      });
      expect(done.status).toBe(200);
      const download = await fetch(`${base}/Product/${mine}/image`);
      expect(download.status).toBe(200);
      expect(download.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await download.text()).toBe('abc');
    });

    it('openapi.json describes the multipart upload and binary download; the agent gets no blob tools', () => {
      const doc = JSON.parse(readFileSync(join(app.dir, '.svc/openapi.json'), 'utf8'));
      const path = doc.paths['/Product/{id}/image'];
      expect(Object.keys(path)).toEqual(['parameters', 'post', 'get', 'delete']);
      expect(path.post.requestBody.content['multipart/form-data'].schema).toMatchObject({
        properties: { file: { type: 'string', format: 'binary' } },
        required: ['file'],
      });
      expect(path.post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/BlobMetadata' });
      expect(Object.keys(path.post.responses)).toEqual(expect.arrayContaining(['413', '415']));
      expect(path.get.responses['200'].content['application/octet-stream'].schema).toEqual({ type: 'string', format: 'binary' });
      expect(path.get.parameters[0]).toMatchObject({ name: 'thumb', schema: { enum: ['100x100', '100x100f', '64x48', '64x48f'] } });
      expect(doc.components.schemas.Product.properties.image.required).toEqual(['name', 'size', 'contentType', 'sha256', 'url']);
      expect(doc.paths['/OrderLine/{id}/photo']).toBeDefined();
      const tools = readFileSync(join(app.dir, '.svc/agent-tools.json'), 'utf8');
      expect(tools).not.toMatch(/uploadProduct|downloadProduct|deleteFileProduct/);
      expect(tools).toContain('getProduct');
    });

    it('the generated client uploads, downloads, addresses and removes files with typed helpers', async () => {
      const source = readFileSync(join(app.dir, '.svc/client.ts'), 'utf8');
      expect(source).toContain('Schemas["ProductPatch"], "image">(caller, "/Product")');
      const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
      const file = join(app.dir, `client-${storeKind}.mjs`);
      writeFileSync(file, js);
      const { createClient } = await import(pathToFileURL(file).href);
      const api = createClient({ baseUrl: base, token: admin.token });
      const products = api.collections.Product;
      const id = await newProduct();
      const picture = await jpeg(300, 200);
      const meta = await products.upload(id, 'image', new Blob([picture], { type: 'image/jpeg' }), 'lamp.jpg');
      expect(meta).toMatchObject({ name: 'lamp.jpg', size: picture.length, contentType: 'image/jpeg', sha256: sha256(picture) });
      expect((await products.get(id)).image).toEqual(meta);
      const back = await products.download(id, 'image');
      expect(sha256(Buffer.from(await back.arrayBuffer()))).toBe(sha256(picture));
      const thumb = await products.download(id, 'image', { thumb: '100x100f' });
      expect((await sharp(Buffer.from(await thumb.arrayBuffer())).metadata()).width).toBe(100);
      expect(products.fileUrl(id, 'image', { thumb: '64x48' })).toBe(`${base}/Product/${id}/image?thumb=64x48`);
      await products.deleteFile(id, 'image');
      await expect(products.download(id, 'image')).rejects.toMatchObject({ status: 404 });
    });

    it('thumbnails: allowed sizes only, cropped or fitted, made once beside the original, dropped with it', async () => {
      const id = await newProduct();
      const up = await uploadFile(`${base}/Product/${id}/image`, await jpeg(800, 600), { name: 'p.jpg', type: 'image/jpeg', headers: auth(admin) });
      const version = up.json.url.split('v=')[1].split('&')[0];
      const crop = await fetch(`${base}/Product/${id}/image?thumb=100x100`);
      expect(crop.status).toBe(200);
      expect(crop.headers.get('content-type')).toBe('image/jpeg');
      expect(crop.headers.get('etag')).toBe(`"${up.json.sha256}-100x100"`);
      const cropMeta = await sharp(Buffer.from(await crop.arrayBuffer())).metadata();
      expect([cropMeta.width, cropMeta.height, cropMeta.format]).toEqual([100, 100, 'jpeg']);
      const fit = await fetch(`${base}/Product/${id}/image?thumb=100x100f`);
      const fitMeta = await sharp(Buffer.from(await fit.arrayBuffer())).metadata();
      expect([fitMeta.width, fitMeta.height]).toEqual([100, 75]);
      expect((await files()).filter((f) => f.includes(id))).toEqual(
        ['original', 'thumb-100x100', 'thumb-100x100f'].map((n) => `Product/${id}/image/${version}/${n}`),
      );
      // Concurrent requests for a new size share one making; all get the same bytes.
      const many = await Promise.all(
        Array.from({ length: 5 }, () => fetch(`${base}/Product/${id}/image?thumb=64x48f`).then(async (r) => sha256(Buffer.from(await r.arrayBuffer())))),
      );
      expect(new Set(many).size).toBe(1);
      const bad = await fetch(`${base}/Product/${id}/image?thumb=300x300`);
      expect(bad.status).toBe(400);
      expect((await bad.json()).error).toBe('thumb must be one of the allowed sizes: 100x100 or 100x100f, 64x48 or 64x48f');
      expect((await fetch(`${base}/Product/${id}/image?thumb=100x100&v=1`, { headers: { 'if-none-match': `"${up.json.sha256}-100x100"` } })).status).toBe(304);
      await uploadFile(`${base}/Product/${id}/image`, await jpeg(50, 50), { type: 'image/jpeg', headers: auth(admin) });
      await waitFor(async () => !(await files()).some((f) => f.includes(version)));
      const other = await newProduct();
      await uploadFile(`${base}/Product/${other}/image`, bytesOf(100), { type: 'text/plain', headers: auth(admin) });
      const text = await fetch(`${base}/Product/${other}/image?thumb=100x100`);
      expect(text.status).toBe(400);
      expect((await text.json()).error).toMatch(/images only/);
      await uploadFile(`${base}/Product/${other}/image`, bytesOf(100), { type: 'image/png', headers: auth(admin) });
      const broken = await fetch(`${base}/Product/${other}/image?thumb=100x100`);
      expect(broken.status).toBe(400);
      expect((await broken.json()).error).toMatch(/not an image that can be read/);
    });
  });
}

for (const backend of backends()) blobSuite(backend, 'local');
// The store does not depend on the database: the S3 path runs once, against s3rver on loopback.
blobSuite(backends()[0], 's3');
