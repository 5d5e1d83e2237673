/**
 * Logs (DESIGN §9 `/api/_admin/logs` and `/logs/stats`): request, client (`_log`) and function log
 * entries filtered by time, status, method, path, identity, request id and kind; one request with
 * every line that carries its id; a uPlot chart of requests and errors per minute.
 */
import { useMemo, useState } from 'preact/hooks';
import { qs } from '../api';
import { Table, Unavailable, useGet } from '../ui';
import { Chart } from './chart';

const FIELDS = ['from', 'to', 'status', 'method', 'path', 'identity', 'reqId', 'kind'] as const;
type Filters = Record<(typeof FIELDS)[number], string>;

/** Reads a stats answer loosely: `{ data: [{ t|time|at|from, requests, errors }] }` or an array of those. */
function statsSeries(body: unknown): { times: number[]; requests: number[]; errors: number[]; clientErrors: number[] } {
  const list = (Array.isArray(body) ? body : ((body as { data?: unknown[] })?.data ?? [])) as Record<string, unknown>[];
  const time = (e: Record<string, unknown>) => {
    const v = e.t ?? e.time ?? e.at ?? e.from ?? e.start;
    return typeof v === 'number' ? (v > 1e12 ? v / 1000 : v) : Date.parse(String(v)) / 1000;
  };
  return {
    times: list.map(time),
    requests: list.map((e) => Number(e.requests ?? e.count ?? 0)),
    errors: list.map((e) => Number(e.errors ?? 0)),
    clientErrors: list.map((e) => Number(e.clientErrors ?? 0)),
  };
}

export function LogsPage() {
  const hourAgo = new Date(Date.now() - 3600_000).toISOString();
  const [filters, setFilters] = useState<Filters>({ from: hourAgo, to: '', status: '', method: '', path: '', identity: '', reqId: '', kind: '' });
  const [applied, setApplied] = useState<Filters>(filters);
  const [again, setAgain] = useState(0);
  const [request, setRequest] = useState<string>();
  const [pageToken, setPageToken] = useState<string>();
  const list = useGet<{ data?: Record<string, unknown>[]; nextPageToken?: string }>(`/_admin/logs${qs({ ...applied, pageSize: 200, pageToken })}`, again);
  const stats = useGet(`/_admin/logs/stats${qs({ from: applied.from, to: applied.to, step: 60 })}`, again);
  const one = useGet<{ data?: Record<string, unknown>[] }>(request ? `/_admin/logs${qs({ reqId: request, pageSize: 1000 })}` : undefined);
  const series = useMemo(() => (stats?.status === 200 ? statsSeries(stats.body) : undefined), [stats]);
  const chartSeries = useMemo(
    () =>
      series
        ? [
            { label: 'requests', values: series.requests },
            { label: 'errors', values: series.errors },
          ]
        : [],
    [series],
  );
  if (list && list.status !== 200) return <Unavailable path="/api/_admin/logs" answer={list} />;
  return (
    <div class="page">
      <h2>Logs</h2>
      <form
        class="toolbar wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(filters);
          setPageToken(undefined);
          setAgain(again + 1);
        }}
      >
        {FIELDS.map((f) => (
          <input placeholder={f} data-log-filter={f} value={filters[f]} onInput={(e) => setFilters({ ...filters, [f]: e.currentTarget.value })} />
        ))}
        <button type="submit" id="log-search">
          Search
        </button>
      </form>
      {series && series.times.length > 0 && <Chart times={series.times} series={chartSeries} id="log-chart" />}
      <div class="grid-and-panel">
        <div>
          <Table
            id="log-list"
            rowKey={(r) => String(r.id ?? '')}
            rows={list?.body.data ?? []}
            columns={['time', 'kind', 'status', 'method', 'path', 'durationMs', 'identityId', 'reqId', 'message']}
            onRow={(r) => r.reqId && setRequest(String(r.reqId))}
          />
          {list?.body.nextPageToken && (
            <button type="button" onClick={() => setPageToken(list.body.nextPageToken)}>
              Older entries
            </button>
          )}
        </div>
        {request && one && (
          <section class="panel" id="log-request">
            <h3>Request {request}</h3>
            <Table
              id="log-request-lines"
              rows={one.body.data ?? []}
              rowKey={(r) => String(r.kind)}
              columns={['time', 'kind', 'status', 'method', 'path', 'durationMs', 'severity', 'source', 'message']}
            />
          </section>
        )}
      </div>
    </div>
  );
}
