/**
 * Export of the current filter, search and sort as CSV or JSON: the rows are fetched page by page
 * (1,000 a page, keyset cursors) and each page is encoded at once and appended to the file, so no
 * more than one page is held as objects. Where the browser can write files (`showSaveFilePicker`) the
 * pages stream straight to disk; elsewhere they are collected as Blob parts and downloaded at the end.
 * CSV cells are encoded by `csvCell` (formula-like text is neutralised).
 */
import { cellText, type Prop, type Resource } from '../model';
import { pages, type ListQuery } from './loader';
import { csvCell } from './csv';

interface Sink {
  write(text: string): Promise<void>;
  close(): Promise<void>;
}

type SavePicker = (options: { suggestedName: string }) => Promise<{ createWritable(): Promise<{ write(s: string): Promise<void>; close(): Promise<void> }> }>;

async function openSink(fileName: string, type: string): Promise<Sink> {
  const picker = (window as unknown as { showSaveFilePicker?: SavePicker }).showSaveFilePicker;
  // Automated browsers (navigator.webdriver) get the Blob download: a file picker would wait for a person.
  if (picker && !navigator.webdriver) {
    const writable = await (await picker({ suggestedName: fileName })).createWritable();
    return { write: (s) => writable.write(s), close: () => writable.close() };
  }
  const parts: Blob[] = [];
  return {
    write: async (s) => void parts.push(new Blob([s])),
    close: async () => {
      const url = URL.createObjectURL(new Blob(parts, { type }));
      const a = document.createElement('a');
      a.href = url;
      a.download = fileName;
      a.id = 'export-link';
      document.body.append(a);
      a.click();
      setTimeout(() => (a.remove(), URL.revokeObjectURL(url)), 60_000);
    },
  };
}

/** Exports every row the query matches, with the given columns (CSV) or whole rows (JSON). */
export async function exportRows(resource: Resource, query: ListQuery, columns: Prop[], format: 'csv' | 'json'): Promise<number> {
  const sink = await openSink(`${resource.name}.${format}`, format === 'csv' ? 'text/csv' : 'application/json');
  let n = 0;
  await sink.write(format === 'csv' ? `${columns.map((c) => csvCell(c.name)).join(',')}\r\n` : '[');
  for await (const page of pages(resource, query, 1000)) {
    const text =
      format === 'csv'
        ? page.rows.map((r) => `${columns.map((c) => csvCell(cellText(c, r[c.name]))).join(',')}\r\n`).join('')
        : page.rows.map((r, i) => `${n + i > 0 ? ',' : ''}\n${JSON.stringify(r)}`).join('');
    n += page.rows.length;
    await sink.write(text);
  }
  if (format === 'json') await sink.write('\n]\n');
  await sink.close();
  return n;
}
