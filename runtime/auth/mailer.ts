/**
 * @module Outgoing mail of the identity endpoints (DESIGN §11): over SMTP with nodemailer when svc.json
 * `mail.smtp.url` is set (its `${secrets.NAME}` references resolved at start), else written to the log
 * (development only; `svc serve` warns at start when sign-up needs mail). nodemailer loads on the
 * first mail, so a start without mail does not pay for it.
 */
import type { Logger } from '../log.js';
import type { MailSettings } from '../contract/settings.js';
import { resolveRefs } from '../secret-refs.js';

/** One plain-text mail. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends mails; `configured` is false when mails only go to the log. */
export interface Mailer {
  readonly configured: boolean;
  /** The sender (`From`). */
  readonly from: string;
  /** @throws the transport's error when the SMTP server refuses or cannot be reached */
  send(mail: Mail): Promise<void>;
}

/** A mailer that writes each mail (recipient, subject and text, links included) to the log at `warn`. */
export function logMailer(logger: Logger, from: string): Mailer {
  return {
    configured: false,
    from,
    async send(mail) {
      logger.warn({ mail: { from, ...mail } }, 'mail not sent (no mail.smtp in svc.json): written to the log instead');
    },
  };
}

/** A mailer over SMTP (`smtp://user:pass@host:587`, `smtps://…:465`); the connection pool is nodemailer's. */
export function smtpMailer(url: string, from: string): Mailer & { close(): void } {
  let transport: Promise<{ sendMail(m: object): Promise<unknown>; close(): void }> | undefined;
  const open = () =>
    (transport ??= import('nodemailer').then((m) => m.default.createTransport(url) as unknown as { sendMail(m: object): Promise<unknown>; close(): void }));
  return {
    configured: true,
    from,
    async send(mail) {
      await (await open()).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close() {
      void transport?.then((t) => t.close());
    },
  };
}

/**
 * The mailer of an app's svc.json `mail` settings.
 * @param appName - names the default sender (`<appName> <no-reply@localhost>`)
 * @throws StartupError when `mail.smtp.url` refers to a secret that is not set
 */
export function createMailer(settings: MailSettings | undefined, env: NodeJS.ProcessEnv, logger: Logger, appName: string): Mailer & { close(): void } {
  const from = settings?.from ?? `${appName} <no-reply@localhost>`;
  if (settings?.smtp?.url) return smtpMailer(resolveRefs(settings.smtp.url, env, 'mail.smtp.url'), from);
  return { ...logMailer(logger, from), close() {} };
}
