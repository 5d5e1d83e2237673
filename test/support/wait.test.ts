/**
 * `waitFor` (wait.ts), the poll every suite waits with: a truthy answer ends it, a throw is tried
 * again like "not yet" and is what the deadline reports, and `StopWaiting` ends it at once.
 */
import { describe, expect, it } from 'vitest';
import { StopWaiting, waitFor } from './wait.js';

describe('waitFor', () => {
  it('resolves to the first truthy answer, trying again after falsy answers and throws', async () => {
    let n = 0;
    const value = await waitFor(() => {
      n++;
      if (n === 1) throw new Error('ENOENT: the file went away between the listing and the stat');
      return n >= 3 && `answer ${n}`;
    }, 5000);
    expect(value).toBe('answer 3');
  });

  it('at the deadline, throws the last error of a probe that kept throwing, or "condition not met"', async () => {
    let n = 0;
    const err = await waitFor(() => {
      throw new Error(`try ${++n}`);
    }, 100).catch((e: Error) => e);
    expect(n).toBeGreaterThan(1);
    expect(err).toEqual(new Error(`try ${n}`));
    await expect(waitFor(() => false, 100)).rejects.toThrow('condition not met within 100 ms');
  });

  it('ends at once when the probe throws StopWaiting', async () => {
    const started = Date.now();
    let n = 0;
    await expect(
      waitFor(() => {
        n++;
        throw new StopWaiting('the process exited');
      }, 10_000),
    ).rejects.toThrow('the process exited');
    expect(n).toBe(1);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
