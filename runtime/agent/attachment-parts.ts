/**
 * @module What the model receives of a message's attachments (DESIGN §7a, issue 34 §3; docs/agent.md
 * "Attachments"): AI SDK 6 user-message parts. A rung whose model takes files (`files`, the default)
 * gets an image as an `image` part, a PDF and a text file as `file` parts with their `mediaType` (the
 * OpenAI-compatible provider sends them as `image_url`, `file` and text). A rung with `files: false`
 * gets text only: a PDF's text extracted with unpdf, a text file's content, and a note for an image.
 * The provider bills attachment tokens as prompt tokens, which the turn's usage already counts.
 */
import type { AgentUploads, UploadRow } from './uploads.js';

/** Most characters of a PDF's extracted text (or a text file's content) given to a model without files. */
export const MAX_TEXT_CHARS = 200_000;

/** A user-message part of the AI SDK (`TextPart`, `ImagePart`, `FilePart`), structured-clone safe. */
export type UserPart =
  | { type: 'text'; text: string }
  | { type: 'image'; image: Uint8Array; mediaType: string }
  | { type: 'file'; data: Uint8Array; mediaType: string; filename: string };

const clip = (text: string) => (text.length > MAX_TEXT_CHARS ? `${text.slice(0, MAX_TEXT_CHARS)}\n[… cut at ${MAX_TEXT_CHARS} characters]` : text);

/**
 * The text of a PDF (pages joined by blank lines); unpdf is loaded on the first PDF.
 * @throws when the bytes are not a PDF it can read
 */
export async function pdfText(bytes: Uint8Array): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    return text.join('\n\n').trim();
  } finally {
    await pdf.destroy();
  }
}

/** The parts of one attachment; `files` says whether the model takes file parts. */
export async function partsOf(row: UploadRow, bytes: Uint8Array, files: boolean): Promise<UserPart[]> {
  const label = `Attachment "${row.name}" (${row.type}, ${row.size} bytes)`;
  if (row.type.startsWith('image/')) {
    return files ? [{ type: 'image', image: bytes, mediaType: row.type }] : [{ type: 'text', text: `[${label}: this model cannot see images.]` }];
  }
  if (row.type === 'application/pdf') {
    if (files) return [{ type: 'file', data: bytes, mediaType: 'application/pdf', filename: row.name }];
    let text: string;
    try {
      text = await pdfText(bytes);
    } catch {
      return [{ type: 'text', text: `[${label}: its text could not be read.]` }];
    }
    return [{ type: 'text', text: `[${label}, its text:]\n${clip(text) || '(no text)'}` }];
  }
  if (files) return [{ type: 'file', data: bytes, mediaType: row.type, filename: row.name }];
  return [{ type: 'text', text: `[${label}:]\n${clip(new TextDecoder().decode(bytes))}` }];
}

/**
 * The parts, by upload id, of the attachments a turn's request carries: this message's (`now`) and
 * those of the thread's turns after its summary. An attachment whose bytes cannot be read becomes a
 * note (and `warn` is told).
 */
export async function threadParts(
  uploads: AgentUploads,
  thread: { summaryTurns: number; turns: { attachments: string[] }[] } | null,
  now: UploadRow[],
  files: boolean,
  warn: (err: unknown, uploadId: string) => void,
): Promise<Map<string, UserPart[]>> {
  const earlier = (thread?.turns.slice(thread.summaryTurns) ?? []).flatMap((t) => t.attachments).filter((id) => !now.some((r) => r.id === id));
  const parts = new Map<string, UserPart[]>();
  for (const row of [...now, ...(await uploads.rows(earlier))]) {
    try {
      parts.set(row.id, await partsOf(row, await uploads.bytes(row), files));
    } catch (err) {
      warn(err, row.id);
      parts.set(row.id, [{ type: 'text', text: `[Attachment "${row.name}" could not be read.]` }]);
    }
  }
  return parts;
}

/** The content of a user message: its text (when not empty), then its attachments' parts. */
export function userContent(text: string, parts: UserPart[]): string | UserPart[] {
  if (parts.length === 0) return text;
  return [...(text.trim() === '' ? [] : [{ type: 'text' as const, text }]), ...parts];
}
