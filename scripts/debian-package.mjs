/**
 * @module Finds a program from the system (Chromium, HAProxy), and installs its Debian package when it
 * is missing and this process may (root, with apt-get): the one way the tests (test/support/chromium.ts,
 * test/support/haproxy.ts, through test/support/debian-package.ts) and the benchmarks
 * (bench/load-balancer.mjs) find theirs.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * @typedef {object} FindProgramOptions
 * @property {string[]} [candidates] Paths tried first, in order. Default: the program's env override (when set), then its Debian path.
 * @property {string} [path] Searched for the program's names after the candidates. Default: env `PATH`.
 * @property {boolean} [install] Install the Debian package when nothing is found. Default: when running as
 *   root and `apt-get` is on `path`. Runs `apt-get install -y <package>`, then `apt-get update` and the
 *   install again when the first try fails.
 * @property {string} [aptGet] The apt-get to run. Default: `apt-get` found on `path`.
 * @property {(line: string) => void} [log] Where each step is reported (one line each). Default: stdout.
 */

/**
 * @typedef {object} DebianProgram
 * @property {string} label As the log lines name it: "Chromium".
 * @property {string} debianPackage The Debian package: "chromium".
 * @property {string} debianPath Where the package puts the program.
 * @property {string[]} names Names searched on `path`, in order.
 * @property {string} envOverride The env variable naming a path tried first.
 * @property {string} withoutIt The log line's end when installing fails: "the login-page test will fail".
 * @property {string} [who] The log lines' prefix. Default: "svc tests".
 */

/** @param {string} file */
const isExecutable = (file) => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/**
 * The first executable named `name` in the folders of `path`, or undefined.
 * @param {string} name
 * @param {string} path
 * @returns {string | undefined}
 */
function onPath(name, path) {
  return path
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(isExecutable);
}

/**
 * Finds `program`, installing its Debian package when allowed (see `FindProgramOptions`).
 * @param {DebianProgram} program
 * @param {FindProgramOptions} [options]
 * @returns {string | undefined} the program's path, or undefined when none is found and none could be
 *   installed (each step and why it failed is logged, with what to install)
 */
export function findOrInstall(program, options = {}) {
  const { label, debianPackage, debianPath, who = 'svc tests' } = program;
  const path = options.path ?? process.env.PATH ?? '';
  const override = process.env[program.envOverride];
  const candidates = options.candidates ?? [...(override ? [override] : []), debianPath];
  const log = options.log ?? ((line) => process.stdout.write(`${line}\n`));
  /** @param {string[]} paths */
  const lookup = (paths) => paths.find(isExecutable) ?? program.names.map((n) => onPath(n, path)).find(Boolean);
  const found = lookup(candidates);
  if (found) return found;
  const aptGet = options.aptGet ?? onPath('apt-get', path);
  const install = options.install ?? (process.getuid?.() === 0 && aptGet !== undefined);
  if (!install || !aptGet) {
    log(`${who}: no ${label} found (tried ${candidates.join(', ')} and PATH); install Debian's package: apt-get install -y ${debianPackage}`);
    return undefined;
  }
  /** @param {string[]} args */
  const apt = (...args) => {
    log(`${who}: ${label} is missing; running ${aptGet} ${args.join(' ')}`);
    // Waits up to 5 minutes for another apt/dpkg run to release its lock.
    const r = spawnSync(aptGet, ['-o', 'DPkg::Lock::Timeout=300', ...args], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return r.status === 0;
  };
  if (!apt('install', '-y', debianPackage) && (!apt('update') || !apt('install', '-y', debianPackage))) {
    log(`${who}: installing ${label} failed; ${program.withoutIt}`);
    return undefined;
  }
  const installed = lookup([debianPath]);
  log(installed ? `${who}: ${label} installed at ${installed}` : `${who}: apt-get succeeded but ${debianPath} is missing`);
  return installed;
}
