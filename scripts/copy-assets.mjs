// Copies non-TypeScript assets (JSON Schemas, handlebars templates) next to the compiled output.
import { cpSync } from 'node:fs';
for (const dir of ['schemas', 'templates']) cpSync(dir, `dist/${dir}`, { recursive: true });
