/**
 * The agent's system message (runtime/agent/describe.ts; DESIGN §7): each query is listed with its
 * fields and what each reads, child aggregates included, so the model can filter and sort by them.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeApp } from '../../../dist/runtime/agent/describe.js';
import type { AppManifest } from '../../../dist/runtime/index.js';

const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../../golden/shop/manifest.json'), 'utf8')) as AppManifest;
const caller = { kind: 'user', id: '01a1fbe0-00ac-732c-9388-3010e0010ced', username: 'demo', roles: [], admin: false } as const;

describe('describeApp', () => {
  it('lists every query with its fields, a child aggregate with its child collection, via and filter', () => {
    const lines = describeApp(manifest, undefined, caller).split('\n');
    expect(lines).toContain(
      '- query CustomerOrders (from Customer): id, name (string, name), country (string, country), orders (integer, count of Order.id via customer), paidOrders (integer, count of Order.id via customer where paid eq true), revenue (decimal, sum of Order.total via customer where paid eq true), lastOrder (date-time, max of Order.placedAt via customer)',
    );
    expect(lines).toContain(
      '- query CustomerRevenue (from Order): id, customerName (string, customer.name), country (string, customer.country), orders (integer, count of id), revenue (decimal, sum of total), averageOrder (decimal, avg of total), lastOrder (date-time, max of placedAt)',
    );
    expect(lines.filter((l) => l.startsWith('- query '))).toHaveLength(manifest.queries.length);
  });
});
