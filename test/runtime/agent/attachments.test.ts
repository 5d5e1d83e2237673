/**
 * The pieces of agent attachments that need no server (runtime/agent/sniff.ts,
 * runtime/agent/attachment-parts.ts): the type of bytes from their signature or as UTF-8 text, fed
 * in chunks of every size; and the model parts of an attachment, with and without file support
 * (a real PDF read by unpdf).
 */
import { describe, expect, it } from 'vitest';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { makePdf, png } from '../../support/files.js';
import { Sniffer } from '../../../dist/runtime/agent/sniff.js';
import { partsOf, pdfText, userContent } from '../../../dist/runtime/agent/attachment-parts.js';
import type { UploadRow } from '../../../dist/runtime/agent/uploads.js';

/** The sniffed type of `bytes` fed in chunks of `chunk` bytes. */
async function sniff(bytes: Buffer, chunk = 7): Promise<string> {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunk) chunks.push(bytes.subarray(i, i + chunk));
  const sniffer = new Sniffer();
  await pipeline(Readable.from(chunks), sniffer, new Writable({ write: (_c, _e, done) => done() }));
  return sniffer.type();
}

const row = (type: string, name = 'f'): UploadRow => ({
  id: '0190a6e2-7f3c-7cc1-8a55-5d2e6b1c0f00',
  identityId: 'u',
  threadId: null,
  name,
  type,
  size: 3,
  storageKey: 'k',
  createdAt: new Date(),
});

describe('sniffing the type of attachment bytes', () => {
  it('tells images and PDFs by their signature, whatever the chunking', async () => {
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46]);
    const webp = Buffer.concat([Buffer.from('RIFF'), Buffer.from([1, 2, 3, 4]), Buffer.from('WEBPVP8 ')]);
    for (const chunk of [1, 3, 7, 1000]) {
      expect(await sniff(await png(2, 2), chunk)).toBe('image/png');
      expect(await sniff(jpeg, chunk)).toBe('image/jpeg');
      expect(await sniff(Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'), chunk)).toBe('image/gif');
      expect(await sniff(webp, chunk)).toBe('image/webp');
      expect(await sniff(makePdf('x'), chunk)).toBe('application/pdf');
    }
  });

  it('takes UTF-8 text without control characters as text/plain, and nothing else', async () => {
    // A multi-byte character split across chunks is still text.
    for (const chunk of [1, 2, 5]) expect(await sniff(Buffer.from('æøå 中文 😀\r\n\ttabs\f'), chunk)).toBe('text/plain');
    expect(await sniff(Buffer.from('MZ\x90\x00\x03', 'latin1'))).toBe('application/octet-stream');
    expect(await sniff(Buffer.from('text with a NUL\x00 inside'))).toBe('application/octet-stream');
    expect(await sniff(Buffer.from('escape \x1b[31m red'))).toBe('application/octet-stream');
    expect(await sniff(Buffer.from([0x68, 0x69, 0xc3]))).toBe('application/octet-stream'); // cut in a character
    expect(await sniff(Buffer.from([0xfe, 0xff, 0x00, 0x41]))).toBe('application/octet-stream');
    expect(await sniff(Buffer.alloc(0))).toBe('application/octet-stream');
    // A signature elsewhere than at the start counts for nothing.
    expect(await sniff(Buffer.concat([Buffer.from('x'), makePdf('y')]))).toBe('text/plain');
  });
});

describe('the model parts of an attachment', () => {
  it('gives image and file parts to a model that takes files', async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(await partsOf(row('image/webp'), bytes, true)).toEqual([{ type: 'image', image: bytes, mediaType: 'image/webp' }]);
    expect(await partsOf(row('application/pdf', 'a.pdf'), bytes, true)).toEqual([
      { type: 'file', data: bytes, mediaType: 'application/pdf', filename: 'a.pdf' },
    ]);
    expect(await partsOf(row('text/plain', 'n.txt'), bytes, true)).toEqual([{ type: 'file', data: bytes, mediaType: 'text/plain', filename: 'n.txt' }]);
    expect(userContent('hi', [])).toBe('hi');
    expect(userContent('  ', [{ type: 'text', text: 'x' }])).toEqual([{ type: 'text', text: 'x' }]);
  });

  it('gives text to a model that takes no files: the PDF text by unpdf, a note for an image or an unreadable PDF', async () => {
    const pdf = makePdf('Quarterly report 2026');
    expect(await pdfText(pdf)).toBe('Quarterly report 2026');
    const [part] = await partsOf(row('application/pdf', 'q.pdf'), pdf, false);
    expect(part).toEqual({
      type: 'text',
      text: expect.stringMatching(/^\[Attachment "q\.pdf" \(application\/pdf, 3 bytes\), its text:\]\nQuarterly report 2026$/),
    });
    expect((await partsOf(row('image/png'), new Uint8Array([1]), false))[0]).toMatchObject({ text: expect.stringContaining('cannot see images') });
    expect((await partsOf(row('application/pdf'), Buffer.from('%PDF-1.4 broken'), false))[0]).toMatchObject({
      text: expect.stringContaining('could not be read'),
    });
    expect((await partsOf(row('text/plain', 'n.txt'), Buffer.from('notes'), false))[0]).toEqual({
      type: 'text',
      text: '[Attachment "n.txt" (text/plain, 3 bytes):]\nnotes',
    });
  });
});
