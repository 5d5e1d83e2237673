// Builds svc (`npm run build`) unless dist/ is newer than every source file: `npm install` already
// built it (the `prepare` script), so `npm run example` right after it starts at once (issue 32 §4).
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const SOURCES = ['runtime', 'generator', 'cli', 'console', 'schemas', 'templates', 'package.json', 'tsconfig.json'];
const BUILT = join(root, 'dist/cli/index.js');

/** The newest modification time under `path`, in ms (node_modules and dist skipped). */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let max = 0;
  for (const entry of readdirSync(path)) if (entry !== 'node_modules' && entry !== 'dist') max = Math.max(max, newest(join(path, entry)));
  return max;
}

const built = existsSync(BUILT) && existsSync(join(root, 'dist/console/index.html')) ? statSync(BUILT).mtimeMs : 0;
const changed = Math.max(
  ...SOURCES.map((s) => join(root, s))
    .filter(existsSync)
    .map(newest),
);
if (built === 0 || changed > built) execSync('npm run build', { cwd: root, stdio: 'inherit' });
else console.log('svc: dist/ is up to date with the sources; not building again');
