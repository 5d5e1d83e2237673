// A real MCP server over stdio for the agent's MCP tests (issue 14), built with
// @modelcontextprotocol/sdk and started by the agent session as `node mcp/notes.mjs` in the app folder.
// `greet` answers with NOTES_GREETING (from the server's `env` in svc.json), the folder it runs in and
// its pid; `crash` makes the process exit, so the session must notice and start it again.
import { basename } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'notes', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'greet', description: 'Greets someone', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    { name: 'crash', description: 'Stops the server process', inputSchema: { type: 'object', properties: {} } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, (request) => {
  const { name, arguments: args } = request.params;
  if (name === 'crash') {
    process.stderr.write('notes: crashing on request\n');
    process.exit(3);
  }
  const text = `${process.env.NOTES_GREETING ?? '(no greeting)'}, ${String(args?.name)}; folder ${basename(process.cwd())}; pid ${process.pid}`;
  return { content: [{ type: 'text', text }] };
});
await server.connect(new StdioServerTransport());
