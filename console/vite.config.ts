// Vite build of the console (DESIGN §9): `npm run build` runs it into dist/console/, served at /_/ by
// runtime/http/console.ts. Asset names carry a content hash (cached for a year, immutable).
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/_/',
  logLevel: 'warn',
  // Every script and style tag (and what the preload helper adds) carries this nonce; the server puts a
  // fresh one in its place in each response and allows only it in script-src (runtime/http/console.ts).
  html: { cspNonce: 'SVC_CSP_NONCE' },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: `${here}../dist/console`,
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    // No inline script or style: the CSP of DESIGN §9 allows none.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
