/**
 * The file-descriptor limit read at start (runtime/realtime/fd-limit.ts): `/proc/<pid>/limits` is
 * parsed, and a limit below 4,096 is logged once with the connections it allows; 20,000 is not (issue 32 §4).
 */
import { describe, expect, it } from 'vitest';
import { openFilesLimit, parseOpenFilesLimit, reportOpenFilesLimit } from '../../../dist/runtime/realtime/fd-limit.js';
import type { Logger } from '../../../dist/runtime/log.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

function recorder() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  const logger = { warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) } as unknown as Logger;
  return { logger, lines };
}

describe('file-descriptor limit', () => {
  it('parses the soft and hard limits, unlimited included, and nothing from malformed text', () => {
    expect(parseOpenFilesLimit(LIMITS)).toEqual({ soft: 1024, hard: 524288 });
    expect(parseOpenFilesLimit('Max open files            unlimited            unlimited            files')).toEqual({ soft: Infinity, hard: Infinity });
    expect(parseOpenFilesLimit('')).toBeNull();
    expect(parseOpenFilesLimit('Max open files  lots  more files')).toBeNull();
  });

  it('reads this process’s limit on Linux', () => {
    const limit = openFilesLimit();
    expect(limit?.soft).toBeGreaterThan(0);
  });

  it('logs one line with the limit and the connections it allows when it is low, and nothing when it is high', () => {
    const low = recorder();
    reportOpenFilesLimit(low.logger, { soft: 1024, hard: 524_288 });
    expect(low.lines).toHaveLength(1);
    expect(low.lines[0].fields).toEqual({ softLimit: 1024, hardLimit: 524_288, connections: 924 });
    expect(low.lines[0].message).toMatch(/file-descriptor limit 1024 .*924 real-time connections/);
    const high = recorder();
    reportOpenFilesLimit(high.logger, { soft: 20_000, hard: 20_000 });
    reportOpenFilesLimit(high.logger, { soft: 4096, hard: 4096 });
    reportOpenFilesLimit(high.logger, { soft: 1_048_576, hard: 1_048_576 });
    reportOpenFilesLimit(high.logger, null);
    expect(high.lines).toHaveLength(0);
  });
});
