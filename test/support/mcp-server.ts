/**
 * A real MCP server on loopback for the agent's MCP tests (issue 14), built with
 * `@modelcontextprotocol/sdk` and served over Streamable HTTP (stateless: one server and transport per
 * request). It demands `authorization: Bearer <token>` (a 401 otherwise) and offers three tools:
 * `lookup` works, `explode` fails (an `isError` result), `stall` never answers (until the client
 * cancels or 60 s pass). `stop()` closes the port and `start()` opens the same port again.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface McpTestServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Tool calls received, in order. */
  calls: { tool: string; args: unknown }[];
  /** Requests refused for a missing or wrong bearer token. */
  refused: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

const TOOLS = [
  {
    name: 'lookup',
    description: 'Looks a book up by ISBN',
    inputSchema: { type: 'object', properties: { isbn: { type: 'string' } }, required: ['isbn'] },
  },
  { name: 'explode', description: 'Always fails', inputSchema: { type: 'object', properties: {} } },
  { name: 'stall', description: 'Never answers', inputSchema: { type: 'object', properties: {} } },
];

function mcpServer(state: McpTestServer): Server {
  const server = new Server({ name: 'test-catalogue', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    state.calls.push({ tool: name, args });
    if (name === 'lookup') return { content: [{ type: 'text', text: `ISBN ${String(args?.isbn)}: Dune by Frank Herbert` }] };
    if (name === 'explode') return { isError: true, content: [{ type: 'text', text: 'the shelf collapsed' }] };
    if (name === 'stall') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 60_000);
        extra.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
      return { content: [{ type: 'text', text: 'too late' }] };
    }
    return { isError: true, content: [{ type: 'text', text: `no tool ${name}` }] };
  });
  return server;
}

/** Starts the server on a free loopback port; `token` is the bearer token it demands. */
export async function startMcpServer(token: string): Promise<McpTestServer> {
  let port = 0;
  let http: HttpServer | undefined;
  const state: McpTestServer = {
    url: '',
    calls: [],
    refused: 0,
    async stop() {
      if (!http) return;
      const closing = http;
      http = undefined;
      closing.closeAllConnections();
      await new Promise<void>((ok) => closing.close(() => ok()));
    },
    async start() {
      http = createServer((req, res) => {
        if (req.headers.authorization !== `Bearer ${token}`) {
          state.refused++;
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
          return;
        }
        if (req.method !== 'POST') {
          res.writeHead(405, { allow: 'POST' }).end();
          return;
        }
        const server = mcpServer(state);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.on('close', () => void transport.close().then(() => server.close()));
        void server.connect(transport).then(() => transport.handleRequest(req, res));
      });
      const listening = http;
      // A restart takes its port again (the app knows the URL). Meanwhile another process's socket may
      // hold it for a moment (a port the system gave an outgoing connection): try again for 5 s, then
      // fail with the error rather than never resolving.
      await waitFor(
        () =>
          new Promise<boolean>((ok, fail) => {
            listening.once('error', fail);
            listening.listen(port, '127.0.0.1', () => {
              listening.off('error', fail);
              ok(true);
            });
          }),
        5000,
      );
      port = (listening.address() as AddressInfo).port;
      state.url = `http://127.0.0.1:${port}/mcp`;
    },
  };
  await state.start();
  return state;
}
