/**
 * @module The types of `findOrInstall` for the tests' TypeScript (test/support/chromium.ts,
 * test/support/haproxy.ts). The implementation is scripts/debian-package.mjs, shared with the benchmarks
 * (bench/load-balancer.mjs finds HAProxy with it).
 */
import { findOrInstall as find } from '../../scripts/debian-package.mjs';

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
  /** The log lines' prefix. Default: "svc tests". */
  who?: string;
}

/**
 * Finds `program`, installing its Debian package when allowed (see `FindProgramOptions`).
 * @returns the program's path, or undefined when none is found and none could be installed (each step
 *   and why it failed is logged, with what to install)
 */
export const findOrInstall: (program: DebianProgram, options?: FindProgramOptions) => string | undefined = find;
