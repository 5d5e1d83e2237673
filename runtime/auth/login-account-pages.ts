/**
 * @module The account pages under the hosted `/login` (DESIGN §11), free of any HTTP framework (routes
 * in `runtime/http/auth-routes.ts`): `/login/signup` ("Create account"), `/login/forgot` ("Forgot
 * password"), `/login/reset?token=` (the reset link of the mail) and `/login/verify?token=` (the
 * verification link). Each is a server-rendered form that POSTs to itself and runs the same
 * function as its `/api` endpoint; a GET never spends a token (mail scanners open links). The POSTs
 * must come from this origin, and the pages carry the headers of `/login`.
 */
import { HttpError } from '../errors.js';
import type { AuthService } from './auth-service.js';
import { isSameOrigin, type CredentialInput } from './authenticate.js';
import { escapeHtml, htmlResult, page, type LoginPageResult } from './login-page.js';
import { confirmPasswordReset, requestPasswordReset } from './password-reset.js';
import { signUp, verifyEmail } from './signup.js';

/** The account pages by name (the path segment after `/login/`). */
export type AccountPage = 'signup' | 'forgot' | 'reset' | 'verify';

/** Whether `name` is one of the account pages. */
export const isAccountPage = (name: string): name is AccountPage => name === 'signup' || name === 'forgot' || name === 'reset' || name === 'verify';

const field = (name: string, label: string, type: string, autocomplete: string, value = '') =>
  `<label for="${name}">${label}</label><input id="${name}" name="${name}" type="${type}" autocomplete="${autocomplete}" required value="${escapeHtml(value)}">`;

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;

function formPage(auth: AuthService, which: AccountPage, values: Record<string, string>, error?: string): string {
  const app = auth.manifest.name;
  const alert = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '';
  const action = `/login/${which}`;
  const body: Record<AccountPage, [string, string]> = {
    signup: [
      `Create an account for ${app}`,
      field('username', 'Username', 'text', 'username', values.username) +
        field('email', 'E-mail', 'email', 'email', values.email).replace(' required', auth.signup.requireEmailVerification ? ' required' : '') +
        field('password', 'Password (at least 8 characters)', 'password', 'new-password') +
        '<button type="submit">Create account</button>',
    ],
    forgot: [`Reset your password for ${app}`, field('email', 'E-mail', 'email', 'email', values.email) + '<button type="submit">Send reset link</button>'],
    reset: [
      `Choose a new password for ${app}`,
      hidden('token', values.token ?? '') +
        field('password', 'New password (at least 8 characters)', 'password', 'new-password') +
        '<button type="submit">Set password</button>',
    ],
    verify: [`Confirm your e-mail address for ${app}`, hidden('token', values.token ?? '') + '<button type="submit">Confirm</button>'],
  };
  const [title, fields] = body[which];
  return page(title, `<h1>${escapeHtml(title)}</h1>${alert}<form method="post" action="${action}">${fields}</form><p><a href="/login">Sign in</a></p>`);
}

function done(auth: AuthService, which: AccountPage): string {
  const text: Record<AccountPage, string> = {
    signup: auth.signup.requireEmailVerification
      ? 'Your account is created. We sent you a mail: open its link to confirm your address, then sign in.'
      : 'Your account is created. You can sign in now.',
    forgot: 'If an account has this address, we sent it a link to choose a new password. The link is valid for one hour.',
    reset: 'Your password is changed. Sign in with the new one.',
    verify: 'Your e-mail address is confirmed. You can sign in now.',
  };
  return page(auth.manifest.name, `<h1>${escapeHtml(auth.manifest.name)}</h1><p>${text[which]}</p><p><a href="/login">Sign in</a></p>`);
}

const strings = (b: unknown): Record<string, string> =>
  Object.fromEntries(
    Object.entries(typeof b === 'object' && b !== null ? b : {}).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].length <= 1000),
  );

/** `GET /login/<page>`: the form (`query.token` fills the hidden token of `reset` and `verify`); 404 for `signup` while sign-up is off. */
export function accountForm(auth: AuthService, which: AccountPage, query: Record<string, unknown>): LoginPageResult {
  if (which === 'signup' && !auth.signup.enabled)
    return htmlResult(404, page(auth.manifest.name, '<h1>Sign-up is not enabled</h1><p><a href="/login">Sign in</a></p>'));
  return htmlResult(200, formPage(auth, which, strings(query)));
}

/**
 * `POST /login/<page>`: runs the page's action with the form's fields; success shows what happens
 * next, a refusal shows the form again with the error and its status (400, 403, 409, 429).
 */
export async function submitAccountForm(
  auth: AuthService,
  which: AccountPage,
  body: unknown,
  request: CredentialInput & { remoteAddress?: string },
): Promise<LoginPageResult> {
  const values = strings(body);
  const { password: _password, ...echo } = values;
  if (!isSameOrigin(request)) return htmlResult(403, formPage(auth, which, echo, 'This form was sent from another site.'));
  try {
    if (which === 'signup') await signUp(auth, values, request.remoteAddress);
    else if (which === 'forgot') await requestPasswordReset(auth, values, request.remoteAddress);
    else if (which === 'reset') await confirmPasswordReset(auth, values, request.remoteAddress);
    else await verifyEmail(auth, values, request.remoteAddress);
  } catch (err) {
    if (!(err instanceof HttpError) || err.status >= 500) throw err;
    return htmlResult(err.status, formPage(auth, which, echo, err.message), err.headers ?? {});
  }
  return htmlResult(which === 'signup' ? 201 : 200, done(auth, which));
}
