// Vite build of the console (DESIGN §9): `npm run build` runs it into dist/console/, served at /_/ by
// runtime/http/console.ts. Asset names carry a content hash (cached for a year, immutable).
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/_/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: `${here}../dist/console`,
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // No inline script or style: the CSP of DESIGN §9 allows 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
