/**
 * @module How `svc serve` and `svc dev` end (DESIGN §3a): SIGTERM or SIGINT closes the server (in-flight
 * requests finish) and exits 0, or 1 when closing fails. Started through `npx` (npm exec), whose kill is
 * not passed on, the process also stops when npm is gone (`npx svc serve & … kill $!`).
 */

/**
 * Wires the signals and the npm-exec parent watch to `close`, then `process.exit`.
 * @param close - closes the server (and whatever else the command runs); its rejection exits 1
 */
export function exitOnStop(close: () => Promise<unknown>): void {
  const stop = () => {
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  if (process.env.npm_command === 'exec') {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) stop();
    }, 500).unref();
  }
}
