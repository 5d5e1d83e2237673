/**
 * Identities (DESIGN §9 `/api/_admin/identities`): users and service accounts, searchable; create a
 * user; per identity disable/enable, roles, admin, a new password, delete, and its refresh-token
 * families (sessions) with revoke. Each change is one admin call; the server applies it as the CLI does.
 */
import { useState } from 'preact/hooks';
import { api, messageOf, qs } from '../api';
import { Json, Table, Unavailable, useGet } from '../ui';
import { go } from '../router';

type Identity = Record<string, unknown> & {
  id: string;
  kind?: string;
  name?: string;
  roles?: string[];
  admin?: boolean;
  disabled?: boolean;
  providers?: Record<string, unknown>[];
};

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
      <Json value={{ ...identity, providers: undefined }} />
      {identity.kind === 'user' && (
        <>
          <h4>Linked providers</h4>
          {(identity.providers ?? []).length === 0 ? (
            <p class="muted" id="identity-providers">
              none
            </p>
          ) : (
            <Table id="identity-providers" rows={identity.providers ?? []} columns={['provider', 'subject', 'email', 'createdAt']} />
          )}
        </>
      )}
      <div class="actions">
        <button type="button" id="toggle-disabled" onClick={() => act(identity.disabled ? 'Enable' : 'Disable', 'PATCH', '', { disabled: !identity.disabled })}>
          {identity.disabled ? 'Enable' : 'Disable'}
        </button>
        <button type="button" id="toggle-admin" onClick={() => act(identity.admin ? 'Remove admin' : 'Make admin', 'PATCH', '', { admin: !identity.admin })}>
          {identity.admin ? 'Remove admin' : 'Make admin'}
        </button>
      </div>
      <label class="field">
        <span>Roles (comma-separated)</span>
        <input id="identity-roles" value={roles} onInput={(e) => setRoles(e.currentTarget.value)} />
      </label>
      <button
        type="button"
        id="set-roles"
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
            <input type="password" id="identity-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          </label>
          <button type="button" id="reset-password" onClick={() => act('Reset password', 'PATCH', '', { password })}>
            Reset password
          </button>
        </>
      )}
      <h4>Sessions (refresh-token families)</h4>
      {sessions &&
        (sessions.status === 200 ? (
          <table class="table" id="sessions">
            <tbody>
              {(sessions.body.data ?? []).map((s) => (
                <tr data-family={String(s.familyId ?? '')}>
                  <td>{String(s.familyId ?? '')}</td>
                  <td>{String(s.clientId ?? '')}</td>
                  <td>{String(s.lastUsedAt ?? '')}</td>
                  <td>{s.active ? 'active' : 'ended'}</td>
                  <td>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => act('Revoke session', 'DELETE', `/sessions/${encodeURIComponent(String(s.familyId))}`)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <Unavailable path={`/api${path}/sessions`} answer={sessions} />
        ))}
      <button type="button" class="danger" id="delete-identity" onClick={() => act('Delete', 'DELETE', '')}>
        Delete identity
      </button>
      {message && (
        <p class="notice" id="identity-message">
          {message}
        </p>
      )}
    </section>
  );
}

export function IdentitiesPage({ route = [] }: { route?: string[] }) {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [again, setAgain] = useState(0);
  const chosen = route[0];
  const setChosen = (id: string) => go('identities', id);
  const [form, setForm] = useState({ kind: 'user', username: '', password: '', roles: '', admin: false });
  const [message, setMessage] = useState('');
  const [secret, setSecret] = useState<{ clientId: unknown; clientSecret: unknown }>();
  const [pageToken, setPageToken] = useState<string>();
  const list = useGet<{ data?: Identity[]; nextPageToken?: string }>(`/_admin/identities${qs({ q: applied, pageSize: 200, pageToken })}`, again);
  const create = async (e: Event) => {
    e.preventDefault();
    const roles = form.roles
      .split(',')
      .map((r) => r.trim())
      .filter(Boolean);
    try {
      const body =
        form.kind === 'user'
          ? { kind: 'user', username: form.username, password: form.password, roles, admin: form.admin }
          : { kind: 'serviceAccount', name: form.username, roles, admin: form.admin };
      const created = await api<Identity & { clientSecret?: string; clientId?: string }>('POST', '/_admin/identities', body);
      setMessage(`Created ${form.username}`);
      setSecret(created.clientSecret ? { clientId: created.clientId ?? created.id, clientSecret: created.clientSecret } : undefined);
      setAgain(again + 1);
      if (created?.id) setChosen(created.id);
    } catch (err) {
      setMessage(messageOf(err));
    }
  };
  const rows = list?.body.data ?? [];
  // A linked identity (a row's createdBy) may be outside the page loaded: read it alone.
  const listed = rows.find((r) => r.id === chosen);
  const alone = useGet<Identity>(chosen && list && !listed ? `/_admin/identities/${encodeURIComponent(chosen)}` : undefined, again);
  const identity = listed ?? (alone?.status === 200 ? alone.body : undefined);
  if (list && list.status !== 200) return <Unavailable path="/api/_admin/identities" answer={list} />;
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
        <input id="identity-search" placeholder="search users and service accounts" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <div class="grid-and-panel">
        <div>
          <Table
            id="identities"
            rows={rows.map((r) => ({ ...r, providers: (r.providers ?? []).map((p) => p.provider).join(', ') }))}
            columns={['name', 'kind', 'email', 'roles', 'admin', 'disabled', 'providers', 'createdAt', 'lastSignInAt']}
            onRow={(r) => setChosen(String(r.id))}
            rowKey={(r) => String(r.id)}
          />
          {pageToken && (
            <button type="button" onClick={() => setPageToken(undefined)}>
              First page
            </button>
          )}
          {list?.body.nextPageToken && (
            <button type="button" onClick={() => setPageToken(list.body.nextPageToken)}>
              Next page
            </button>
          )}
        </div>
        {identity && <IdentityPanel key={identity.id} identity={identity} onChanged={() => setAgain(again + 1)} />}
      </div>
      <form class="row-form" id="create-identity" onSubmit={create}>
        <h3>Create a user or service account</h3>
        <select id="create-kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value })}>
          <option value="user">user</option>
          <option value="serviceAccount">service account</option>
        </select>
        <input
          id="create-name"
          placeholder={form.kind === 'user' ? 'username' : 'name'}
          value={form.username}
          onInput={(e) => setForm({ ...form, username: e.currentTarget.value })}
        />
        {form.kind === 'user' && (
          <input
            id="create-password"
            placeholder="password"
            type="password"
            value={form.password}
            onInput={(e) => setForm({ ...form, password: e.currentTarget.value })}
          />
        )}
        <input id="create-roles" placeholder="roles, comma-separated" value={form.roles} onInput={(e) => setForm({ ...form, roles: e.currentTarget.value })} />
        <label>
          <input type="checkbox" checked={form.admin} onChange={() => setForm({ ...form, admin: !form.admin })} /> admin
        </label>
        <button type="submit">Create</button>
      </form>
      {message && (
        <p class="notice" id="create-message">
          {message}
        </p>
      )}
      {secret && (
        <div class="notice" id="new-secret">
          <p>The client secret is shown this once: copy it now.</p>
          <Json value={secret} id="new-secret-value" />
          <button type="button" id="secret-copied" onClick={() => setSecret(undefined)}>
            I have copied it
          </button>
        </div>
      )}
    </div>
  );
}
