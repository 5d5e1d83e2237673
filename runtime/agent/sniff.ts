/**
 * @module The real type of an attachment's bytes (DESIGN §7a, issue 34 §3): the client's content type
 * and file name are never trusted. A `Sniffer` is a pass-through that watches the bytes as they are
 * stored: the first bytes decide an image or a PDF by their signature (PNG, JPEG, GIF, WebP, `%PDF-`);
 * bytes with none of them are `text/plain` only when all of them are UTF-8 without NUL or other
 * control characters but tab, line feed, form feed and carriage return; anything else is
 * `application/octet-stream` (refused by every `agent.attachments.types`).
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { AttachmentType } from '../contract/settings.js';

/** Bytes kept from the start: enough for every signature below. */
const HEAD_BYTES = 16;

const startsWith = (head: Buffer, bytes: number[] | string, at = 0): boolean => {
  const sig = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes);
  return head.length >= at + sig.length && head.subarray(at, at + sig.length).equals(sig);
};

/** The type the first bytes announce by their signature, or null when they announce none. */
export function signatureType(head: Buffer): AttachmentType | null {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(head, 'GIF87a') || startsWith(head, 'GIF89a')) return 'image/gif';
  if (startsWith(head, 'RIFF') && startsWith(head, 'WEBP', 8)) return 'image/webp';
  if (startsWith(head, '%PDF-')) return 'application/pdf';
  return null;
}

/** True for a byte that plain text does not hold: NUL and the C0 controls but \t \n \f \r, and DEL. */
const binaryByte = (b: number) => (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d) || b === 0x7f;

/** A pass-through that tells the type of what went through it once it has ended (`type()`). */
export class Sniffer extends Transform {
  private head = Buffer.alloc(0);
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  private text = true;
  /** Bytes that went through. */
  bytes = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.head.length < HEAD_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
    this.bytes += chunk.length;
    if (this.text) {
      try {
        this.utf8.decode(chunk, { stream: true });
        if (chunk.some(binaryByte)) this.text = false;
      } catch {
        this.text = false;
      }
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.text) {
      try {
        this.utf8.decode();
      } catch {
        this.text = false;
      }
    }
    done();
  }

  /** The sniffed type of the bytes so far (complete once the stream ended); empty input is not text. */
  type(): AttachmentType | 'application/octet-stream' {
    return signatureType(this.head) ?? (this.text && this.bytes > 0 ? 'text/plain' : 'application/octet-stream');
  }
}
