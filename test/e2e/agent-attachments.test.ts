/**
 * Files and images in agent messages end to end (issue 34 §3; DESIGN §7a; docs/agent.md
 * "Attachments"): the agent fixture app with `agent.attachments.maxBytes` 200,000 and a `pro` rung
 * whose model takes no files, served over real HTTP on SQLite and PostgreSQL, a real
 * `@azure/web-pubsub-client` and the scripted model on loopback. Uploads go to `POST
 * /api/_agent/uploads` (multipart); a `message` names them; the model receives the PNG as an
 * `image_url` and the PDF as a `file` part (bytes and media type checked), or on the `pro` rung the
 * PDF's text extracted with unpdf; `history` returns them with signed urls that download the same
 * bytes; hostile uploads (EXE or PDF bytes named .png, too large, anonymous, not multipart) and
 * hostile `attachments` (another identity's upload, unknown ids, fuzzed arrays) are refused;
 * `thread-delete` and deleting the identity delete the uploads, bytes included. Resumable uploads go
 * through tus. The store is the local folder on both databases, and an S3 bucket (s3rver) once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import * as tus from 'tus-js-client';
import { prepareApp, ROOT, type PreparedApp } from '../support/cli.js';
import { backends, type Backend } from '../support/backends.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { fuzzSeed, Prng } from '../support/hostile.js';
import { bytesOf, localFiles, startS3, uploadFile, type S3Server } from '../support/blobs.js';
import { makePdf, png } from '../support/files.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { ChatClient, postJson } from '../support/chat-client.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');
const MAX_BYTES = 200_000;

function withAttachments(dir: string): void {
  const file = join(dir, 'svc.json');
  const svc = JSON.parse(readFileSync(file, 'utf8'));
  svc.agent.attachments = { maxBytes: MAX_BYTES };
  svc.agent.rungs.pro.files = false;
  writeFileSync(file, JSON.stringify(svc, null, 2));
}

/** The content parts of the last user message the model was sent. */
function lastUserParts(model: ModelServer): any[] {
  const user = model.requests
    .at(-1)!
    .body.messages.filter((m) => m.role === 'user')
    .at(-1)!;
  return typeof user.content === 'string' ? [{ type: 'text', text: user.content }] : (user.content as any[]);
}

const dataUrl = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString('base64')}`;

function attachmentSuite(backend: Backend, storeKind: 'local' | 's3'): void {
  describe(`agent attachments on ${backend}, ${storeKind} store`, () => {
    let app: PreparedApp;
    let s3: S3Server | undefined;
    let model: ModelServer;
    let server: RunningServer;
    let base: string;
    let writer: Identity;
    let reader: Identity;
    let chat: ChatClient;
    /** The keys the blob store holds under `prefix` (a local folder or the s3rver bucket). */
    const keys = async (prefix: string) => (s3 ? await s3.keys(prefix) : localFiles(join(app.dir, 'data/blobs')).filter((k) => k.startsWith(prefix)));
    /** True when the store holds the bytes of that upload of the writer. */
    const stored = async (uploadId: string) => (await keys(`_agent/${writer.id}/${uploadId}/`)).length > 0;
    const upload = (who: Identity | null, bytes: Buffer, name: string, type = 'application/octet-stream') =>
      uploadFile(`${base}/_agent/uploads`, bytes, { name, type, headers: who?.headers ?? {} });

    beforeAll(async () => {
      model = await startModelServer();
      app = await prepareApp(FIXTURE, backend, withAttachments);
      if (storeKind === 's3') s3 = await startS3();
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: { ...process.env, ...app.env, ...s3?.env, MODEL_URL: model.url, SVC_SECRET_LLM: 'k' },
        logger: pino({ level: 'silent' }),
      });
      base = server.url;
      writer = await userIdentity(app, base, 'writer', ['writer']);
      reader = await userIdentity(app, base, 'reader');
      chat = new ChatClient(base, writer);
      await chat.connect();
    }, 120_000);

    afterAll(async () => {
      chat?.stop();
      await server?.close();
      await model?.close();
      await s3?.close();
      await app?.cleanup();
    });

    it('an image and a PDF reach the model as image and file parts; history gives signed urls that download the same bytes', async () => {
      const image = await png(8, 6);
      const pdf = makePdf('Invoice 4711 total 99 NOK');
      const up1 = await upload(writer, image, 'photo.png', 'image/png');
      expect(up1.status, JSON.stringify(up1.json)).toBe(201);
      expect(up1.json).toEqual({ uploadId: expect.any(String), name: 'photo.png', type: 'image/png', size: image.length });
      // The client's type is not trusted: the bytes say PDF.
      const up2 = await upload(writer, pdf, 'invoice.pdf', 'text/html');
      expect(up2.json).toMatchObject({ name: 'invoice.pdf', type: 'application/pdf', size: pdf.length });
      const notes = Buffer.from('plain notes: ærlig talt\n');
      const up3 = await upload(writer, notes, 'notes.txt');
      expect(up3.json).toMatchObject({ type: 'text/plain' });

      model.script({ text: ['I see a picture and an invoice.'], usage: { prompt: 1200, completion: 8 } });
      const sent = chat.events.length;
      await chat.send({
        type: 'message',
        text: 'What is in these?',
        attachments: [{ uploadId: up1.json.uploadId }, { uploadId: up2.json.uploadId }, { uploadId: up3.json.uploadId }],
      });
      expect(await chat.next('turn-completed', sent, 20_000)).toMatchObject({ status: 'completed' });
      // Charged as the provider billed it: the attachments are in its prompt tokens (1200 × 15 + 8 × 60, per 1,000).
      expect((await chat.next('credits', sent)).credits).toBe(19);
      const parts = lastUserParts(model);
      expect(parts).toEqual([
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: dataUrl('image/png', image) } },
        { type: 'file', file: { filename: 'invoice.pdf', file_data: dataUrl('application/pdf', pdf) } },
        { type: 'text', text: 'plain notes: ærlig talt\n' },
      ]);

      // The next turn of the thread sends the earlier attachments again (the model keeps no state).
      model.script({ text: ['Still there.'] });
      await chat.turn('And now?');
      const again = model.requests.at(-1)!.body.messages.filter((m) => m.role === 'user');
      expect(again).toHaveLength(2);
      expect((again[0].content as any[])[1]).toEqual({ type: 'image_url', image_url: { url: dataUrl('image/png', image) } });
      expect(again[1].content).toBe('And now?');

      const from = chat.events.length;
      await chat.send({ type: 'thread-list' });
      const list = await chat.next('thread-list', from);
      await chat.send({ type: 'thread-resume', threadId: list.threads[0].id });
      const history = await chat.next('history', from);
      const first = history.items.find((i: any) => i.type === 'user-message');
      expect(first.attachments.map((a: any) => [a.name, a.type, a.size])).toEqual([
        ['photo.png', 'image/png', image.length],
        ['invoice.pdf', 'application/pdf', pdf.length],
        ['notes.txt', 'text/plain', notes.length],
      ]);
      expect(first.attachments[0].uploadId).toBe(up1.json.uploadId);
      // The url is signed: no credentials needed; the bytes are the same.
      const origin = base.replace(/\/api$/, '');
      const got = await fetch(`${origin}${first.attachments[0].url}`);
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('image/png');
      expect(got.headers.get('x-content-type-options')).toBe('nosniff');
      expect(Buffer.from(await got.arrayBuffer()).equals(image)).toBe(true);
      const gotPdf = await fetch(`${origin}${first.attachments[1].url}`);
      expect(Buffer.from(await gotPdf.arrayBuffer()).equals(pdf)).toBe(true);
      // A forged signature, or another identity's credentials, read nothing.
      const forged = first.attachments[0].url.replace(/sig=[^&]+/, `sig=${'A'.repeat(43)}`);
      expect((await fetch(`${origin}${forged}`)).status).toBe(403);
      expect((await fetch(`${base}/_agent/uploads/${up1.json.uploadId}`, { headers: reader.headers })).status).toBe(404);
      expect((await fetch(`${base}/_agent/uploads/${up1.json.uploadId}`, { headers: writer.headers })).status).toBe(200);
      // The admin transcript names the uploads of each user message.
      const admin = await adminIdentity(app, base);
      const transcript = await (await fetch(`${base}/_admin/agent/threads/${list.threads[0].id}`, { headers: admin.headers })).json();
      expect(transcript.turns.map((t: any) => t.attachments)).toEqual([[up1.json.uploadId, up2.json.uploadId, up3.json.uploadId], []]);
      // A used upload is deleted with its thread, not on its own.
      expect((await fetch(`${base}/_agent/uploads/${up1.json.uploadId}`, { method: 'DELETE', headers: writer.headers })).status).toBe(409);
    });

    it('a rung whose model takes no files gets the PDF as its extracted text and a note for the image', async () => {
      const other = new ChatClient(base, reader);
      await other.connect({ model: 'pro' });
      const pdf = makePdf('Contract number 5150 signed');
      const a = await upload(reader, pdf, 'contract.pdf');
      const b = await upload(reader, await png(4, 4), 'face.png');
      model.script({ text: ['Read it.'] });
      const from = other.events.length;
      await other.send({ type: 'message', text: '', attachments: [{ uploadId: a.json.uploadId }, { uploadId: b.json.uploadId }] });
      expect(await other.next('turn-completed', from, 20_000)).toMatchObject({ status: 'completed' });
      expect(model.requests.at(-1)!.body.model).toBe('mid-1');
      const parts = lastUserParts(model);
      expect(parts).toHaveLength(2);
      expect(parts[0]).toEqual({ type: 'text', text: expect.stringContaining('Contract number 5150 signed') });
      expect(parts[0].text).toContain('Attachment "contract.pdf" (application/pdf');
      expect(parts[1].text).toContain('this model cannot see images');
      other.stop();
    });

    it('hostile uploads: EXE bytes named .png (415), PDF bytes named .png (taken as a PDF), too large (413), anonymous (401), not multipart (415), a 51st unsent upload (429)', async () => {
      const exe = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00', 'latin1'), bytesOf(2000)]);
      const bad = await upload(writer, exe, 'cat.png', 'image/png');
      expect(bad.status).toBe(415);
      expect(bad.json.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const disguised = await upload(writer, makePdf('not a picture'), 'cat.png', 'image/png');
      expect(disguised.status).toBe(201);
      expect(disguised.json.type).toBe('application/pdf');
      const big = await upload(writer, Buffer.concat([await png(2, 2), bytesOf(MAX_BYTES)]), 'big.png', 'image/png');
      expect(big.status).toBe(413);
      expect(big.json.code).toBe('PAYLOAD_TOO_LARGE');
      expect((await upload(null, await png(2, 2), 'anon.png')).status).toBe(401);
      const json = await postJson(base, writer, '_agent/uploads', { file: 'x' });
      expect(json.status).toBe(415);
      // Nothing refused was kept: only the accepted uploads' folders are in the store.
      const kept = (await keys(`_agent/${writer.id}/`)).map((k) => k.split('/')[2]);
      expect(kept).toContain(disguised.json.uploadId);
      expect(kept.every((id) => /^[0-9a-f-]{36}$/.test(id))).toBe(true);
      // At most 50 unused uploads per identity (multipart and tus alike); the 3 of the first test were sent.
      const unsent = (await keys(`_agent/${writer.id}/`)).length - 3;
      const extra: string[] = [];
      let over: Awaited<ReturnType<typeof upload>> | undefined;
      for (let i = 0; i < 60 && !over; i++) {
        const r = await upload(writer, Buffer.from(`note ${i}`), `n${i}.txt`);
        if (r.status === 201) extra.push(r.json.uploadId);
        else over = r;
      }
      expect(extra.length).toBe(50 - unsent);
      expect(over).toMatchObject({ status: 429, json: { code: 'RATE_LIMITED' } });
      const overTus = await fetch(`${base}/_agent/uploads/tus`, {
        method: 'POST',
        headers: { ...writer.headers, 'tus-resumable': '1.0.0', 'upload-length': '5' },
      });
      expect(overTus.status).toBe(429);
      for (const id of extra) expect((await fetch(`${base}/_agent/uploads/${id}`, { method: 'DELETE', headers: writer.headers })).status).toBe(204);
      // An upload never sent can be taken back.
      expect((await fetch(`${base}/_agent/uploads/${disguised.json.uploadId}`, { method: 'DELETE', headers: writer.headers })).status).toBe(204);
      expect(await stored(disguised.json.uploadId)).toBe(false);
    });

    it('tus: a resumable upload of an identity ends in the same answer as a multipart one; another identity cannot touch it; wrong bytes are 415', async () => {
      const endpoint = `${base}/_agent/uploads/tus`;
      const tusHeaders = { 'tus-resumable': '1.0.0' };
      expect((await fetch(endpoint, { method: 'POST', headers: { ...tusHeaders, 'upload-length': '10' } })).status).toBe(401);
      const tooBig = await fetch(endpoint, { method: 'POST', headers: { ...writer.headers, ...tusHeaders, 'upload-length': String(MAX_BYTES + 1) } });
      expect(tooBig.status).toBe(413);
      const pdf = Buffer.concat([makePdf('Resumable manual'), Buffer.from(`%${'x'.repeat(150_000)}\n`)]);
      const send = (bytes: Buffer, name: string, stopAt?: number, uploadUrl?: string) =>
        new Promise<{ url: string; body?: string }>((resolve, reject) => {
          const upload: tus.Upload = new tus.Upload(bytes, {
            endpoint,
            ...(uploadUrl && { uploadUrl }),
            chunkSize: 50_000,
            headers: writer.headers,
            metadata: { filename: name, filetype: 'image/png' },
            retryDelays: null,
            onError: reject,
            onChunkComplete: (_size, accepted) => {
              if (stopAt !== undefined && accepted >= stopAt) void upload.abort().then(() => resolve({ url: upload.url! }), reject);
            },
            onSuccess: (payload) => resolve({ url: upload.url!, body: payload.lastResponse.getBody() }),
          });
          upload.start();
        });
      const first = await send(pdf, 'manual.pdf', 50_000);
      expect(first.url).toMatch(new RegExp(`^${base}/_agent/uploads/tus/agent\\.${writer.id}\\.[0-9a-f]{32}$`));
      // Another identity's credentials do not reach the upload.
      const theirs = await fetch(first.url.replace(writer.id, reader.id), { method: 'HEAD', headers: { ...reader.headers, ...tusHeaders } });
      expect(theirs.status).toBe(404);
      const asReader = await fetch(first.url, { method: 'HEAD', headers: { ...reader.headers, ...tusHeaders } });
      expect(asReader.status).toBe(404);
      const done = await send(pdf, 'manual.pdf', undefined, first.url);
      const info = JSON.parse(done.body!);
      expect(info).toEqual({ uploadId: expect.any(String), name: 'manual.pdf', type: 'application/pdf', size: pdf.length });
      const got = await fetch(`${base}/_agent/uploads/${info.uploadId}`, { headers: writer.headers });
      expect(Buffer.from(await got.arrayBuffer()).equals(pdf)).toBe(true);
      // Bytes of no accepted type fail at the end, whatever the metadata says.
      await expect(send(bytesOf(1000, 3), 'fake.png')).rejects.toThrow(/415/);
    });

    const seed = fuzzSeed();
    it(`hostile attachments: another identity's upload, an unknown id, malformed arrays (fuzzed, seed ${seed}) are refused without a turn`, async () => {
      const theirs = await upload(reader, await png(3, 3), 'theirs.png');
      const unknown = '0190a6e2-7f3c-7cc1-8a55-5d2e6b1c0f00';
      const requests = model.requests.length;
      const refusal = async (attachments: unknown) => {
        const from = chat.events.length;
        await chat.send({ type: 'message', text: 'look', attachments });
        return (await chat.next('error', from)).message as string;
      };
      const foreign = await refusal([{ uploadId: theirs.json.uploadId }]);
      const missing = await refusal([{ uploadId: unknown }]);
      // Another identity's upload is refused exactly like one that does not exist.
      expect(foreign).toBe(`no upload ${theirs.json.uploadId} of this identity`);
      expect(missing).toBe(`no upload ${unknown} of this identity`);
      const mine = await upload(writer, await png(3, 3), 'mine.png');
      for (const bad of [
        'x',
        7,
        {},
        [null],
        [{}],
        [{ uploadId: 5 }],
        [{ uploadId: 'not-a-uuid' }],
        [[mine.json.uploadId]],
        [{ uploadId: mine.json.uploadId }, { uploadId: mine.json.uploadId }],
        Array.from({ length: 11 }, () => ({ uploadId: mine.json.uploadId })),
      ])
        expect(await refusal(bad)).toMatch(/attachments|upload/);
      const r = new Prng(seed);
      const values = () => [null, true, 0, -1, 1e308, '', r.string(8), mine.json.uploadId, unknown, theirs.json.uploadId, { uploadId: r.string(36) }, []];
      for (let i = 0; i < 30; i++) {
        const arr = Array.from({ length: r.int(4) + 1 }, () =>
          r.chance(0.7) ? { uploadId: r.pick(values()), [r.string(3)]: r.pick(values()) } : r.pick(values()),
        );
        const valid = arr.every((a: any) => a && typeof a === 'object' && a.uploadId === mine.json.uploadId) && arr.length === 1;
        if (valid) continue;
        // The hub may refuse a frame (a lone surrogate is not UTF-8): an error answer, which is allowed too.
        await chat.send({ type: 'message', text: 'fuzz', attachments: arr }).catch(() => undefined);
      }
      const from = chat.events.length;
      await chat.send({ type: 'status' });
      expect(await chat.next('status', from)).toMatchObject({ agent: 'idle' });
      expect(model.requests.length).toBe(requests);
      // The reader's upload was never bound to the writer's thread: the reader may still take it back.
      expect((await fetch(`${base}/_agent/uploads/${theirs.json.uploadId}`, { method: 'DELETE', headers: reader.headers })).status).toBe(204);
    });

    it('thread-delete deletes the thread and its uploads, bytes included; deleting the identity deletes the rest', async () => {
      await chat.send({ type: 'new-thread' });
      const up = await upload(writer, await png(5, 5, 40), 'doomed.png');
      model.script({ text: ['Nice.'] });
      const from = chat.events.length;
      await chat.send({ type: 'message', text: 'keep this', attachments: [{ uploadId: up.json.uploadId }] });
      await chat.next('turn-completed', from, 20_000);
      await chat.send({ type: 'thread-list' });
      const list = await chat.next('thread-list', from);
      const thread = list.threads[0];
      expect(thread.preview).toBe('keep this');
      expect(await stored(up.json.uploadId)).toBe(true);
      const at = chat.events.length;
      await chat.send({ type: 'thread-delete', threadId: thread.id });
      expect(await chat.next('info', at)).toMatchObject({ message: 'thread deleted' });
      expect(await stored(up.json.uploadId)).toBe(false);
      expect((await fetch(`${base}/_agent/uploads/${up.json.uploadId}`, { headers: writer.headers })).status).toBe(404);
      await chat.send({ type: 'thread-list' });
      const after = await chat.next('thread-list', chat.events.length - 1);
      expect(after.threads.map((t: any) => t.id)).not.toContain(thread.id);
      // Another identity's thread (or an unknown one) is not deleted.
      const bad = chat.events.length;
      await chat.send({ type: 'thread-delete', threadId: 'nope' });
      expect((await chat.next('error', bad)).message).toBe('no thread "nope" of this identity');

      // The identity goes: its remaining uploads (bytes too) and threads with it.
      const left = await upload(writer, await png(2, 2), 'left.png');
      expect(await stored(left.json.uploadId)).toBe(true);
      chat.stop();
      const admin = await adminIdentity(app, base);
      expect((await fetch(`${base}/_admin/identities/${writer.id}`, { method: 'DELETE', headers: admin.headers })).status).toBe(204);
      expect(await keys(`_agent/${writer.id}/`)).toEqual([]);
      const threads = await (await fetch(`${base}/_admin/agent/threads?identity=${writer.id}`, { headers: admin.headers })).json();
      expect(threads.data).toEqual([]);
    });
  });
}

for (const backend of backends()) attachmentSuite(backend, 'local');
// The store does not depend on the database: the S3 path runs once, against s3rver on loopback.
attachmentSuite(backends()[0], 's3');
