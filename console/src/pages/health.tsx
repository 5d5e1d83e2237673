/**
 * Health: what `GET /api/_ready` reports, and `GET /api/_admin/status` (DESIGN §9): the migrations
 * applied and pending, the svc version, and the instances seen on the bus.
 */
import { useState } from 'preact/hooks';
import { Json, Table, Unavailable, useGet } from '../ui';

interface Status {
  migrations?: { applied: string[] | null; pending: string[] | null };
  version?: string;
  app?: string;
  provider?: string;
  instances?: Record<string, unknown>[];
}

/** A list of migration names, or why there is none. */
function Migrations({ names, id }: { names: string[] | null | undefined; id: string }) {
  if (!names) return <p class="error">could not be read</p>;
  if (names.length === 0)
    return (
      <p class="muted" id={id}>
        none
      </p>
    );
  return (
    <ul id={id}>
      {names.map((n) => (
        <li>{n}</li>
      ))}
    </ul>
  );
}

export function HealthPage() {
  const [again, setAgain] = useState(0);
  const ready = useGet('/_ready', again);
  const status = useGet<Status>('/_admin/status', again);
  const s = status?.status === 200 ? status.body : undefined;
  return (
    <div class="page" id="health-page">
      <h2>
        Health{' '}
        <button type="button" id="health-refresh" onClick={() => setAgain(again + 1)}>
          Refresh
        </button>
      </h2>
      <h3>
        Readiness <small class="muted">GET /api/_ready</small>
      </h3>
      {ready && (
        <>
          <p id="ready-status" class={ready.status === 200 ? 'ok' : 'error'}>
            {ready.status === 200 ? 'Ready' : `Not ready (${ready.status})`} — {ready.ms} ms
          </p>
          <Json value={ready.body} id="ready-body" />
        </>
      )}
      <h3>
        Status <small class="muted">GET /api/_admin/status</small>
      </h3>
      {status && status.status !== 200 && <Unavailable path="/api/_admin/status" answer={status} />}
      {s && (
        <>
          <dl class="props">
            <div class="prop">
              <dt>svc version</dt>
              <dd id="svc-version">{s.version}</dd>
            </div>
            <div class="prop">
              <dt>App</dt>
              <dd id="status-app">
                {s.app} on {s.provider}
              </dd>
            </div>
          </dl>
          <h4>Applied migrations</h4>
          <Migrations names={s.migrations?.applied} id="migrations-applied" />
          <h4>Pending migrations</h4>
          <Migrations names={s.migrations?.pending} id="migrations-pending" />
          <h4>Instances seen on the bus</h4>
          <Table id="status-instances" rows={s.instances ?? []} columns={['instance', 'self', 'seenAt']} rowKey={(r) => String(r.instance)} />
          <details>
            <summary>Everything /api/_admin/status answered</summary>
            <Json value={s} id="admin-status" />
          </details>
        </>
      )}
    </div>
  );
}
