/**
 * A scripted OpenAI-compatible chat-completions server on loopback (the test double for an LLM
 * provider, issue 13): each request takes the next step of the script (or the `fallback`), answers it
 * streamed as SSE chunks (`stream: true`) or as one JSON completion, and is recorded with its body and
 * headers so tests can read what the model was sent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted model answer. */
export interface ModelStep {
  /** Text deltas, in order. */
  text?: string[];
  /** Reasoning deltas (`reasoning_content`), sent before the text. */
  reasoning?: string[];
  /** Tool calls the model makes (then `finish_reason: tool_calls`). */
  toolCalls?: { name: string; args: unknown }[];
  /** Token usage reported at the end. */
  usage?: { prompt: number; completion: number; cached?: number };
  /** Answer this HTTP status with an error body instead. */
  status?: number;
  /** Wait this long before each chunk, ms. */
  delayMs?: number;
  /** Never finish the stream (until the client goes away). */
  hang?: boolean;
  /** Hold the end of the stream (after the text, before any tool call) until this settles. */
  gate?: Promise<unknown>;
}

/** One request the server received. */
export interface ModelRequest {
  body: {
    model: string;
    messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: { function: { name: string; description?: string; parameters: unknown } }[];
    stream?: boolean;
    reasoning_effort?: string;
  };
  headers: Record<string, string | string[] | undefined>;
  /** The length of the request body as received, in characters (what the agent's usage estimate reads). */
  bodyChars: number;
}

export interface ModelServer {
  /** Base URL for `agent.providers.*.baseURL` (`http://127.0.0.1:<port>/v1`). */
  url: string;
  requests: ModelRequest[];
  /** Appends steps to the script. */
  script(...steps: ModelStep[]): void;
  /** What to answer once the script is used up (default: the text "ok"). */
  fallback: ModelStep;
  close(): Promise<void>;
}

export async function startModelServer(): Promise<ModelServer> {
  const queue: ModelStep[] = [];
  const requests: ModelRequest[] = [];
  let seq = 0;
  const state = { fallback: { text: ['ok'], usage: { prompt: 10, completion: 2 } } as ModelStep };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const body = JSON.parse(text) as ModelRequest['body'];
        requests.push({ body, headers: req.headers, bodyChars: text.length });
        const step = queue.shift() ?? state.fallback;
        if (step.status) {
          res.writeHead(step.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `scripted failure ${step.status}`, type: 'server_error' } }));
          return;
        }
        const id = `chatcmpl-${++seq}`;
        const usage = step.usage && {
          prompt_tokens: step.usage.prompt,
          completion_tokens: step.usage.completion,
          total_tokens: step.usage.prompt + step.usage.completion,
          ...(step.usage.cached !== undefined && { prompt_tokens_details: { cached_tokens: step.usage.cached } }),
        };
        const toolCalls = (step.toolCalls ?? []).map((t, i) => ({
          index: i,
          id: `call_${seq}_${i}`,
          type: 'function',
          function: { name: t.name, arguments: JSON.stringify(t.args) },
        }));
        const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
        if (!body.stream) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id,
              object: 'chat.completion',
              created: Math.floor(Date.now() / 1000),
              model: body.model,
              choices: [
                {
                  index: 0,
                  message: { role: 'assistant', content: (step.text ?? []).join(''), ...(toolCalls.length > 0 && { tool_calls: toolCalls }) },
                  finish_reason: finish,
                },
              ],
              ...(usage && { usage }),
            }),
          );
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const send = async (delta: unknown, finishReason: string | null = null, extra: object = {}) => {
          if (step.delayMs) await new Promise((r) => setTimeout(r, step.delayMs));
          if (res.destroyed) return;
          res.write(
            `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
          );
        };
        await send({ role: 'assistant', content: '' });
        for (const r of step.reasoning ?? []) await send({ reasoning_content: r });
        for (const t of step.text ?? []) await send({ content: t });
        if (step.hang) {
          await new Promise<void>((resolve) => res.once('close', () => resolve()));
          return;
        }
        await step.gate;
        for (const call of toolCalls) await send({ tool_calls: [call] });
        await send({}, finish);
        if (usage && !res.destroyed)
          res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: body.model, choices: [], usage })}\n\n`);
        if (!res.destroyed) res.end('data: [DONE]\n\n');
      })().catch((err: unknown) => {
        res.destroy(err as Error);
      });
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...steps) => queue.push(...steps),
    get fallback() {
      return state.fallback;
    },
    set fallback(step: ModelStep) {
      state.fallback = step;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
