/**
 * The approval rules of agent tool calls (runtime/agent/approvals.ts; issue 34 §1, docs/agent.md
 * "Approvals"): which calls ask under each default, exact names over globs and the longest glob
 * first, the one-line summaries of the shop's operations, and the waits that take one answer, from
 * the session's identity, once.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApprovalWaits, approvalSummary, declinedOutput, globMatches, needsApproval } from '../../../dist/runtime/agent/approvals.js';
import type { AgentToolsFile } from '../../../dist/runtime/index.js';

const FILE = JSON.parse(readFileSync(join(import.meta.dirname, '../../golden/shop/agent-tools.json'), 'utf8')) as AgentToolsFile;
const api = (name: string) => ({ key: name, kind: 'api' as const, api: FILE.all.find((t) => t.name === name)! });
const mcp = { key: 'mcp:files/remove', kind: 'mcp' as const };

describe('needsApproval', () => {
  it('auto asks nothing, ask asks everything, ask-writes asks writes and MCP tools', () => {
    for (const subject of [api('listOrder'), api('deleteOrder'), mcp]) expect(needsApproval(undefined, subject)).toBe(false);
    for (const subject of [api('listOrder'), api('deleteOrder'), mcp]) expect(needsApproval({ default: 'ask' }, subject)).toBe(true);
    const writes = { default: 'ask-writes' as const };
    expect(needsApproval(writes, api('listOrder'))).toBe(false);
    expect(needsApproval(writes, api('getOrder'))).toBe(false);
    expect(['createOrder', 'updateOrder', 'deleteOrder'].map((n) => needsApproval(writes, api(n)))).toEqual([true, true, true]);
    expect(needsApproval(writes, mcp)).toBe(true);
  });

  it('tools overrides: an exact name over a glob, the longest glob first', () => {
    const settings = {
      default: 'ask-writes' as const,
      tools: {
        '*Order': 'auto' as const,
        'delete*Order': 'ask' as const,
        deleteManyOrder: 'auto' as const,
        'mcp:files/*': 'auto' as const,
        listOrder: 'ask' as const,
      },
    };
    expect(needsApproval(settings, api('createOrder'))).toBe(false);
    expect(needsApproval(settings, api('deleteOrder'))).toBe(true);
    expect(needsApproval(settings, api('deleteManyOrder'))).toBe(false);
    expect(needsApproval(settings, api('listOrder'))).toBe(true);
    expect(needsApproval(settings, mcp)).toBe(false);
    expect(globMatches('mcp:?iles/*', 'mcp:files/x')).toBe(true);
    expect(globMatches('a.b', 'axb')).toBe(false);
  });
});

describe('approvalSummary', () => {
  it('reads as a sentence: verb, collection, id or first fields', () => {
    expect(approvalSummary(api('deleteOrder'), { id: '10023' })).toBe('Delete order #10023');
    expect(approvalSummary(api('createOrder'), { body: { customer: 7, total: 12.5 } })).toBe('Create order (customer: 7, total: 12.5)');
    expect(approvalSummary(mcp, { path: '/x' })).toBe('Call files/remove');
    expect(approvalSummary(api('createOrder'), { body: { note: 'x'.repeat(500) } }).length).toBeLessThanOrEqual(160);
  });
});

describe('ApprovalWaits', () => {
  it('takes one answer from the identity it asked; replays, strangers, unknown ids and bad bodies are refused', async () => {
    const waits = new ApprovalWaits(5000);
    let asked = 0;
    const answer = waits.wait('r1', 'ada', () => asked++);
    expect(asked).toBe(1);
    expect(waits.answer({ reqId: 'r1', approved: true }, 'bob')).toMatch(/another identity/);
    expect(waits.answer({ reqId: 'r2', approved: true }, 'ada')).toMatch(/no approval request r2/);
    expect(waits.answer({ reqId: 'r1', approved: 'yes' }, 'ada')).toMatch(/approved must be/);
    expect(waits.answer({ reqId: 'r1', approved: false, note: 'not now' }, 'ada')).toBeNull();
    expect(waits.answer({ reqId: 'r1', approved: true }, 'ada')).toMatch(/already answered/);
    const got = await answer;
    expect(got).toEqual({ approved: false, reason: 'denied', note: 'not now' });
    expect(declinedOutput(got as any)).toBe("the user declined; nothing was done. The user's note: not now");
  });

  it('declines after the timeout or when the turn ends', async () => {
    const waits = new ApprovalWaits(50);
    expect(await waits.wait('t1', 'ada', () => {})).toEqual({ approved: false, reason: 'timeout' });
    const ended = new AbortController();
    const pending = waits.wait('t2', 'ada', () => ended.abort());
    expect(await pending).toEqual({ approved: false, reason: 'timeout' });
  });
});
