/**
 * Real-time (DESIGN §9 `/api/_admin/realtime`): connections per instance and channels with their
 * member counts, refreshed every 5 seconds.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Model } from '../model';
import { Json, Unavailable, useGet } from '../ui';

export function RealtimePage({ model: _model }: { model: Model }) {
  const [again, setAgain] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setAgain((n) => n + 1), 5000);
    return () => clearInterval(timer);
  }, []);
  const state = useGet('/_admin/realtime', again);
  return (
    <div class="page">
      <h2>Real-time</h2>
      {state && (state.status === 200 ? <Json value={state.body} id="realtime-state" /> : <Unavailable path="/api/_admin/realtime" answer={state} />)}
    </div>
  );
}
