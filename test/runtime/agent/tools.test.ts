/**
 * The tools of a session (runtime/agent/tools.ts; SPEC §2 uiTools entry, §4.11 apiTools; DESIGN §7):
 * which tools each apiTools mode offers, both forms of a uiTools entry's params, and how API tool
 * arguments become an HTTP-shaped call — or a 400 naming the argument, before anything is called.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sessionTools, ToolCaller, toolOutput, uiToolParameters, MAX_TOOL_OUTPUT_CHARS } from '../../../dist/runtime/agent/tools.js';
import { HttpError, type AgentToolsFile } from '../../../dist/runtime/index.js';

const FILE = JSON.parse(readFileSync(join(import.meta.dirname, '../../golden/shop/agent-tools.json'), 'utf8')) as AgentToolsFile;
const names = (specs: { name: string }[]) => specs.map((s) => s.name);

describe('sessionTools', () => {
  it('all, explicit, dynamic and none, each with the uiTools and update_plan', () => {
    const ui = { show: { description: 'Shows it', params: { id: { type: 'string' } }, required: ['id'] } };
    expect(names(sessionTools(FILE, 'all', undefined, ui))).toEqual([...FILE.all.map((t) => t.name), 'show', 'update_plan']);
    expect(names(sessionTools(FILE, 'explicit', ['GET-Product', 'POST-Order'], ui))).toEqual([
      'listProduct',
      'getProduct',
      'createOrder',
      'show',
      'update_plan',
    ]);
    expect(names(sessionTools(FILE, 'dynamic', undefined, undefined))).toEqual([
      'list-api-endpoints',
      'get-api-endpoint-schema',
      'invoke-api-endpoint',
      'update_plan',
    ]);
    expect(names(sessionTools(FILE, 'none', undefined, ui))).toEqual(['show', 'update_plan']);
  });

  it('refuses an apiToolsAllow entry that names nothing and a uiTools entry without a description', () => {
    expect(() => sessionTools(FILE, 'explicit', ['GET-Nothing'], undefined)).toThrow(/GET-Nothing/);
    expect(() => sessionTools(FILE, 'none', undefined, { bad: {} as never })).toThrow(/uiTools.bad.description/);
  });

  it('takes params as a map (with required) or as a full JSON Schema object', () => {
    expect(uiToolParameters({ description: 'x', params: { id: { type: 'string', description: 'Id' } }, required: ['id'] })).toEqual({
      type: 'object',
      properties: { id: { type: 'string', description: 'Id' } },
      required: ['id'],
    });
    const full = { type: 'object' as const, properties: { n: { type: 'integer' } }, required: ['n'] };
    expect(uiToolParameters({ description: 'x', params: full })).toBe(full);
    expect(uiToolParameters({ description: 'x' })).toEqual({ type: 'object', properties: {} });
  });
});

describe('ToolCaller.callOf', () => {
  const caller = new ToolCaller(FILE);

  it('puts path, query and body arguments where they go', () => {
    const get = caller.callOf(caller.find('getProduct')!, { id: '0190a0b0-0000-7000-8000-000000000001', select: 'name' });
    expect(get).toMatchObject({ method: 'GET', path: '/Product/0190a0b0-0000-7000-8000-000000000001', query: { select: 'name' } });
    const list = caller.callOf(caller.find('listProduct')!, { pageSize: 5, filter: 'price gt 3' });
    expect(list.query).toEqual({ pageSize: '5', filter: 'price gt 3' });
    const fn = caller.callOf(caller.find('call_placeOrder_post')!, { customer: '0190a0b0-0000-7000-8000-000000000001', sku: 'A', quantity: 2 });
    expect(fn).toMatchObject({
      method: 'POST',
      path: '/_invoke/placeOrder',
      body: { customer: '0190a0b0-0000-7000-8000-000000000001', sku: 'A', quantity: 2 },
    });
  });

  it('refuses an undeclared or wrong-typed argument with a 400 naming it', () => {
    const undeclared = (() => {
      try {
        caller.callOf(caller.find('listProduct')!, { pageSize: 5, drop: 'table' });
      } catch (err) {
        return err;
      }
    })() as HttpError;
    expect(undeclared).toBeInstanceOf(HttpError);
    expect(undeclared.status).toBe(400);
    expect(undeclared.message).toContain('undeclared argument "drop"');
    expect(() => caller.callOf(caller.find('listProduct')!, { pageSize: 'ten' })).toThrow(/pageSize/);
  });
});

describe('toolOutput', () => {
  it('prefixes errors with their status and cuts long answers', () => {
    expect(toolOutput(200, { data: [] })).toBe('{"data":[]}');
    expect(toolOutput(403, { error: 'no', code: 'FORBIDDEN' })).toBe('403 {"error":"no","code":"FORBIDDEN"}');
    const long = toolOutput(200, 'x'.repeat(MAX_TOOL_OUTPUT_CHARS + 10));
    expect(long.length).toBeLessThan(MAX_TOOL_OUTPUT_CHARS + 100);
    expect(long).toContain('cut at');
  });
});
