// A stand-in for a real model, so the shop's chat widget works offline: a tiny OpenAI-compatible
// chat-completions server (streamed SSE and plain JSON) that follows a script instead of thinking.
// Asked to show a product, it calls the API tool listProduct, then the widget's UI tool showProduct
// with the first product found, then says what it showed; anything else gets a short explanation.
// Point `agent.providers.global.baseURL` in svc.json (env SHOP_MODEL_URL) at a real provider instead.
import { createServer } from 'node:http';

const HELP =
  "I'm the shop's **demo model**: no real language model is configured. Ask me to *show a product* " +
  'and I will find one with the API and show it beside the chat. For real answers, set `SHOP_MODEL_URL` ' +
  'to an OpenAI-compatible endpoint.';

/** The next step of the script for a conversation: `{ text }` or `{ tool, args }`. */
function nextStep(messages) {
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const call = messages.findLast((m) => m.role === 'assistant' && m.tool_calls)?.tool_calls?.at(-1);
    if (call?.function?.name === 'listProduct') {
      const found = JSON.parse(String(last.content).replace(/^\d{3} /, '') || '{}').data?.[0];
      return found ? { tool: 'showProduct', args: { id: found.id } } : { text: 'I found no product to show.' };
    }
    return { text: /error/.test(String(last.content)) ? 'The page could not show it.' : 'There it is, beside the chat.' };
  }
  const text = typeof last?.content === 'string' ? last.content : '';
  const word = /show (?:me )?(?:an? |the )?(\w+)/i.exec(text)?.[1];
  if (/show|product/i.test(text)) {
    const filter = word && !/^(product|something|one)s?$/i.test(word) ? { filter: `name con~ "${word}"` } : {};
    return { tool: 'listProduct', args: { pageSize: 1, sortBy: 'name', ...filter } };
  }
  return { text: HELP };
}

/** Starts the demo model on `port`; resolves to the server (call `close()` to stop it). */
export function startDemoModel(port = 4020) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) return res.writeHead(404).end();
      const request = JSON.parse(body);
      const step = request.stream ? nextStep(request.messages) : { text: 'A short conversation with the shop demo model.' };
      const usage = { prompt_tokens: Math.ceil(body.length / 4), completion_tokens: 20, total_tokens: Math.ceil(body.length / 4) + 20 };
      const base = { id: `demo-${Date.now()}`, created: Math.floor(Date.now() / 1000), model: request.model };
      const toolCall = step.tool && {
        index: 0,
        id: `call-${Date.now()}`,
        type: 'function',
        function: { name: step.tool, arguments: JSON.stringify(step.args) },
      };
      if (!request.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({
            ...base,
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: step.text }, finish_reason: 'stop' }],
            usage,
          }),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const parts = step.text ? step.text.split(/(?<= )/) : [];
      let i = 0;
      const tick = setInterval(() => {
        if (i < parts.length) return res.write(chunk({ content: parts[i++] }));
        clearInterval(tick);
        if (toolCall) res.write(chunk({ tool_calls: [toolCall] }));
        res.write(chunk({}, toolCall ? 'tool_calls' : 'stop'));
        res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
        res.end('data: [DONE]\n\n');
      }, 30);
      res.on('close', () => clearInterval(tick));
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
