/**
 * @module Finds a program the tests need from the system (Chromium, HAProxy), and installs its Debian
 * package when it is missing and this process may (root, with apt-get): the one way chromium.ts and
 * haproxy.ts find theirs.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Options of `findOrInstall` (and of `findChromium`, `findHaproxy`). */
export interface FindProgramOptions {
  /** Paths tried first, in order. Default: the program's env override (when set), then its Debian path. */
  candidates?: string[];
  /** Searched for the program's names after the candidates. Default: env `PATH`. */
  path?: string;
  /**
   * Install the Debian package when nothing is found. Default: when running as root and `apt-get` is
   * on `path`. Runs `apt-get install -y <package>`, then `apt-get update` and the install again when
   * the first try fails.
   */
  install?: boolean;
  /** The apt-get to run. Default: `apt-get` found on `path`. */
  aptGet?: string;
  /** Where each step is reported (one line each). Default: stdout. */
  log?: (line: string) => void;
}

/** What `findOrInstall` looks for. */
export interface DebianProgram {
  /** As the log lines name it: "Chromium". */
  label: string;
  /** The Debian package: "chromium". */
  debianPackage: string;
  /** Where the package puts the program. */
  debianPath: string;
  /** Names searched on `path`, in order. */
  names: string[];
  /** The env variable naming a path tried first. */
  envOverride: string;
  /** The log line's end when installing fails: "the login-page test will fail". */
  withoutIt: string;
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

/**
 * Finds `program`, installing its Debian package when allowed (see `FindProgramOptions`).
 * @returns the program's path, or undefined when none is found and none could be installed (each step
 *   and why it failed is logged, with what to install)
 */
export function findOrInstall(program: DebianProgram, options: FindProgramOptions = {}): string | undefined {
  const { label, debianPackage, debianPath } = program;
  const path = options.path ?? process.env.PATH ?? '';
  const override = process.env[program.envOverride];
  const candidates = options.candidates ?? [...(override ? [override] : []), debianPath];
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const lookup = (paths: string[]) => paths.find(isExecutable) ?? program.names.map((n) => onPath(n, path)).find(Boolean);
  const found = lookup(candidates);
  if (found) return found;
  const aptGet = options.aptGet ?? onPath('apt-get', path);
  const install = options.install ?? (process.getuid?.() === 0 && aptGet !== undefined);
  if (!install || !aptGet) {
    log(`svc tests: no ${label} found (tried ${candidates.join(', ')} and PATH); install Debian's package: apt-get install -y ${debianPackage}`);
    return undefined;
  }
  const apt = (...args: string[]) => {
    log(`svc tests: ${label} is missing; running ${aptGet} ${args.join(' ')}`);
    // Waits up to 5 minutes for another apt/dpkg run to release its lock.
    const r = spawnSync(aptGet, ['-o', 'DPkg::Lock::Timeout=300', ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return r.status === 0;
  };
  if (!apt('install', '-y', debianPackage) && (!apt('update') || !apt('install', '-y', debianPackage))) {
    log(`svc tests: installing ${label} failed; ${program.withoutIt}`);
    return undefined;
  }
  const installed = lookup([debianPath]);
  log(installed ? `svc tests: ${label} installed at ${installed}` : `svc tests: apt-get succeeded but ${debianPath} is missing`);
  return installed;
}
