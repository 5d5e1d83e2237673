/**
 * @module A real SMTP server on loopback for tests of the mails of DESIGN §11: `smtp-server` accepts
 * every mail (no TLS, no authentication) and `mailparser` reads each one, so tests see what a mailbox
 * would: recipients, subject and text.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { waitFor } from './wait.js';

/** One received mail. */
export interface ReceivedMail {
  to: string[];
  from: string;
  subject: string;
  text: string;
}

export interface TestSmtp {
  /** `smtp://127.0.0.1:<port>` */
  url: string;
  /** Every mail received so far, in order. */
  mails: ReceivedMail[];
  /** The mails to `address` (compared lower-cased). */
  mailsTo(address: string): ReceivedMail[];
  /** Waits for the `n`-th mail to `address` whose subject contains `subject` (default the first) and answers it. */
  next(address: string, subject: string, n?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** Starts the server on a free loopback port. */
export async function startSmtp(): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      simpleParser(stream)
        .then((parsed) => {
          mails.push({
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
          });
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const port = (server.server.address() as AddressInfo).port;
  const mailsTo = (address: string) => mails.filter((m) => m.to.includes(address.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    mailsTo,
    next: (address, subject, n = 1) => waitFor(() => mailsTo(address).filter((m) => m.subject.includes(subject))[n - 1], 10_000),
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

/** The token of a mail's `/login/<page>?token=` link. */
export function tokenOf(mail: ReceivedMail): string {
  const m = /\/login\/(?:verify|reset)\?token=([A-Za-z0-9_-]+)/.exec(mail.text);
  if (!m) throw new Error(`no token link in the mail: ${mail.text}`);
  return m[1];
}
