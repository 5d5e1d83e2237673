/**
 * Real-time (DESIGN §9 `/api/_admin/realtime`): connections per instance and channels with their
 * member counts, refreshed every 5 seconds; and a live tail of one collection's changes or one channel.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Model } from '../model';
import { LiveTail } from './tail';
import { Table, Unavailable, useGet } from '../ui';

export function RealtimePage({ model }: { model: Model }) {
  const [again, setAgain] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setAgain((n) => n + 1), 5000);
    return () => clearInterval(timer);
  }, []);
  const state = useGet<{ connections?: number; instances?: Record<string, unknown>[]; channels?: Record<string, unknown>[] }>('/_admin/realtime', again);
  return (
    <div class="page">
      <h2>
        Real-time{' '}
        <button type="button" id="rt-refresh" onClick={() => setAgain((n) => n + 1)}>
          Refresh
        </button>
      </h2>
      <LiveTail model={model} />
      {state &&
        (state.status === 200 ? (
          <div id="realtime-state">
            <p>
              <strong id="rt-connections">{String(state.body.connections ?? 0)}</strong> {(state.body.connections ?? 0) === 1 ? 'connection' : 'connections'}
            </p>
            <h3>Connections per instance</h3>
            <Table
              id="rt-instances"
              rows={state.body.instances ?? []}
              columns={['instance', 'self', 'connections', 'channels', 'seenAt']}
              rowKey={(r) => String(r.instance)}
            />
            <h3>Channels</h3>
            <Table id="rt-channels" rows={state.body.channels ?? []} columns={['name', 'members']} rowKey={(r) => String(r.name)} />
          </div>
        ) : (
          <Unavailable path="/api/_admin/realtime" answer={state} />
        ))}
    </div>
  );
}
