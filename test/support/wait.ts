/**
 * A probe's answer that waiting cannot change (a process it waits on has exited, a status that is
 * neither "not yet" nor the one awaited): `waitFor` rethrows it at once instead of trying again until
 * its deadline.
 */
export class StopWaiting extends Error {}

/**
 * Polls `probe` every 20 ms until it returns a truthy value or `timeoutMs` passes (tests never sleep
 * to wait). A probe that throws is tried again, as one that answered "not yet": what it reads may be
 * changing under it (a file deleted between a listing and its stat, a row mid-write). At the deadline
 * the last error is thrown, or "condition not met" when the probe only answered falsy. A probe that
 * throws `StopWaiting` ends the wait at once with that error.
 */
export async function waitFor<T>(probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let failure: unknown;
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      failure = err;
    }
    if (Date.now() > deadline) {
      if (failure !== undefined) throw failure;
      throw new Error(`condition not met within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
