/**
 * The console's sign-in form (DESIGN §9): an admin user with username and password, or an admin
 * service account with client id and secret, both through `POST /api/_auth`, which sets the cookie
 * session of SPEC §5 for a same-origin caller.
 */
import { useState } from 'preact/hooks';
import { api, messageOf } from './api';

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [kind, setKind] = useState<'user' | 'service'>('user');
  const [first, setFirst] = useState('');
  const [second, setSecond] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const body =
        kind === 'user' ? { authority: 'password', username: first, password: second } : { authority: 'serviceaccount', clientId: first, clientSecret: second };
      await api('POST', '/_auth', body);
      onSignedIn();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-label="Sign in">
        <h1>svc console</h1>
        <p class="muted">Admins only: admin users and admin service accounts.</p>
        <div class="tabs" role="tablist">
          <button type="button" role="tab" aria-selected={kind === 'user'} id="signin-user" onClick={() => setKind('user')}>
            User
          </button>
          <button type="button" role="tab" aria-selected={kind === 'service'} id="signin-service" onClick={() => setKind('service')}>
            Service account
          </button>
        </div>
        <label>
          {kind === 'user' ? 'Username' : 'Client id'}
          <input id="signin-first" autocomplete="username" value={first} onInput={(e) => setFirst(e.currentTarget.value)} required />
        </label>
        <label>
          {kind === 'user' ? 'Password' : 'Client secret'}
          <input id="signin-second" type="password" autocomplete="current-password" value={second} onInput={(e) => setSecond(e.currentTarget.value)} required />
        </label>
        {error && (
          <p class="error" role="alert" id="signin-error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
