/** Small pieces shared by the pages: a loading hook, JSON shown as text, a failed call's note, and tables. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, type Answer } from './api';

/**
 * `GET /api<path>` when `path` changes (and when `again` does); undefined while a new path loads. A
 * reload of the same path (`again`) keeps the previous answer until the new one is there, so panels
 * built from it stay open.
 */
export function useGet<T = unknown>(path: string | undefined, again = 0): Answer<T> | undefined {
  const [answer, setAnswer] = useState<Answer<T>>();
  const shown = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!path) return;
    let live = true;
    if (shown.current !== path) setAnswer(undefined);
    shown.current = path;
    call<T>('GET', path).then(
      (a) => live && setAnswer(a),
      (err) => live && setAnswer({ status: 0, body: { error: String(err) } as T, headers: new Headers(), ms: 0 }),
    );
    return () => {
      live = false;
    };
  }, [path, again]);
  return answer;
}

/** A value as indented JSON, always as text. */
export function Json({ value, id }: { value: unknown; id?: string }) {
  return (
    <pre class="json" id={id}>
      {typeof value === 'string' ? value : JSON.stringify(value, null, 2)}
    </pre>
  );
}

/** What a page shows when one of its calls failed: the endpoint, the status and the server's message. */
export function Unavailable({ path, answer }: { path: string; answer: Answer<unknown> }) {
  const body = answer.body as { error?: string } | null;
  return (
    <p class="error pad" data-unavailable={path}>
      {`${path} answered ${answer.status}: ${body?.error ?? ''}`}
    </p>
  );
}

/**
 * A table of objects: one column per key of the first row (or `columns`), values as text. `rowKey`
 * names each row (`data-key`, for tests and links); `id` is the table's element id.
 */
export function Table({
  rows,
  columns,
  onRow,
  rowKey,
  id,
}: {
  rows: Record<string, unknown>[];
  columns?: string[];
  onRow?: (r: Record<string, unknown>) => void;
  rowKey?: (r: Record<string, unknown>) => string;
  id?: string;
}) {
  const cols = columns ?? Object.keys(rows[0] ?? {});
  return (
    <table class="table" id={id}>
      <thead>
        <tr>
          {cols.map((c) => (
            <th>{c}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr onClick={onRow ? () => onRow(r) : undefined} class={onRow ? 'clickable' : ''} data-key={rowKey?.(r)}>
            {cols.map((c) => (
              <td data-col={c}>{r[c] === null || r[c] === undefined ? '' : typeof r[c] === 'object' ? JSON.stringify(r[c]) : String(r[c])}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** `n` and the noun, singular for 1: `plural(1, 'row')` → "1 row", `plural(3, 'row')` → "3 rows". */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : pluralForm}`;
}
