/**
 * @module The mails of the identity endpoints (DESIGN §11) and how they leave: each is sent in the
 * background, after the HTTP answer is decided, so neither a slow or failing SMTP server nor the
 * quota of `MAILS_PER_HOUR` per address changes what the caller sees (no enumeration through
 * status, body or timing). Failures are logged with the purpose, never with the address's owner.
 */
import type { AuthService } from './auth-service.js';
import type { Mail } from './mailer.js';
import { issueMailToken, MAILS_PER_HOUR, takeMailSlot } from './mail-tokens.js';

/** Why a mail is sent: a verification link, a reset link, or a notice that the address is already in use. */
export type AccountMailKind = 'verify' | 'reset' | 'address-in-use';

function compose(auth: AuthService, kind: AccountMailKind, to: string, token?: string): Mail {
  const app = auth.manifest.name;
  const origin = auth.mail.origin();
  switch (kind) {
    case 'verify':
      return {
        to,
        subject: `Confirm your e-mail address for ${app}`,
        text: `Open this link to confirm your e-mail address for ${app} (valid for 24 hours):\n\n${origin}/login/verify?token=${token}\n\nOr send the code with POST /api/_verify-email { "token": "${token}" }.\nIf you did not create an account, ignore this mail.\n`,
      };
    case 'reset':
      return {
        to,
        subject: `Reset your password for ${app}`,
        text: `Open this link to choose a new password for ${app} (valid for 1 hour):\n\n${origin}/login/reset?token=${token}\n\nOr send the code with POST /api/_password-reset/confirm { "token": "${token}", "password": "…" }.\nIf you did not ask for this, ignore this mail: your password is unchanged.\n`,
      };
    case 'address-in-use':
      return {
        to,
        subject: `Someone tried to create an account for ${app} with your address`,
        text: `Somebody tried to create a new account for ${app} with this e-mail address, which already belongs to an account.\nIf it was you, sign in at ${origin}/login, or reset your password there. Otherwise ignore this mail.\n`,
      };
  }
}

/** Background work still running: mails being sent, reset lookups (the server waits for them on close). */
const pending = new Set<Promise<void>>();

/**
 * Runs `work` after the answer, tracked until it ends; a failure is logged as `what`, never thrown.
 */
export function inBackground(auth: AuthService, what: string, work: () => Promise<void>): void {
  const job = work().catch((err: unknown) => auth.logger.error({ err: (err as Error).message }, `${what} failed`));
  pending.add(job);
  void job.finally(() => pending.delete(job));
}

/**
 * Sends a mail of `kind` to `to` in the background: takes a quota slot, issues the token for `userId`
 * (verify and reset), sends. Returns at once; a refused slot or a failed send is only logged.
 */
export function sendAccountMail(auth: AuthService, kind: AccountMailKind, to: string, userId: string): void {
  inBackground(auth, `sending a ${kind} mail`, async () => {
    if (!(await takeMailSlot(auth.db, to, kind))) {
      auth.logger.warn({ purpose: kind }, `mail not sent: this address already had ${MAILS_PER_HOUR} mails within the hour`);
      return;
    }
    const token = kind === 'address-in-use' ? undefined : await issueMailToken(auth.db, userId, kind);
    await auth.mail.mailer.send(compose(auth, kind, to, token));
    auth.logger.info({ purpose: kind }, 'mail sent');
  });
}

/**
 * Resolves when the background work started so far has ended, or after `timeoutMs` (an SMTP server
 * that does not answer must not hold a shutdown).
 */
export async function mailsSettled(timeoutMs = 5000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((ok) => (timer = setTimeout(ok, timeoutMs)));
  const drained = (async () => {
    while (pending.size > 0) await Promise.all([...pending]);
  })();
  await Promise.race([drained, deadline]);
  clearTimeout(timer);
}
