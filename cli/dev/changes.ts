/**
 * @module What a batch of changed paths asks of `svc dev` (DESIGN §10), and the one line each reload
 * prints: what changed, what was done, how many milliseconds it took.
 */

/** The work a batch needs, from most to least: any definition or svc.json → `definitions`. */
export type ChangeKind = 'definitions' | 'functions' | 'public' | 'mcp';

/** Function code files (compiled into `.svc/functions/`); any other file under `functions/` is a definition or ignored. */
const CODE = /^functions\/.+\.(ts|tsx|js|mjs|cjs)$/;

/**
 * Sorts a batch: `svc.json` and files of `collections/ views/ queries/ triggers/ external/` and `functions/*.json`
 * need a new version of the app; other files under `functions/`, the function workers; `public/` is
 * served from disk; `mcp/` is read by each new agent session.
 */
export function kindOf(paths: string[]): ChangeKind {
  const kinds = new Set(paths.map(kindOfPath));
  for (const k of ['definitions', 'functions', 'public', 'mcp'] as const) if (kinds.has(k)) return k;
  return 'mcp';
}

function kindOfPath(path: string): ChangeKind {
  if (path.startsWith('public/') || path === 'public') return 'public';
  if (path.startsWith('mcp/') || path === 'mcp') return 'mcp';
  if (CODE.test(path)) return 'functions';
  return 'definitions';
}

/** `collections/Order.json`, or `collections/Order.json and 2 more`. */
export function describePaths(paths: string[]): string {
  return paths.length === 1 ? paths[0] : `${paths[0]} and ${paths.length - 1} more`;
}

/** The one line of a reload: `svc dev: <what changed>: <what was done> (<ms> ms)`. */
export function reloadLine(paths: string[], done: string, startedAt: number): string {
  return `svc dev: ${describePaths(paths)} changed: ${done} (${Math.round(performance.now() - startedAt)} ms)\n`;
}
