/**
 * @module Finds the Chromium the login-page test drives (DESIGN §8: Debian's Chromium through
 * playwright-core), and installs Debian's `chromium` package when it is missing and this process may
 * (root, with apt-get). playwright's own browser download cannot work here (no network but the
 * package registries), so the browser always comes from the system.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where Debian's `chromium` package puts the browser. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export interface FindChromiumOptions {
  /** Paths tried first, in order. Default: env `SVC_TEST_CHROMIUM` (when set), then `/usr/bin/chromium`. */
  candidates?: string[];
  /** Searched for `chromium` and `chromium-browser` after the candidates. Default: env `PATH`. */
  path?: string;
  /**
   * Install Debian's `chromium` when nothing is found. Default: when running as root and `apt-get`
   * is on `path`. The install runs `apt-get install -y chromium`, then `apt-get update` and the install
   * again when the first try fails.
   */
  install?: boolean;
  /** The apt-get to run. Default: `apt-get` found on `path`. */
  aptGet?: string;
  /** Where each step is reported (one line each). Default: stdout. */
  log?: (line: string) => void;
}

const isExecutable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The first executable named `name` in the folders of `path`, or undefined. */
function onPath(name: string, path: string): string | undefined {
  return path
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(isExecutable);
}

/** The first existing executable among the candidates and on `path`. */
function lookup(candidates: string[], path: string): string | undefined {
  return candidates.find(isExecutable) ?? onPath('chromium', path) ?? onPath('chromium-browser', path);
}

/**
 * Finds Chromium, installing Debian's package when allowed (see `FindChromiumOptions`).
 * @returns the browser's path, or undefined when none is found and none could be installed (each
 *   step and why it failed is logged)
 */
export function findChromium(options: FindChromiumOptions = {}): string | undefined {
  const path = options.path ?? process.env.PATH ?? '';
  const candidates = options.candidates ?? [...(process.env.SVC_TEST_CHROMIUM ? [process.env.SVC_TEST_CHROMIUM] : []), DEBIAN_CHROMIUM];
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const found = lookup(candidates, path);
  if (found) return found;
  const aptGet = options.aptGet ?? onPath('apt-get', path);
  const install = options.install ?? (process.getuid?.() === 0 && aptGet !== undefined);
  if (!install || !aptGet) {
    log(`svc tests: no Chromium found (tried ${candidates.join(', ')} and PATH); install Debian's package: apt-get install -y chromium`);
    return undefined;
  }
  const apt = (...args: string[]) => {
    log(`svc tests: Chromium is missing; running ${aptGet} ${args.join(' ')}`);
    // Waits up to 5 minutes for another apt/dpkg run to release its lock.
    const r = spawnSync(aptGet, ['-o', 'DPkg::Lock::Timeout=300', ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return r.status === 0;
  };
  if (!apt('install', '-y', 'chromium')) {
    if (!apt('update') || !apt('install', '-y', 'chromium')) {
      log('svc tests: installing Chromium failed; the login-page test will fail');
      return undefined;
    }
  }
  const installed = lookup([DEBIAN_CHROMIUM], path);
  log(installed ? `svc tests: Chromium installed at ${installed}` : `svc tests: apt-get succeeded but ${DEBIAN_CHROMIUM} is missing`);
  return installed;
}
