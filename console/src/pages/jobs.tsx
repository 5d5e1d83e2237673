/**
 * Jobs (DESIGN §12, `/api/_admin/jobs`): trigger, schedule and code jobs by state (pending, running,
 * failed) with their counts; one job's payload (a trigger's event), last error and attempts; retry and
 * discard one job, retry every failed job. Refreshed every 5 seconds.
 */
import { useEffect, useState } from 'preact/hooks';
import { call, messageOf, qs, toError } from '../api';
import { Json, Table, Unavailable, useGet } from '../ui';

type State = 'pending' | 'running' | 'failed';
const STATES: State[] = ['pending', 'running', 'failed'];

interface JobsAnswer {
  data?: Record<string, unknown>[];
  stats?: { pending?: number; running?: number; failed?: number; oldestPendingSeconds?: number };
}

/** What a job's row shows: the function or trigger it runs, read from its payload. */
function target(job: Record<string, unknown>): string {
  const p = (job.payload ?? {}) as Record<string, unknown>;
  if (typeof p.trigger === 'string') return `trigger ${p.trigger}`;
  if (typeof p.function === 'string') return `${job.task === 'svc_schedule' ? 'schedule' : 'function'} ${p.function}`;
  return String(job.task ?? '');
}

export function JobsPage() {
  const [state, setState] = useState<State>('pending');
  const [again, setAgain] = useState(0);
  const [open, setOpen] = useState<string>();
  const [note, setNote] = useState('');
  useEffect(() => {
    const timer = setInterval(() => setAgain((n) => n + 1), 5000);
    return () => clearInterval(timer);
  }, []);
  const list = useGet<JobsAnswer>(`/_admin/jobs${qs({ state, limit: 200 })}`, again);
  const one = useGet<Record<string, unknown>>(open ? `/_admin/jobs/${encodeURIComponent(open)}` : undefined, again);

  const act = async (method: string, path: string, done: string) => {
    try {
      const answer = await call(method, path);
      if (answer.status < 200 || answer.status > 299) throw toError(answer);
      setNote(done);
      if (method === 'DELETE') setOpen(undefined);
    } catch (err) {
      setNote(messageOf(err));
    }
    setAgain((n) => n + 1);
  };

  if (list && list.status !== 200) return <Unavailable path="/api/_admin/jobs" answer={list} />;
  const stats = list?.body.stats ?? {};
  const rows = (list?.body.data ?? []).map((j) => ({ ...j, target: target(j) }));
  return (
    <div class="page">
      <h2>
        Jobs{' '}
        <button type="button" id="jobs-refresh" onClick={() => setAgain((n) => n + 1)}>
          Refresh
        </button>
      </h2>
      <div class="toolbar" id="jobs-states">
        {STATES.map((s) => (
          <button
            type="button"
            id={`jobs-state-${s}`}
            class={s === state ? 'active' : ''}
            onClick={() => {
              setState(s);
              setOpen(undefined);
            }}
          >
            {s} (<span data-count={s}>{String(stats[s] ?? 0)}</span>)
          </button>
        ))}
        {state === 'failed' && (stats.failed ?? 0) > 0 && (
          <button type="button" id="jobs-retry-failed" onClick={() => act('POST', '/_admin/jobs/retry-failed', 'every failed job is due again')}>
            Retry all failed
          </button>
        )}
      </div>
      {(stats.oldestPendingSeconds ?? 0) > 0 && <p class="muted">The oldest due job has waited {Math.round(stats.oldestPendingSeconds ?? 0)} s.</p>}
      {note && (
        <p class="muted" id="jobs-note">
          {note}
        </p>
      )}
      {!list && <p class="muted">Loading…</p>}
      {list && rows.length === 0 && <p class="muted" id="jobs-empty">{`No ${state} jobs.`}</p>}
      {rows.length > 0 && (
        <Table
          id="jobs-table"
          rows={rows}
          columns={['id', 'target', 'attempts', 'maxAttempts', 'runAt', 'lastError']}
          rowKey={(r) => String(r.id)}
          onRow={(r) => setOpen(String(r.id))}
        />
      )}
      {open && one && one.status === 200 && (
        <div class="panel" id="job-panel" data-job={open}>
          <h3>Job {open}</h3>
          <div class="toolbar">
            {one.body.state !== 'running' && (
              <button type="button" id="job-retry" onClick={() => act('POST', `/_admin/jobs/${encodeURIComponent(open)}/retry`, `job ${open} is due again`)}>
                Retry now
              </button>
            )}
            {one.body.state !== 'running' && (
              <button type="button" id="job-discard" onClick={() => act('DELETE', `/_admin/jobs/${encodeURIComponent(open)}`, `job ${open} was discarded`)}>
                Discard
              </button>
            )}
            <button type="button" onClick={() => setOpen(undefined)}>
              Close
            </button>
          </div>
          <Json id="job-json" value={one.body} />
        </div>
      )}
      {open && one && one.status === 404 && <p class="muted">{`Job ${open} is gone (it completed or was discarded).`}</p>}
    </div>
  );
}
