/**
 * The Data page: every collection, view, query and external collection in a sidebar; for the chosen
 * one a toolbar (filter box in the svc filter language, search, columns, export, new row, bulk
 * delete), the virtualized grid, and the row panel of the row in the route (`#/data/<name>/<id>`).
 */
import { useEffect, useMemo, useReducer, useState } from 'preact/hooks';
import { api, messageOf } from '../api';
import type { Model, Resource } from '../model';
import { currentRoute, go, href } from '../router';
import { plural } from '../ui';
import { Grid } from './grid';
import { RowLoader, type ListQuery } from './loader';
import { RowPanel } from './row-panel';
import { exportRows } from './export';

const KINDS: [Resource['kind'], string][] = [
  ['collection', 'Collections'],
  ['view', 'Views'],
  ['query', 'Queries'],
  ['external', 'External'],
];

export function Sidebar({ model, current, page }: { model: Model; current?: string; page: string }) {
  return (
    <aside class="sidebar" id="sidebar">
      {KINDS.map(([kind, label]) => {
        const list = model.resources.filter((r) => r.kind === kind);
        return list.length === 0 ? null : (
          <section>
            <h3>{label}</h3>
            {list.map((r) => (
              <a href={href(page, r.name)} class={r.name === current ? 'active' : ''} data-resource={r.name}>
                {r.name}
              </a>
            ))}
          </section>
        );
      })}
    </aside>
  );
}

export function DataPage({ model, route }: { model: Model; route: string[] }) {
  const [name, rowId] = route;
  const resource = model.resources.find((r) => r.name === name) ?? (name ? undefined : model.resources[0]);
  useEffect(() => {
    // The address may have moved on since this render (a link followed, a URL typed): only a route
    // that still names no resource goes to the first one.
    const now = currentRoute();
    if (!name && resource && (now[0] ?? 'data') === 'data' && !now[1]) go('data', resource.name);
  }, [name, resource]);
  return (
    <div class="split">
      <Sidebar model={model} current={resource?.name} page="data" />
      {resource ? <ResourceView key={resource.name} model={model} resource={resource} rowId={rowId} /> : <p class="pad muted">No such resource.</p>}
    </div>
  );
}

function ResourceView({ model, resource, rowId }: { model: Model; resource: Resource; rowId?: string }) {
  const [query, setQuery] = useState<ListQuery>({ filter: '', search: '', sortBy: '', select: [] });
  const [filterText, setFilterText] = useState('');
  const [searchText, setSearchText] = useState('');
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState('');
  const [generation, reload] = useReducer((n: number) => n + 1, 0);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const loader = useMemo(() => new RowLoader(resource, query, () => rerender(0)), [resource, query, generation]);
  useEffect(() => () => loader.stop(), [loader]);
  const columns = resource.props.filter((p) => !hidden.has(p.name));
  const externalColumns = useMemo(
    () => (resource.kind === 'external' ? Object.keys(loader.rows[0] ?? {}).map((k) => ({ name: k, type: 'json', required: false, readOnly: true })) : []),
    [loader.rows.length > 0],
  );
  const apply = (e: Event) => {
    e.preventDefault();
    setSelected(new Set());
    setQuery({ ...query, filter: filterText, search: searchText });
  };
  const filterError = loader.error && loader.error.status === 400 ? loader.error.message : '';
  const bulkDelete = async () => {
    try {
      await api('DELETE', `/${encodeURIComponent(resource.name)}`, [...selected]);
      setNotice(`Deleted ${plural(selected.size, 'row')}.`);
      setSelected(new Set());
      reload(0);
    } catch (err) {
      setNotice(`Bulk delete failed: ${messageOf(err)}`);
    }
    setConfirming(false);
  };
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const shown = resource.kind === 'external' ? externalColumns : columns;
  return (
    <div class="resource">
      <form class="toolbar" onSubmit={apply}>
        <h2 title={resource.description}>
          {resource.name} <small class="muted">{resource.kind}</small>
        </h2>
        <div class="filter-box">
          <input
            id="filter"
            placeholder='filter, e.g. price gt 10 and name sw "A"'
            value={filterText}
            aria-invalid={!!filterError}
            aria-describedby="filter-error"
            onInput={(e) => setFilterText(e.currentTarget.value)}
          />
          {filterError && (
            <p class="error field-error" id="filter-error" role="alert">
              {filterError}
            </p>
          )}
        </div>
        {resource.search && <input id="search" placeholder="search" value={searchText} onInput={(e) => setSearchText(e.currentTarget.value)} />}
        <button type="submit" id="apply">
          Apply
        </button>
        {resource.kind !== 'external' && (
          <details class="menu">
            <summary>Columns</summary>
            <div class="menu-body">
              {resource.props.map((p) => (
                <label>
                  <input
                    type="checkbox"
                    data-column={p.name}
                    checked={!hidden.has(p.name)}
                    onChange={() => {
                      const next = new Set(hidden);
                      if (next.has(p.name)) next.delete(p.name);
                      else next.add(p.name);
                      setHidden(next);
                    }}
                  />
                  {p.name} <small class="muted">{p.type}</small>
                </label>
              ))}
            </div>
          </details>
        )}
        <details class="menu">
          <summary>Export</summary>
          <div class="menu-body">
            <button type="button" id="export-csv" onClick={() => exportRows(resource, query, shown, 'csv').catch((err) => setNotice(messageOf(err)))}>
              CSV
            </button>
            <button type="button" id="export-json" onClick={() => exportRows(resource, query, shown, 'json').catch((err) => setNotice(messageOf(err)))}>
              JSON
            </button>
          </div>
        </details>
        {resource.writable && (
          <a class="button" href={href('data', resource.name, 'new')} id="new-row">
            New row
          </a>
        )}
        {resource.writable && selected.size > 0 && !confirming && (
          <button type="button" class="danger" id="bulk-delete" onClick={() => setConfirming(true)}>
            Delete {selected.size} selected
          </button>
        )}
        {confirming && (
          <span class="confirm">
            Delete {plural(selected.size, 'row')} in one request?{' '}
            <button type="button" class="danger" id="bulk-delete-confirm" onClick={bulkDelete}>
              Delete
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        )}
        <span class="muted count" id="row-count">
          {loader.total !== undefined
            ? plural(loader.total, 'row')
            : `${loader.rows.length}${loader.done ? '' : '+'} ${loader.rows.length === 1 && loader.done ? 'row' : 'rows'}`}
        </span>
      </form>
      {notice && (
        <p class="notice" id="notice" onClick={() => setNotice('')}>
          {notice}
        </p>
      )}
      {loader.error && !filterError && <p class="error">{loader.error.message}</p>}
      <div class="grid-and-panel">
        <Grid
          loader={loader}
          columns={shown}
          sortBy={query.sortBy}
          onSort={resource.kind === 'external' ? undefined : (sortBy) => setQuery({ ...query, sortBy })}
          selected={selected}
          onToggle={resource.writable ? toggle : undefined}
          onOpen={(row) => (row.id !== undefined && resource.kind !== 'external' ? go('data', resource.name, String(row.id)) : undefined)}
          activeId={rowId}
        />
        {rowId && (
          <RowPanel
            key={`${resource.name}/${rowId}`}
            model={model}
            resource={resource}
            rowId={rowId}
            onChanged={() => reload(0)}
            onClose={() => go('data', resource.name)}
          />
        )}
      </div>
    </div>
  );
}
