/**
 * The data grid: a header row with sortable columns and a body virtualized by
 * @tanstack/virtual-core (only the rows in view, plus a few, are in the DOM). Rows not loaded yet
 * show as "…" and ask the loader for their page. Every value is rendered as text.
 */
import { useEffect, useLayoutEffect, useMemo, useReducer, useRef } from 'preact/hooks';
import { Virtualizer, elementScroll, observeElementOffset, observeElementRect } from '@tanstack/virtual-core';
import { cellText, type Prop } from '../model';
import { IdentityName } from '../identity-name';
import type { Row, RowLoader } from './loader';

const ROW_HEIGHT = 28;

export interface GridProps {
  loader: RowLoader;
  columns: Prop[];
  sortBy: string;
  /** Absent: the columns cannot be sorted (external collections). */
  onSort?: (sortBy: string) => void;
  selected: Set<string>;
  onToggle?: (id: string) => void;
  onOpen: (row: Row) => void;
  activeId?: string;
}

function useVirtualizer(count: number, scroller: { current: HTMLDivElement | null }) {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const v = useMemo(
    () =>
      new Virtualizer<HTMLDivElement, HTMLDivElement>({
        count,
        getScrollElement: () => scroller.current,
        estimateSize: () => ROW_HEIGHT,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        overscan: 20,
        onChange: () => rerender(0),
      }),
    [],
  );
  v.setOptions({ ...v.options, count });
  useLayoutEffect(() => v._didMount(), []);
  useLayoutEffect(() => v._willUpdate());
  return v;
}

export function Grid({ loader, columns, sortBy, onSort, selected, onToggle, onOpen, activeId }: GridProps) {
  const scroller = useRef<HTMLDivElement>(null);
  const count = loader.total ?? loader.rows.length + (loader.done ? 0 : 1);
  const v = useVirtualizer(count, scroller);
  const items = v.getVirtualItems();
  const last = items.length ? items[items.length - 1].index : 0;
  useEffect(() => loader.want(last), [loader, last]);
  const template = `${onToggle ? '32px ' : ''}${columns.map((c) => (c.name === 'id' ? '300px' : c.type === 'text' ? '260px' : '160px')).join(' ')}`;
  const sortMark = (name: string) => (sortBy === name ? ' ▲' : sortBy === `${name}-` ? ' ▼' : '');
  const nextSort = (name: string) => (sortBy === name ? `${name}-` : sortBy === `${name}-` ? '' : name);
  return (
    <div class="grid" ref={scroller} id="grid" data-rows={loader.rows.length} data-total={loader.total ?? ''}>
      <div class="grid-head" style={{ gridTemplateColumns: template }} role="row">
        {onToggle && <span />}
        {columns.map((c) => (
          <button
            type="button"
            class="th"
            data-col={c.name}
            title={`${c.name}: ${c.type}${c.description ? ` — ${c.description}` : ''}`}
            disabled={!onSort || c.type === 'blob' || c.type === 'json'}
            onClick={() => onSort?.(nextSort(c.name))}
          >
            {c.name}
            {sortMark(c.name)}
          </button>
        ))}
      </div>
      <div class="grid-body" style={{ height: `${v.getTotalSize()}px` }}>
        {items.map((item) => {
          const row = loader.rows[item.index];
          const id = row ? String(row.id ?? item.index) : '';
          return (
            <div
              key={item.key}
              class={`grid-row${row && id === activeId ? ' active' : ''}`}
              role="row"
              data-index={item.index}
              style={{ transform: `translateY(${item.start}px)`, gridTemplateColumns: template }}
              onClick={() => row && onOpen(row)}
            >
              {onToggle && (
                <span onClick={(e) => e.stopPropagation()}>
                  {row && <input type="checkbox" aria-label={`select ${id}`} checked={selected.has(id)} onChange={() => onToggle(id)} />}
                </span>
              )}
              {columns.map((c) => (
                <span class="td" data-col={c.name}>
                  {!row ? (
                    '…'
                  ) : c.name === 'createdBy' && typeof row[c.name] === 'string' ? (
                    <IdentityName id={row[c.name] as string} />
                  ) : (
                    cellText(c, row[c.name])
                  )}
                </span>
              ))}
            </div>
          );
        })}
      </div>
    </div>
  );
}
