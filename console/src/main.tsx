/**
 * The console's entry: decides who is here (nobody → sign-in form, a non-admin → "admins only", an
 * admin → the console), then routes between the pages. DESIGN §9.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, messageOf } from './api';
import { loadModel, type Model } from './model';
import { href, useRoute } from './router';
import { SignIn } from './signin';
import { DataPage } from './data/page';
import { FunctionsPage } from './pages/functions';
import { SchemaPage } from './pages/schema';
import { HealthPage } from './pages/health';
import { IdentitiesPage } from './pages/identities';
import { LogsPage } from './pages/logs';
import { RealtimePage } from './pages/realtime';
import { AgentPage } from './pages/agent';
import { JobsPage } from './pages/jobs';

type Who =
  { state: 'checking' } | { state: 'signedOut' } | { state: 'notAdmin'; name: string } | { state: 'admin'; name: string } | { state: 'failed'; error: string };

/**
 * Who is signed in: `/api/_me` (401 → nobody), then `GET /api/_admin/status`, which only admins pass
 * (DESIGN §9: 403 for everyone else).
 */
async function whoIsHere(): Promise<Who> {
  const me = await call<{ username?: string; id?: string }>('GET', '/_me');
  if (me.status === 401) return { state: 'signedOut' };
  if (me.status !== 200) return { state: 'failed', error: `GET /api/_me answered ${me.status}` };
  const name = me.body.username ?? me.body.id ?? '';
  const status = await call('GET', '/_admin/status');
  if (status.status === 200) return { state: 'admin', name };
  if (status.status === 401) return { state: 'signedOut' };
  if (status.status === 403) return { state: 'notAdmin', name };
  return { state: 'failed', error: `GET /api/_admin/status answered ${status.status}` };
}

async function signOut(): Promise<void> {
  await call('POST', '/_logout');
  location.hash = '';
  location.reload();
}

const PAGES: [string, string][] = [
  ['data', 'Data'],
  ['functions', 'Functions'],
  ['schema', 'Schema & API'],
  ['identities', 'Identities'],
  ['logs', 'Logs'],
  ['realtime', 'Real-time'],
  ['jobs', 'Jobs'],
  ['agent', 'Agent'],
  ['health', 'Health'],
];

function Console({ name }: { name: string }) {
  const route = useRoute();
  const [model, setModel] = useState<Model>();
  const [error, setError] = useState('');
  useEffect(() => {
    loadModel().then(setModel, (err) => setError(messageOf(err)));
  }, []);
  const page = route[0] ?? 'data';
  return (
    <div class="shell">
      <header>
        <strong>svc console</strong>
        <nav>
          {PAGES.map(([id, label]) => (
            <a href={href(id)} class={page === id ? 'active' : ''} id={`nav-${id}`}>
              {label}
            </a>
          ))}
        </nav>
        <span class="who" id="who">
          {name}
        </span>
        <button type="button" onClick={signOut} id="signout">
          Sign out
        </button>
      </header>
      {error && <p class="error">{error}</p>}
      {!model && !error && <p class="muted pad">Loading…</p>}
      {model && (
        <>
          {page === 'data' && <DataPage model={model} route={route.slice(1)} />}
          {page === 'functions' && <FunctionsPage model={model} route={route.slice(1)} />}
          {page === 'schema' && <SchemaPage model={model} route={route.slice(1)} />}
          {page === 'identities' && <IdentitiesPage route={route.slice(1)} />}
          {page === 'logs' && <LogsPage />}
          {page === 'realtime' && <RealtimePage model={model} />}
          {page === 'jobs' && <JobsPage />}
          {page === 'agent' && <AgentPage />}
          {page === 'health' && <HealthPage />}
        </>
      )}
    </div>
  );
}

function App() {
  const [who, setWho] = useState<Who>({ state: 'checking' });
  const check = () => {
    whoIsHere().then(setWho, (err) => setWho({ state: 'failed', error: messageOf(err) }));
  };
  useEffect(check, []);
  if (who.state === 'checking') return <p class="muted pad">Loading…</p>;
  if (who.state === 'failed') return <p class="error pad">{who.error}</p>;
  if (who.state === 'signedOut') return <SignIn onSignedIn={check} />;
  if (who.state === 'notAdmin')
    return (
      <main class="signin" id="admins-only">
        <h1>Admins only</h1>
        <p>
          You are signed in as <strong>{who.name}</strong>, who is not an admin. The console is for admin users and admin service accounts.
        </p>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  return <Console name={who.name} />;
}

render(<App />, document.getElementById('root')!);
