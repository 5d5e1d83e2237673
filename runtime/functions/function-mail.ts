/**
 * @module `ctx.mail.send` of function code (DESIGN §12 receipt example; like PocketBase's
 * `$app.newMailClient()`): one plain-text mail through the app's own mail settings (svc.json `mail`,
 * DESIGN §11), the same transport as the identity mails. Without `mail.smtp` the mail is written to the
 * log and the answer says `sent: false`. Checked before sending: one address (no display name, no
 * list), a subject on one line (no header injection), a text of at most {@link MAX_MAIL_TEXT} characters.
 */
import type { Mailer } from '../auth/mailer.js';
import type { ApiReply } from './call-api.js';

/** `ctx.mail.send(mail)` of function code. */
export interface MailRequest {
  to: unknown;
  subject: unknown;
  text: unknown;
}

/** Longest mail text, in characters. */
export const MAX_MAIL_TEXT = 100_000;
/** Longest subject, in characters (RFC 5322's line limit). */
export const MAX_MAIL_SUBJECT = 998;
/** One plain address: `local@domain`, no spaces, brackets, commas or quotes; at most 254 characters. */
const ADDRESS = /^[^\s@<>,;"()[\]\\]+@[^\s@<>,;"()[\]\\]+\.[^\s@<>,;"()[\]\\]+$/;

const bad = (path: string, message: string): ApiReply => ({ status: 400, body: { error: message, code: 'VALIDATION_FAILED', details: [{ path, message }] } });

/**
 * Checks and sends one mail.
 * @returns 200 `{ sent }` (false: written to the log, no SMTP configured); 400 naming the bad field;
 *   503 when the SMTP server refuses or cannot be reached (a job's run then fails and is retried)
 */
export async function sendFunctionMail(mailer: Mailer, request: MailRequest): Promise<ApiReply> {
  const { to, subject, text } = (request ?? {}) as MailRequest;
  if (typeof to !== 'string' || to.length > 254 || !ADDRESS.test(to)) return bad('/to', 'to must be one e-mail address (local@domain)');
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > MAX_MAIL_SUBJECT || /[\r\n\0]/.test(subject))
    return bad('/subject', `subject must be one line of 1 to ${MAX_MAIL_SUBJECT} characters`);
  if (typeof text !== 'string' || text.length > MAX_MAIL_TEXT || text.includes('\0'))
    return bad('/text', `text must be a string of at most ${MAX_MAIL_TEXT} characters`);
  try {
    await mailer.send({ to, subject, text });
  } catch (err) {
    return { status: 503, body: { error: `the mail could not be sent: ${(err as Error).message}`, code: 'SERVICE_UNAVAILABLE' } };
  }
  return { status: 200, body: { sent: mailer.configured } };
}
