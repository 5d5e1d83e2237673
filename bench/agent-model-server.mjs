#!/usr/bin/env node
/**
 * The scripted model of bench/agent-sessions.mjs, in its own process: an OpenAI-compatible
 * chat-completions server on loopback that waits a fixed `DELAY_MS` (the model's own time), then
 * streams a short answer as SSE chunks with its usage. Prints `listening at <base URL>`.
 */
import { createServer } from 'node:http';

const DELAY_MS = Number(process.env.DELAY_MS ?? 200);
let seq = 0;

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const id = `chatcmpl-${++seq}`;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (delta, finish = null, extra = {}) =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'bench-1', choices: delta ? [{ index: 0, delta, finish_reason: finish }] : [], ...extra })}\n\n`;
      res.end(
        chunk({ role: 'assistant', content: '' }) +
          chunk({ content: 'Hello ' }) +
          chunk({ content: 'from the bench.' }) +
          chunk({}, 'stop') +
          chunk(null, null, { usage: { prompt_tokens: 40, completion_tokens: 5, total_tokens: 45 } }) +
          'data: [DONE]\n\n',
      );
    }, DELAY_MS);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening at http://127.0.0.1:${server.address().port}/v1\n`));
