/**
 * `agent-tools.json` of the `typed` fixture (SPEC §4.11): one tool per backend operation with only the
 * parameters the OpenAPI document declares (a GET function: the auto parameters plus declared ones;
 * POST: the declared body fields), the three dynamic meta-tools, the `<METHOD>-<name>` lookup, and
 * tool names valid for OpenAI-style function calling even for a 64-character function name.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { buildFiles } from '../../../dist/generator/build-files.js';
import { loadAndValidate } from '../../../dist/generator/validate/index.js';
import { toolName, type AgentToolsFile } from '../../../dist/generator/emit/agent-tools.js';
import { ROOT } from '../../support/cli.js';

const LONG = 'reindex_every_note_in_the_archive_and_report_progress_to_the_use';
const AUTO = ['filter', 'select', 'sortBy', 'pageNo', 'pageSize', 'count', 'include', 'lastKey'];
const { manifest } = await loadAndValidate(join(ROOT, 'test/fixtures/apps/typed'), {});
const files = buildFiles(manifest);
const tools = JSON.parse(files['agent-tools.json']) as AgentToolsFile;
const tool = (name: string) => {
  const t = tools.all.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
};
const argNames = (name: string) => Object.keys(tool(name).parameters.properties as object);

describe('agent tools', () => {
  it('has valid, unique names for every tool, also for a 64-character function name', () => {
    const names = [...tools.all, ...tools.dynamic].map((t) => t.name);
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(new Set(names).size).toBe(names.length);
    const long = tools.explicit[`DELETE-${LONG}`];
    expect(long).toHaveLength(1);
    expect(long[0]).toMatch(/^call_reindex_every_note_in_the_archive_and_report_progr_[0-9a-f]{8}$/);
    expect(toolName(`call_${LONG}_delete`)).toBe(long[0]);
    expect(toolName('listNote')).toBe('listNote');
  });

  it('gives a GET function only the auto parameters and its declared ones', () => {
    expect(argNames('call_ping_get')).toEqual(AUTO);
    expect(argNames('call_stats_get')).toEqual(['limit', 'from', ...AUTO]);
    expect(tool('call_stats_get').argumentLocations.limit).toBe('query');
    expect(argNames('call_stats_delete')).toEqual(['limit', 'from']);
  });

  it('takes POST arguments from the declared request body, and refuses undeclared ones', () => {
    const greet = tool('call_greet_post');
    expect(greet).toMatchObject({ method: 'POST', path: '/greet' });
    expect(argNames('call_greet_post')).toEqual(['lang', 'name', 'shout']);
    expect(greet.parameters).toMatchObject({ required: ['name'], additionalProperties: false });
    expect(greet.argumentLocations).toEqual({ lang: 'query', name: 'body-field', shout: 'body-field' });
    expect(argNames('call_sum_post')).toEqual(['values']);
    expect(tool('call_opaque_post').parameters.properties).toEqual({ body: { type: 'object' } });
    expect(tool('call_opaque_post').argumentLocations).toEqual({ body: 'body' });
  });

  it('describes collection operations with path ids and inlined schemas', () => {
    const replace = tool('replaceNote');
    expect(replace.argumentLocations.id).toBe('path');
    expect(replace.parameters.required).toEqual(['id', 'title']);
    expect(JSON.stringify(tools)).not.toContain('$ref');
    expect(tool('createNote').argumentLocations).toEqual({ body: 'body' });
  });

  it('leaves out second addresses, sign-in and document endpoints, keeps _me', () => {
    const names = tools.all.map((t) => t.name);
    expect(names.some((n) => n.startsWith('invoke_'))).toBe(false);
    for (const n of ['svc_auth', 'svc_token', 'svc_refresh', 'svc_logout', 'svc_openapi', 'svc_log', 'svc_webAppConfig']) expect(names).not.toContain(n);
    expect(names).toContain('svc_me');
    expect(names).not.toContain('call_archived_get');
  });

  it('has the three dynamic meta-tools and the <METHOD>-<name> lookup', () => {
    expect(tools.dynamic.map((t) => t.name)).toEqual(['list-api-endpoints', 'get-api-endpoint-schema', 'invoke-api-endpoint']);
    expect(tools.explicit['GET-Note']).toEqual(['listNote', 'getNote']);
    expect(tools.explicit['DELETE-Note']).toEqual(['deleteManyNote', 'deleteNote']);
    expect(tools.explicit['POST-greet']).toEqual(['call_greet_post']);
    expect(tools.explicit['GET-_me']).toEqual(['svc_me']);
    for (const names of Object.values(tools.explicit)) for (const n of names) expect(tools.all.map((t) => t.name)).toContain(n);
  });
});
