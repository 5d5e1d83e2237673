/**
 * @module Suites that run beside the other suites of their test file. vitest runs a file's suites
 * one after another unless they are `concurrent`, and a concurrent suite makes its own tests
 * concurrent too; `describeBeside` gives the suite the first and not the second: the suite (its
 * `beforeAll`, tests and `afterAll`) starts together with the file's other `describeBeside` suites,
 * and its tests still run one after another, in order, each seeing what the one before left.
 *
 * For files whose suites spend their time waiting (on the servers and CLI processes they start, on
 * time limits, on caches): the waits of one suite overlap those of another instead of adding up. A
 * suite run this way must share nothing mutable with the others (its own app copy, database, port),
 * which every suite built on `prepareApp` already does. Test names gain one level, `in order`.
 */
import { describe } from 'vitest';

/** Declares suite `name` (a function declaring hooks and tests, as `describe` takes) to run beside its siblings. */
export function describeBeside(name: string, body: () => void): void {
  describe(name, { concurrent: true }, () => {
    describe.sequential('in order', body);
  });
}
