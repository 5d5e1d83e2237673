/**
 * @module `${secrets.NAME}` and `${env.NAME}` references in settings and definitions (DESIGN §3):
 * resolved at start from the environment (`SVC_SECRET_<NAME>`, or `NAME`), never written resolved
 * into the manifest.
 */
import { StartupError } from './load-manifest.js';

const REF = /\$\{(secrets|env)\.([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces every reference in `value` by its value.
 * @param where - names the setting in the error, e.g. `storage.s3.secretAccessKey`
 * @throws StartupError naming the setting and the variable when a referenced variable is not set
 */
export function resolveRefs(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(REF, (_, kind: string, name: string) => {
    const variable = kind === 'secrets' ? `SVC_SECRET_${name}` : name;
    const found = env[variable];
    if (found === undefined || found === '')
      throw new StartupError(`${where} refers to \${${kind}.${name}}, but the environment variable ${variable} is not set`);
    return found;
  });
}
