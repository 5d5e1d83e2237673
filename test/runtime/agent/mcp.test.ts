/**
 * MCP server settings, names and liveness (DESIGN §7 `agent.mcpServers`, SPEC §6.3 `mcp-status`,
 * `mcp-tool-start`): references resolve at start, an entry that cannot be resolved is kept with its
 * problem (so it is listed as `failed`) and logged, tool names fit OpenAI's function-name rule,
 * `argsPreview` is bounded, and the ping notices a server that goes away and comes back without any
 * call (against the real SDK server of test/support/mcp-server.ts).
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { argsPreview, MCP_TOOL_TIMEOUT_MS, McpServers, resolveMcpServers, toolName } from '../../../dist/runtime/agent/mcp.js';
import { startMcpServer, type McpTestServer } from '../../support/mcp-server.js';
import { waitFor } from '../../support/wait.js';

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
        files: { command: 'node', args: ['mcp/files.mjs', '--key=${secrets.FILES}'] },
      },
      {},
      '/apps/shop',
      logger,
    );
    expect(servers).toEqual([
      {
        name: 'docs',
        timeoutMs: MCP_TOOL_TIMEOUT_MS,
        transport: 'http',
        problem: expect.stringContaining('agent.mcpServers.docs.headers.authorization refers to ${secrets.DOCS}'),
      },
      { name: 'odd', timeoutMs: MCP_TOOL_TIMEOUT_MS, transport: 'http', problem: 'agent.mcpServers.odd.url is not an http(s) URL: "ftp://files.example/mcp"' },
      { name: 'files', timeoutMs: MCP_TOOL_TIMEOUT_MS, transport: 'stdio', problem: expect.stringContaining('agent.mcpServers.files.args[1]') },
    ]);
    expect(lines.join('')).toContain('the agent cannot use MCP server docs until it is set');
    expect(lines.join('')).toContain('SVC_SECRET_DOCS');
  });

  it('an unresolvable server is failed at once and offers no tools; a call to an unknown tool is an error, not a throw', async () => {
    const statuses: string[] = [];
    const servers = new McpServers([{ name: 'docs', timeoutMs: 100, transport: 'http', problem: 'not set' }], capture().logger, {
      status: (n, s) => statuses.push(`${n}:${s}`),
    });
    servers.start();
    await servers.settled(1000);
    expect(statuses).toEqual(['docs:failed']);
    expect(servers.list()).toEqual([{ name: 'docs', status: 'failed' }]);
    expect(servers.tools(new Set())).toEqual([]);
    expect(await call(servers, 'docs__search', {})).toEqual({
      server: 'mcp',
      tool: 'docs__search',
      output: 'error: no MCP tool docs__search',
      error: 'no MCP tool docs__search',
    });
    await servers.close();
  });
});

/** A real SDK server demanding `t0ken`, and one `catalogue` server of McpServers connecting with `bearer`; both closed after `body`. */
async function withCatalogue(
  opts: { bearer: string; pingMs: number; timeoutMs?: number },
  body: (server: McpTestServer, servers: McpServers, statuses: string[]) => Promise<void>,
): Promise<void> {
  const server = await startMcpServer('t0ken');
  const statuses: string[] = [];
  const config = { name: 'catalogue', timeoutMs: opts.timeoutMs ?? 1000, url: new URL(server.url), headers: { authorization: `Bearer ${opts.bearer}` } };
  const servers = new McpServers([config], capture().logger, { status: (_n, s) => statuses.push(s) }, opts.pingMs);
  try {
    servers.start();
    await servers.settled(5000);
    await body(server, servers, statuses);
  } finally {
    await servers.close();
    await server.stop();
  }
}

const call = (servers: McpServers, name: string, args: unknown) => servers.call(name, args, new AbortController().signal);

describe('McpServers liveness', () => {
  it('the ping reports a server that goes away (reconnecting, then failed) and the retries find it again, with no call made', () =>
    withCatalogue({ bearer: 't0ken', pingMs: 100 }, async (server, servers, statuses) => {
      expect(servers.list()).toEqual([{ name: 'catalogue', status: 'connected' }]);
      // A name already taken by an API or UI tool is left out.
      expect(servers.tools(new Set(['catalogue__stall'])).map((t) => t.name)).toEqual(['catalogue__lookup', 'catalogue__explode']);
      await server.stop();
      await waitFor(() => statuses.includes('failed'), 5000);
      expect(servers.tools(new Set())).toEqual([]);
      await server.start();
      await waitFor(() => statuses.at(-1) === 'connected', 10_000);
      expect(statuses).toEqual(['connected', 'reconnecting', 'failed', 'connected']);
      expect(server.calls).toEqual([]);
    }));

  it('a call to a server that went away fails fast with an error (never a throw), and the server goes reconnecting', () =>
    withCatalogue({ bearer: 't0ken', pingMs: 60_000, timeoutMs: 5000 }, async (server, servers, statuses) => {
      expect(await call(servers, 'catalogue__lookup', { isbn: '1' })).toEqual({ server: 'catalogue', tool: 'lookup', output: 'ISBN 1: Dune by Frank Herbert' });
      await server.stop();
      expect(await call(servers, 'catalogue__lookup', { isbn: '2' })).toEqual({
        server: 'catalogue',
        tool: 'lookup',
        output: 'error: the MCP server catalogue could not be reached',
        error: 'the MCP server catalogue could not be reached',
      });
      await waitFor(() => statuses.includes('failed'), 5000);
      expect(statuses).toEqual(['connected', 'reconnecting', 'failed']);
      expect((await call(servers, 'catalogue__lookup', {})).error).toBe('the MCP server catalogue is not connected (failed)');
    }));

  it('a wrong bearer token fails the connection (401) and it is retried, not crashed', () =>
    withCatalogue({ bearer: 'wrong', pingMs: 100 }, async (server, _servers, statuses) => {
      expect(statuses).toEqual(['failed']);
      await waitFor(() => server.refused >= 2, 5000);
      expect(statuses).toEqual(['failed']);
    }));
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
