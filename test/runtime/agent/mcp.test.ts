/**
 * MCP server settings and names (DESIGN §7 `agent.mcpServers`, SPEC §6.3 `mcp-tool-start`): references
 * resolve at start, an entry that cannot be resolved is kept with its problem (so it is listed as
 * `failed`) and logged, tool names fit OpenAI's function-name rule, and `argsPreview` is bounded.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { argsPreview, MCP_TOOL_TIMEOUT_MS, McpServers, resolveMcpServers, toolName } from '../../../dist/runtime/agent/mcp.js';

function capture(): { logger: ReturnType<typeof pino>; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { logger, lines };
}

describe('resolveMcpServers', () => {
  it('resolves ${secrets.X} and ${env.X} in url, headers, command, args and env; stdio servers run in the app folder', () => {
    const { logger, lines } = capture();
    const servers = resolveMcpServers(
      {
        docs: { url: '${env.DOCS_URL}/mcp', headers: { authorization: 'Bearer ${secrets.DOCS}' }, timeoutMs: 500 },
        files: { command: 'node', args: ['mcp/files.mjs', '--root=${env.ROOT_DIR}'], env: { TOKEN: '${secrets.FILES}' } },
      },
      { DOCS_URL: 'http://127.0.0.1:7070', SVC_SECRET_DOCS: 'd0cs', ROOT_DIR: '/srv', SVC_SECRET_FILES: 'f1les' },
      '/apps/shop',
      logger,
    );
    expect(servers).toEqual([
      { name: 'docs', timeoutMs: 500, url: new URL('http://127.0.0.1:7070/mcp'), headers: { authorization: 'Bearer d0cs' } },
      { name: 'files', timeoutMs: MCP_TOOL_TIMEOUT_MS, command: 'node', args: ['mcp/files.mjs', '--root=/srv'], env: { TOKEN: 'f1les' }, cwd: '/apps/shop' },
    ]);
    expect(lines).toEqual([]);
  });

  it('keeps an entry whose reference is unset, or whose url is not http(s), with its problem, and warns without the values', () => {
    const { logger, lines } = capture();
    const servers = resolveMcpServers(
      {
        docs: { url: 'http://127.0.0.1:7070/mcp', headers: { authorization: 'Bearer ${secrets.DOCS}' } },
        odd: { url: 'ftp://files.example/mcp' },
      },
      {},
      '/apps/shop',
      logger,
    );
    expect(servers).toEqual([
      {
        name: 'docs',
        timeoutMs: MCP_TOOL_TIMEOUT_MS,
        problem: expect.stringContaining('agent.mcpServers.docs.headers.authorization refers to ${secrets.DOCS}'),
      },
      { name: 'odd', timeoutMs: MCP_TOOL_TIMEOUT_MS, problem: 'agent.mcpServers.odd.url is not an http(s) URL: "ftp://files.example/mcp"' },
    ]);
    expect(lines.join('')).toContain('the agent cannot use MCP server docs until it is set');
    expect(lines.join('')).toContain('SVC_SECRET_DOCS');
  });

  it('an unresolvable server is failed at once and offers no tools; a call to an unknown tool is an error, not a throw', async () => {
    const statuses: string[] = [];
    const servers = new McpServers([{ name: 'docs', timeoutMs: 100, problem: 'not set' }], capture().logger, { status: (n, s) => statuses.push(`${n}:${s}`) });
    servers.start();
    await servers.settled(1000);
    expect(statuses).toEqual(['docs:failed']);
    expect(servers.list()).toEqual([{ name: 'docs', status: 'failed' }]);
    expect(servers.tools(new Set())).toEqual([]);
    expect(await servers.call('docs__search', {}, new AbortController().signal)).toEqual({
      server: 'mcp',
      tool: 'docs__search',
      output: 'error: no MCP tool docs__search',
      error: 'no MCP tool docs__search',
    });
    await servers.close();
  });
});

describe('toolName and argsPreview', () => {
  it('names a tool <server>__<tool> within [A-Za-z0-9_-]{1,64}', () => {
    expect(toolName('docs', 'search')).toBe('docs__search');
    expect(toolName('my docs', 'search.v2')).toBe('my_docs__search_v2');
    const long = toolName('s'.repeat(40), 't'.repeat(40));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('previews arguments as JSON cut to 200 characters', () => {
    expect(argsPreview({ q: 'dune' })).toBe('{"q":"dune"}');
    expect(argsPreview(undefined)).toBe('{}');
    const cut = argsPreview({ q: 'x'.repeat(500) });
    expect(cut).toHaveLength(200);
    expect(cut.endsWith('…')).toBe(true);
  });
});
