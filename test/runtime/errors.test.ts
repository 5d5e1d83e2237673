/**
 * Registry parity (STYLE §4, Fastify's errors test): every error code the runtime can answer is
 * documented in README.md with its status, and the README documents no code the runtime lacks.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_STATUS, HttpError, toErrorBody } from '../../dist/runtime/errors.js';
import { ROOT } from '../support/cli.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const documented = new Map([...readme.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]));

describe('error codes', () => {
  it.each(Object.entries(ERROR_STATUS))('%s is documented with status %i', (code, status) => {
    expect(documented.get(code)).toBe(status);
  });

  it('documents no code the runtime does not have', () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });

  it('writes the DESIGN §4 body, and hides everything about non-HttpErrors', () => {
    const e = new HttpError('VALIDATION_FAILED', 'title is required', {
      details: [{ path: '/title', message: 'title is required' }],
      cause: new Error('secret'),
    });
    expect(toErrorBody(e)).toEqual({
      status: 400,
      body: { error: 'title is required', code: 'VALIDATION_FAILED', details: [{ path: '/title', message: 'title is required' }] },
    });
    const hidden = toErrorBody(new Error('password=hunter2 at db.ts:12'));
    expect(hidden).toEqual({ status: 500, body: { error: 'Internal server error', code: 'INTERNAL' } });
  });
});
