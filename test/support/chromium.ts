/**
 * @module Finds the Chromium the login-page test drives (DESIGN §8: Debian's Chromium through
 * playwright-core), and installs Debian's `chromium` package when it is missing and this process may
 * (root, with apt-get). playwright's own browser download cannot work here (no network but the
 * package registries), so the browser always comes from the system.
 */
import { findOrInstall, type FindProgramOptions } from './debian-package.js';

/** Where Debian's `chromium` package puts the browser. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** Options of `findChromium`: candidates default to env `SVC_TEST_CHROMIUM`, then `/usr/bin/chromium`; `chromium` and `chromium-browser` are searched on `path`. */
export type FindChromiumOptions = FindProgramOptions;

/**
 * Finds Chromium, installing Debian's package when allowed (see `FindProgramOptions`).
 * @returns the browser's path, or undefined when none is found and none could be installed (each
 *   step and why it failed is logged)
 */
export function findChromium(options: FindChromiumOptions = {}): string | undefined {
  return findOrInstall(
    {
      label: 'Chromium',
      debianPackage: 'chromium',
      debianPath: DEBIAN_CHROMIUM,
      names: ['chromium', 'chromium-browser'],
      envOverride: 'SVC_TEST_CHROMIUM',
      withoutIt: 'the login-page test will fail',
    },
    options,
  );
}
