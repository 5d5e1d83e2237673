/**
 * @module The watcher of `svc dev` (DESIGN §10): `svc.json` and the folders `collections/ views/ queries/ triggers/
 * functions/ external/ public/ mcp/` of an app. Each folder is watched recursively (`fs.watch`, which
 * Node 20 supports on Linux); the app folder itself is watched for `svc.json` and for a watched folder
 * that appears, goes away or is replaced. Changes are gathered until the app has been quiet for
 * `quietMs` (rapid saves and an editor's write-then-rename coalesce), then handed over as one batch of
 * paths relative to the app folder. Editors' scratch files (`x~`, `.x.swp`, `4913`, `.#x`) are ignored,
 * and so are events that changed no content: reading a file updates its access time, which inotify
 * reports as a change (`svc generate` reads every definition), so a path counts only when its size,
 * modification time or inode moved since last seen (or it is gone, or new since the watch began);
 * a folder counts only when it is gone (its files report their own changes).
 */
import { existsSync, readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';

/** The folders of an app that `svc dev` watches. */
export const WATCHED_FOLDERS = ['collections', 'views', 'queries', 'functions', 'triggers', 'external', 'public', 'mcp'] as const;

/** The files under `dir` (relative, `/`-separated); none when it is gone. */
function filesIn(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) =>
        join(e.parentPath ?? e.path, e.name)
          .slice(dir.length + 1)
          .split('\\')
          .join('/'),
      );
  } catch {
    return [];
  }
}

/** Files an editor writes beside the one being saved. */
const SCRATCH = /(^|\/)(\.#[^/]*|[^/]*~|\.[^/]*\.sw[a-p]|4913)$/;

export interface AppWatcher {
  close(): void;
}

/**
 * Watches `appDir` (see the module comment).
 * @param onBatch - gets each batch of changed paths (relative, `/`-separated, sorted); never called
 *   after `close()`
 * @param quietMs - how long the app must be quiet before a batch is handed over, in ms (default 50)
 */
export function watchApp(appDir: string, onBatch: (paths: string[]) => void, quietMs = 50): AppWatcher {
  const folders = new Map<string, FSWatcher>();
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const seen = new Map<string, string>();
  const startedAt = Date.now();
  const moved = (path: string): boolean => {
    let signature: string;
    let modifiedAt: number;
    try {
      const s = statSync(join(appDir, path));
      if (s.isDirectory()) return false; // a folder made or touched: its files report their own changes
      signature = `${s.size}:${s.mtimeMs}:${s.ino}`;
      modifiedAt = s.mtimeMs;
    } catch {
      return seen.delete(path) || true; // gone
    }
    const before = seen.get(path);
    seen.set(path, signature);
    return before === undefined ? modifiedAt >= startedAt - 1000 : before !== signature;
  };
  const note = (path: string) => {
    if (closed || SCRATCH.test(path) || !moved(path)) return;
    pending.add(path);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const batch = [...pending].sort();
      pending.clear();
      if (!closed && batch.length > 0) onBatch(batch);
    }, quietMs);
  };
  const attach = (folder: string) => {
    folders.get(folder)?.close();
    folders.delete(folder);
    const dir = join(appDir, folder);
    if (!existsSync(dir)) return;
    try {
      const w = watch(dir, { recursive: true }, (_event, name) => note(name ? `${folder}/${String(name).split('\\').join('/')}` : folder));
      // A folder removed while watched: its watcher errors; the app folder's watcher sees the removal.
      w.on('error', () => folders.get(folder) === w && (w.close(), folders.delete(folder)));
      folders.set(folder, w);
    } catch {
      /* gone between the check and the watch: the app folder's watcher will see it come back */
    }
  };
  WATCHED_FOLDERS.forEach(attach);
  const root = watch(appDir, (_event, name) => {
    const entry = name ? String(name) : '';
    if (entry === 'svc.json') note(entry);
    else if ((WATCHED_FOLDERS as readonly string[]).includes(entry)) {
      attach(entry); // created, removed or replaced: watch what is there now
      note(entry);
      // Files written into a new folder before its watcher was attached: noted once (`moved` drops repeats).
      for (const file of filesIn(join(appDir, entry))) note(`${entry}/${file}`);
    }
  });
  root.on('error', () => undefined);
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      root.close();
      for (const w of folders.values()) w.close();
      folders.clear();
    },
  };
}
