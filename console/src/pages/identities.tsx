/**
 * Identities (DESIGN §9 `/api/_admin/identities`): users and service accounts, searchable; create a
 * user; per identity disable/enable, roles, admin, a new password, delete, and its refresh-token
 * families (sessions) with revoke. Each change is one admin call; the server applies it as the CLI does.
 */
import { useState } from 'preact/hooks';
import { api, messageOf, qs } from '../api';
import { Json, Table, Unavailable, useGet } from '../ui';

type Identity = Record<string, unknown> & { id: string; kind?: string; name?: string; roles?: string[]; admin?: boolean; disabled?: boolean };

function IdentityPanel({ identity, onChanged }: { identity: Identity; onChanged: () => void }) {
  const [roles, setRoles] = useState((identity.roles ?? []).join(','));
  const [password, setPassword] = useState('');
  const [message, setMessage] = useState('');
  const [again, setAgain] = useState(0);
  const path = `/_admin/identities/${encodeURIComponent(identity.id)}`;
  const sessions = useGet<{ data?: Record<string, unknown>[] }>(`${path}/sessions`, again);
  const act = async (what: string, method: string, sub: string, body?: unknown) => {
    try {
      await api(method, `${path}${sub}`, body);
      setMessage(`${what}: done`);
      onChanged();
      setAgain(again + 1);
    } catch (err) {
      setMessage(`${what}: ${messageOf(err)}`);
    }
  };
  return (
    <section class="panel" id="identity-panel">
      <h3>
        {identity.name} <small class="muted">{identity.kind}</small>
      </h3>
      <Json value={identity} />
      <div class="actions">
        <button type="button" id="toggle-disabled" onClick={() => act(identity.disabled ? 'Enable' : 'Disable', 'PATCH', '', { disabled: !identity.disabled })}>
          {identity.disabled ? 'Enable' : 'Disable'}
        </button>
        <button type="button" onClick={() => act(identity.admin ? 'Remove admin' : 'Make admin', 'PATCH', '', { admin: !identity.admin })}>
          {identity.admin ? 'Remove admin' : 'Make admin'}
        </button>
      </div>
      <label class="field">
        <span>Roles (comma-separated)</span>
        <input id="identity-roles" value={roles} onInput={(e) => setRoles(e.currentTarget.value)} />
      </label>
      <button
        type="button"
        onClick={() =>
          act('Set roles', 'PATCH', '', {
            roles: roles
              .split(',')
              .map((r) => r.trim())
              .filter(Boolean),
          })
        }
      >
        Set roles
      </button>
      {identity.kind !== 'serviceAccount' && (
        <>
          <label class="field">
            <span>New password</span>
            <input type="password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          </label>
          <button type="button" onClick={() => act('Reset password', 'PATCH', '', { password })}>
            Reset password
          </button>
        </>
      )}
      <h4>Sessions (refresh-token families)</h4>
      {sessions &&
        (sessions.status === 200 ? (
          <Table
            rows={sessions.body.data ?? []}
            onRow={(s) => act('Revoke session', 'DELETE', `/sessions/${encodeURIComponent(String(s.familyId ?? s.id))}`)}
          />
        ) : (
          <Unavailable path={`/api${path}/sessions`} answer={sessions} />
        ))}
      <p class="muted">Click a session to revoke it.</p>
      <button type="button" class="danger" onClick={() => act('Delete', 'DELETE', '')}>
        Delete identity
      </button>
      {message && <p class="notice">{message}</p>}
    </section>
  );
}

export function IdentitiesPage() {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [again, setAgain] = useState(0);
  const [chosen, setChosen] = useState<string>();
  const [form, setForm] = useState({ username: '', password: '', roles: '', admin: false });
  const [message, setMessage] = useState('');
  const list = useGet<{ data?: Identity[]; nextPageToken?: string }>(`/_admin/identities${qs({ search: applied, pageSize: 200 })}`, again);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const created = await api<Identity>('POST', '/_admin/identities', {
        username: form.username,
        password: form.password,
        roles: form.roles
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean),
        admin: form.admin,
      });
      setMessage(`Created ${form.username}`);
      setAgain(again + 1);
      if (created?.id) setChosen(created.id);
    } catch (err) {
      setMessage(messageOf(err));
    }
  };
  if (list && list.status !== 200) return <Unavailable path="/api/_admin/identities" answer={list} />;
  const rows = list?.body.data ?? [];
  const identity = rows.find((r) => r.id === chosen);
  return (
    <div class="page">
      <h2>Identities</h2>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(search);
        }}
      >
        <input placeholder="search users and service accounts" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <div class="grid-and-panel">
        <Table rows={rows} columns={['name', 'kind', 'roles', 'admin', 'disabled', 'createdAt', 'lastSignInAt']} onRow={(r) => setChosen(String(r.id))} />
        {identity && <IdentityPanel key={identity.id} identity={identity} onChanged={() => setAgain(again + 1)} />}
      </div>
      <form class="row-form" onSubmit={create}>
        <h3>Create a user</h3>
        <input placeholder="username" value={form.username} onInput={(e) => setForm({ ...form, username: e.currentTarget.value })} />
        <input placeholder="password" type="password" value={form.password} onInput={(e) => setForm({ ...form, password: e.currentTarget.value })} />
        <input placeholder="roles, comma-separated" value={form.roles} onInput={(e) => setForm({ ...form, roles: e.currentTarget.value })} />
        <label>
          <input type="checkbox" checked={form.admin} onChange={() => setForm({ ...form, admin: !form.admin })} /> admin
        </label>
        <button type="submit">Create user</button>
      </form>
      {message && <p class="notice">{message}</p>}
    </div>
  );
}
