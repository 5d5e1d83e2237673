/**
 * Loads a resource's rows page by page for the grid (and the export): keyset paging (`lastKey`,
 * SPEC §4.2) when rows are in id order, `pageNo` when sorted (`lastKey` ignores `sortBy`) and for
 * queries. The first page asks `count=true`, so the grid knows how tall it is before the rows arrive.
 * `want(i)` asks for every row up to `i` plus one page ahead; pages are fetched one after another.
 */
import { ApiError, call, qs, toError } from '../api';
import type { Resource } from '../model';

export type Row = Record<string, unknown>;

/** What the grid shows: the filter box, search box, sort and chosen columns. */
export interface ListQuery {
  filter: string;
  search: string;
  /** A property name, `name-` for descending, or ''. */
  sortBy: string;
  /** Columns to `select`; empty: every column. */
  select: string[];
}

/** The list URL of one page (path under `/api`). */
export function pageUrl(resource: Resource, q: ListQuery, pageSize: number, cursor: { lastKey?: string; pageNo?: number }, count = false): string {
  return `/${encodeURIComponent(resource.name)}${qs({
    filter: q.filter.trim(),
    search: resource.search ? q.search.trim() : undefined,
    sortBy: q.sortBy,
    select: q.select.length ? q.select.join(',') : undefined,
    pageSize: resource.kind === 'external' ? undefined : pageSize,
    count: count && resource.kind !== 'external' ? 'true' : undefined,
    ...cursor,
  })}`;
}

/** The rows of a list answer: `data`, else `items`, else the body when it is an array (external collections). */
export function rowsOf(body: unknown): Row[] {
  if (Array.isArray(body)) return body as Row[];
  const b = body as { data?: unknown; items?: unknown } | null;
  if (Array.isArray(b?.data)) return b.data as Row[];
  if (Array.isArray(b?.items)) return b.items as Row[];
  return [];
}

/**
 * Walks every page of a list in order, calling `onPage` with each; stops at the last page or when
 * `stopped()` says so. @throws ApiError for a non-2xx answer (a bad filter answers 400)
 */
export async function* pages(resource: Resource, q: ListQuery, pageSize: number): AsyncGenerator<{ rows: Row[]; count?: number }> {
  const keyset = !q.sortBy && resource.kind !== 'query';
  let lastKey: string | undefined;
  for (let pageNo = 1; ; pageNo++) {
    const answer = await call('GET', pageUrl(resource, q, pageSize, keyset ? { lastKey } : { pageNo }, pageNo === 1));
    if (answer.status !== 200) throw toError(answer);
    const rows = rowsOf(answer.body);
    const count = (answer.body as { meta?: { count?: number } } | null)?.meta?.count;
    yield { rows, count };
    if (resource.kind === 'external' || rows.length < pageSize) return;
    lastKey = String(rows[rows.length - 1].id);
  }
}

/** The grid's rows, loaded on demand. `onChange` is called after each page and on an error. */
export class RowLoader {
  rows: Row[] = [];
  total: number | undefined;
  done = false;
  error: ApiError | undefined;
  private wanted = 0;
  private running = false;
  private readonly iterator: AsyncGenerator<{ rows: Row[]; count?: number }>;

  constructor(
    resource: Resource,
    query: ListQuery,
    private readonly onChange: () => void,
    private readonly pageSize = 500,
  ) {
    this.iterator = pages(resource, query, pageSize);
  }

  /** Asks for the rows up to `index` and one page beyond. */
  want(index: number): void {
    this.wanted = Math.max(this.wanted, index + this.pageSize);
    if (!this.running) void this.run();
  }

  /** Stops loading (the query changed). */
  stop(): void {
    this.done = true;
    void this.iterator.return(undefined);
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (!this.done && this.rows.length < this.wanted) {
        const next = await this.iterator.next();
        if (next.done) {
          this.done = true;
          break;
        }
        if (this.done) break;
        this.rows = this.rows.concat(next.value.rows);
        if (next.value.count !== undefined) this.total = next.value.count;
        if (next.value.rows.length < this.pageSize) this.done = true;
        this.onChange();
      }
      if (this.done) this.total = this.rows.length;
    } catch (err) {
      this.error = err instanceof ApiError ? err : new ApiError(0, String(err), undefined, []);
      this.done = true;
    } finally {
      this.running = false;
      this.onChange();
    }
  }
}
