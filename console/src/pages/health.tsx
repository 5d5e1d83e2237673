/** Health: what `GET /api/_ready` reports, and `GET /api/_admin/status` (migrations, version, instances) when the server has it. */
import { useState } from 'preact/hooks';
import { Json, Unavailable, useGet } from '../ui';

export function HealthPage() {
  const [again, setAgain] = useState(0);
  const ready = useGet('/_ready', again);
  const status = useGet('/_admin/status', again);
  return (
    <div class="page">
      <h2>
        Health{' '}
        <button type="button" onClick={() => setAgain(again + 1)}>
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
      {status && (status.status === 200 ? <Json value={status.body} id="admin-status" /> : <Unavailable path="/api/_admin/status" answer={status} />)}
    </div>
  );
}
