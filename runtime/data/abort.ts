/**
 * @module Abort helpers shared by the SQL drivers (driver.ts `TransactionOptions.signal`).
 */

/**
 * Settles like `promise`, or rejects with `signal.reason` as soon as the signal aborts (whichever
 * comes first). A later rejection of `promise` is absorbed, never reported as unhandled.
 */
export function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((ok, fail) => {
    const onAbort = () => fail(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(ok, fail).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
