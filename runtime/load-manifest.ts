/**
 * @module Reads `.svc/manifest.json` and checks it is a manifest this runtime understands, so a stale
 * or hand-edited `.svc/` fails at start with a clear message instead of at the first request.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROPERTY_TYPES, type AppManifest } from './contract/manifest.js';

/** Start-up failure with a one-line reason (the CLI prints it and exits non-zero). */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

const isArray = (v: unknown) => Array.isArray(v);

/**
 * @throws StartupError when `.svc/manifest.json` is missing, unreadable or of another shape
 * Source: DESIGN §2 (the manifest is "typed once and validated when loaded").
 */
export function loadManifest(svcDir: string): AppManifest {
  const file = join(svcDir, 'manifest.json');
  if (!existsSync(file)) throw new StartupError(`${file} not found: run \`svc generate\` first`);
  let m: AppManifest;
  try {
    m = JSON.parse(readFileSync(file, 'utf8')) as AppManifest;
  } catch {
    throw new StartupError(`${file} is not valid JSON: run \`svc generate\` again`);
  }
  const problems: string[] = [];
  if (m.manifestVersion !== 1) problems.push('manifestVersion is not 1');
  if (typeof m.name !== 'string') problems.push('name is missing');
  if (m.provider !== 'sqlite' && m.provider !== 'postgresql') problems.push('provider is not sqlite or postgresql');
  for (const key of ['collections', 'views', 'queries', 'functions', 'externals'] as const) {
    if (!isArray(m[key])) problems.push(`${key} is not an array`);
  }
  for (const c of isArray(m.collections) ? m.collections : []) {
    for (const p of c.properties ?? []) {
      if (!PROPERTY_TYPES.includes(p.type)) problems.push(`${c.name}.${p.name} has unknown type ${JSON.stringify(p.type)}`);
    }
  }
  for (const q of isArray(m.queries) ? m.queries : []) {
    if (q.idType !== 'guid' && q.idType !== 'string') problems.push(`query ${q.name} has no idType`);
    if (q.joins !== undefined && q.joins !== 'caller') problems.push(`query ${q.name} has an unknown joins mode (got ${JSON.stringify(q.joins)})`);
    for (const [name, f] of Object.entries(q.fields ?? {})) {
      if (!PROPERTY_TYPES.includes(f.type)) problems.push(`query ${q.name}.${name} has no known type (got ${JSON.stringify(f.type)})`);
    }
  }
  const settings = m.settings as Partial<AppManifest['settings']> | undefined;
  if (typeof settings?.agent !== 'object' || settings.agent === null || typeof settings.agent.providers !== 'object')
    problems.push('settings.agent is not typed agent settings');
  if (settings?.credits?.mode !== 'business' && settings?.credits?.mode !== 'self-serve') problems.push('settings.credits.mode is not business or self-serve');
  for (const e of isArray(m.externals) ? m.externals : []) {
    if (!['none', 'apiKey', 'oauth2'].includes(e.connection?.type)) problems.push(`external ${e.name} has no known connection type`);
  }
  for (const f of isArray(m.functions) ? m.functions : []) {
    if (typeof f.module !== 'string') problems.push(`function ${f.name} has no compiled module`);
  }
  if (problems.length > 0) throw new StartupError(`${file} is not a manifest this runtime understands (${problems.join('; ')}): run \`svc generate\` again`);
  return m;
}
