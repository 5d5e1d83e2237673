/**
 * Pure parts of authentication: which `returnUrl` values the login page follows, and the failure
 * limiter's window (time is passed in, never waited for).
 */
import { describe, expect, test } from 'vitest';
import { safeReturnUrl } from '../../../dist/runtime/auth/login-page.js';
import { FailureLimiter } from '../../../dist/runtime/auth/rate-limit.js';

describe('safeReturnUrl', () => {
  test.each([
    ['a path', { given: '/app', want: '/app' }],
    ['a path with query and fragment', { given: '/a/b?x=1&y=2#top', want: '/a/b?x=1&y=2#top' }],
    ['dot segments stay on the origin', { given: '/a/../../b', want: '/b' }],
    ['encoded dot segments are normalised', { given: '/a/%2e%2e/b', want: '/b' }],
    ['dot segment before a second slash', { given: '/.//evil.example', want: null }],
    ['encoded parent before a second slash', { given: '/%2e%2e//evil.example', want: null }],
    ['encoded dot before a second slash', { given: '/%2e//evil.example', want: null }],
    ['parent segment collapsing to //host', { given: '/x/..//evil.example/path', want: null }],
    ['mixed-case encoded dots', { given: '/%2E%2e//evil.example', want: null }],
    ['scheme-relative', { given: '//evil.example/x', want: null }],
    ['absolute', { given: 'https://evil.example/', want: null }],
    ['scheme without slashes', { given: 'http:evil.example', want: null }],
    ['javascript:', { given: 'javascript:alert(1)', want: null }],
    ['backslash after slash', { given: '/\\evil.example', want: null }],
    ['two backslashes', { given: '\\\\evil.example', want: null }],
    ['tab inside', { given: '/\t/evil.example', want: null }],
    ['newline inside', { given: '/\n/evil.example', want: null }],
    ['leading space', { given: ' /app', want: null }],
    ['relative without slash', { given: 'app', want: null }],
    ['empty', { given: '', want: null }],
    ['not a string', { given: ['/a', '/b'], want: null }],
    ['too long', { given: `/${'a'.repeat(2000)}`, want: null }],
  ])('%s', (_title, { given, want }) => {
    expect(safeReturnUrl(given)).toBe(want);
  });
});

describe('FailureLimiter', () => {
  test('locks a key after maxFailures within the window, until the window ends; others are unaffected', () => {
    const limiter = new FailureLimiter({ maxFailures: 3, windowMs: 60_000 });
    const t0 = 1_000_000;
    for (let i = 0; i < 2; i++) limiter.fail('k', t0 + i);
    expect(limiter.retryAfterSeconds('k', t0 + 2)).toBe(0);
    limiter.fail('k', t0 + 2);
    expect(limiter.retryAfterSeconds('k', t0 + 3)).toBe(60);
    expect(limiter.retryAfterSeconds('k', t0 + 30_000)).toBe(30);
    expect(limiter.retryAfterSeconds('other', t0 + 3)).toBe(0);
    expect(limiter.retryAfterSeconds('k', t0 + 60_000)).toBe(0); // the window has passed
    limiter.fail('k', t0 + 60_001); // a new window starts
    expect(limiter.retryAfterSeconds('k', t0 + 60_002)).toBe(0);
  });

  test('reset forgets the failures of a key', () => {
    const limiter = new FailureLimiter({ maxFailures: 1, windowMs: 1000 });
    limiter.fail('k', 0);
    expect(limiter.retryAfterSeconds('k', 1)).toBe(1);
    limiter.reset('k');
    expect(limiter.retryAfterSeconds('k', 1)).toBe(0);
  });
});
