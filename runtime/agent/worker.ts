/**
 * @module An agent worker thread of the pool (worker-pool.ts; DESIGN §7). It runs the turns of many
 * sessions at once, each by its `turnId`: a streamed
 * chat-completions request through the AI SDK (`streamText` over `@ai-sdk/openai-compatible`), up to
 * `maxSteps` model calls with tools between them, relaying text and reasoning deltas as SPEC §6.3
 * events. Tools that touch the app, the client or an MCP server are sent to the main thread and
 * awaited; the built-in `update_plan` runs here. A failed provider call is retried twice (after an
 * `error` event with `willRetry: true`); `cancel` aborts the turn. A failure inside one turn fails
 * only that turn; a crash of the whole thread fails the turns it was running (the pool replaces it).
 */
import { parentPort } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import { jsonSchema, stepCountIs, streamText, tool, type ModelMessage, type ToolSet } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { EngineEvent, FromSessionWorker, ToolSpec, ToSessionWorker, TurnRequest, TurnUsage } from './worker-protocol.js';

const port = parentPort!;
const post = (m: FromSessionWorker): void => port.postMessage(m);

/** Characters per token of the estimate charged for a model call that was cut off (docs/agent.md "Credits"). */
export const CHARS_PER_TOKEN = 4;

/** Provider calls retried after a network failure, 429 or 5xx (each announced with `willRetry`). */
const RETRIES = 2;
const RETRY_DELAY_MS = 250;

const waiting = new Map<string, (r: { ok: boolean; output: string }) => void>();
const turns = new Map<string, AbortController>();

port.on('message', (m: ToSessionWorker) => {
  if (m.type === 'turn') void runTurn(m.turnId, m.request);
  else if (m.type === 'cancel') turns.get(m.turnId)?.abort(new Error('cancelled'));
  else {
    const done = waiting.get(m.callId);
    waiting.delete(m.callId);
    done?.({ ok: m.ok, output: m.output });
  }
});

/** A plan step as `update_plan` takes it and `plan-updated` sends it. */
const PLAN_STATUSES = ['pending', 'inProgress', 'completed'];

function planEvent(args: unknown): EngineEvent | string {
  const a = (args ?? {}) as { steps?: unknown; explanation?: unknown };
  if (!Array.isArray(a.steps)) return 'steps must be an array of { step, status }';
  const steps = [];
  for (const s of a.steps as { step?: unknown; status?: unknown }[]) {
    if (typeof s?.step !== 'string' || !PLAN_STATUSES.includes(String(s.status)))
      return `each step needs a string "step" and a status of ${PLAN_STATUSES.join(', ')}`;
    steps.push({ step: s.step, status: s.status });
  }
  return { type: 'plan-updated', steps, ...(typeof a.explanation === 'string' && { explanation: a.explanation }) };
}

function toolSet(turnId: string, specs: ToolSpec[], signal: AbortSignal): ToolSet {
  const set: ToolSet = {};
  for (const spec of specs) {
    set[spec.name] = tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.parameters as Parameters<typeof jsonSchema>[0]),
      execute: async (args: unknown) => {
        if (spec.kind === 'plan') {
          const event = planEvent(args);
          if (typeof event === 'string') return `400 ${event}`;
          post({ type: 'event', turnId, event });
          return 'plan updated';
        }
        const callId = randomUUID();
        const answer = await new Promise<{ ok: boolean; output: string }>((resolve) => {
          waiting.set(callId, resolve);
          signal.addEventListener('abort', () => resolve({ ok: false, output: 'cancelled' }), { once: true });
          post({ type: 'tool', turnId, callId, name: spec.name, kind: spec.kind, args });
        });
        waiting.delete(callId);
        return answer.output;
      },
    });
  }
  return set;
}

/**
 * What one turn has used so far: the usage of its finished model calls, plus the call in flight —
 * the provider's usage once its last chunk brought it, else an estimate (`ceil(chars / 4)` of the
 * request body sent and of the text, reasoning and tool arguments streamed back). The session
 * charges `total()` when the turn is cancelled or its worker is restarted mid-call.
 */
class TurnMeter {
  private readonly finished: TurnUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  private inFlight: { requestChars: number; streamedChars: number; reported?: TurnUsage } | null = null;

  constructor(private readonly turnId: string) {}

  /** A model call was answered (2xx): from now on the provider bills it. */
  requestSent(body: unknown): void {
    this.inFlight = { requestChars: typeof body === 'string' ? body.length : 0, streamedChars: 0 };
    this.report();
  }

  streamed(text: string): void {
    if (!this.inFlight || text.length === 0) return;
    this.inFlight.streamedChars += text.length;
    this.report();
  }

  /** A raw provider chunk: its `usage`, when it carries one, is the in-flight call's real usage. */
  raw(chunk: unknown): void {
    const usage = (chunk as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } } })?.usage;
    if (!this.inFlight || typeof usage?.prompt_tokens !== 'number') return;
    const cached = Number(usage.prompt_tokens_details?.cached_tokens ?? 0) || 0;
    this.inFlight.reported = {
      inputTokens: Math.max(0, usage.prompt_tokens - cached),
      cachedInputTokens: cached,
      outputTokens: Number(usage.completion_tokens ?? 0) || 0,
    };
    this.report();
  }

  /** The call finished: the AI SDK's usage of the step replaces what was counted for it. */
  stepFinished(u: { inputTokens?: number; outputTokens?: number; inputTokenDetails?: { cacheReadTokens?: number } }): void {
    const cached = u.inputTokenDetails?.cacheReadTokens ?? 0;
    this.finished.inputTokens += Math.max(0, (u.inputTokens ?? 0) - cached);
    this.finished.cachedInputTokens += cached;
    this.finished.outputTokens += u.outputTokens ?? 0;
    this.inFlight = null;
    this.report();
  }

  total(): TurnUsage {
    const f = this.inFlight;
    const current = f ? (f.reported ?? { inputTokens: tokens(f.requestChars), cachedInputTokens: 0, outputTokens: tokens(f.streamedChars) }) : null;
    return {
      inputTokens: this.finished.inputTokens + (current?.inputTokens ?? 0),
      cachedInputTokens: this.finished.cachedInputTokens + (current?.cachedInputTokens ?? 0),
      outputTokens: this.finished.outputTokens + (current?.outputTokens ?? 0),
    };
  }

  private report(): void {
    post({ type: 'usage', turnId: this.turnId, usage: this.total() });
  }
}

function tokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** `fetch` with the retries of the module comment; the last failure is returned as it came. */
function retryingFetch(turnId: string, meter: TurnMeter): typeof fetch {
  return async (input, init) => {
    for (let attempt = 0; ; attempt++) {
      let failure: string;
      try {
        const res = await fetch(input, init);
        if (res.ok) meter.requestSent(init?.body);
        if (res.ok || attempt >= RETRIES || !(res.status === 429 || res.status >= 500)) return res;
        failure = `the model provider answered ${res.status}`;
        await res.body?.cancel();
      } catch (err) {
        if (init?.signal?.aborted) throw err;
        // The network error names the provider's address: it goes to the server log, not to the user.
        post({ type: 'provider-problem', turnId, detail: describeNetworkError(err) });
        if (attempt >= RETRIES) throw new ProviderUnreachable();
        failure = UNREACHABLE;
      }
      post({ type: 'event', turnId, event: { type: 'error', message: `${failure}; retrying`, willRetry: true } });
      await new Promise((r) => setTimeout(r, RETRY_DELAY_MS * (attempt + 1)));
    }
  };
}

async function runTurn(turnId: string, request: TurnRequest): Promise<void> {
  const controller = new AbortController();
  turns.set(turnId, controller);
  const meter = new TurnMeter(turnId);
  const emit = (event: EngineEvent) => post({ type: 'event', turnId, event });
  let failure: string | null = null;
  let messages: unknown[] = [];
  try {
    const provider = createOpenAICompatible({
      name: request.providerName,
      baseURL: request.baseURL,
      apiKey: request.apiKey,
      includeUsage: true,
      fetch: retryingFetch(turnId, meter),
    });
    const result = streamText({
      model: provider.chatModel(request.modelId),
      system: request.system,
      messages: request.messages as ModelMessage[],
      tools: toolSet(turnId, request.tools, controller.signal),
      stopWhen: stepCountIs(request.maxSteps),
      maxRetries: 0,
      abortSignal: controller.signal,
      includeRawChunks: true,
      // Failures arrive as `error` parts below; the default handler would print the whole request (the conversation) to stderr.
      onError: () => {},
      ...(request.reasoningEffort && { providerOptions: { [request.providerName]: { reasoningEffort: request.reasoningEffort } } }),
    });
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'raw':
          meter.raw(part.rawValue);
          break;
        case 'text-delta':
          meter.streamed(part.text);
          if (part.text) emit({ type: 'text', delta: part.text });
          break;
        case 'reasoning-start':
          emit({ type: 'thinking-start', id: part.id });
          break;
        case 'reasoning-delta':
          meter.streamed(part.text);
          if (part.text) emit({ type: 'thinking', delta: part.text });
          break;
        case 'reasoning-end':
          emit({ type: 'thinking-end', id: part.id });
          break;
        case 'tool-input-delta':
          meter.streamed(part.delta);
          break;
        case 'finish-step':
          meter.stepFinished(part.usage);
          break;
        case 'error':
          failure = messageOf(part.error);
          break;
        case 'abort':
          failure = 'cancelled';
          break;
      }
    }
    if (failure === null) messages = (await result.response).messages;
  } catch (err) {
    failure = controller.signal.aborted ? 'cancelled' : messageOf(err);
  }
  turns.delete(turnId);
  if (controller.signal.aborted) failure = 'cancelled';
  post({
    type: 'done',
    turnId,
    status: failure === null ? 'completed' : 'failed',
    error: failure,
    messages: failure === null ? toPlain(messages) : [],
    usage: meter.total(),
  });
}

/** What the user is told when the provider cannot be reached (the reason goes to the server log). */
const UNREACHABLE = 'the model provider could not be reached';

/** Thrown by the provider's fetch after its last retry failed to reach it. */
class ProviderUnreachable extends Error {
  constructor() {
    super(UNREACHABLE);
    this.name = 'ProviderUnreachable';
  }
}

/** A network error with its cause (Node's fetch puts `connect ECONNREFUSED <address>` there). */
function describeNetworkError(err: unknown): string {
  const e = err as { message?: unknown; cause?: { message?: unknown; code?: unknown } };
  const cause = e?.cause?.message ?? e?.cause?.code;
  return (
    [e?.message, cause]
      .filter((v) => typeof v === 'string' && v)
      .join(': ')
      .slice(0, 500) || String(err).slice(0, 500)
  );
}

/**
 * A provider error's message for the user, without its request body or headers (they may carry keys)
 * and without the provider's address: an HTTP status, "could not be reached", or the SDK's own message.
 */
function messageOf(err: unknown): string {
  const e = err as { message?: unknown; statusCode?: unknown; name?: unknown; cause?: unknown };
  if (typeof e?.statusCode === 'number') return `the model provider answered ${e.statusCode}`;
  if (e?.name === 'AbortError') return 'cancelled';
  if (err instanceof ProviderUnreachable || (e?.cause as Error | undefined) instanceof ProviderUnreachable) return UNREACHABLE;
  if (e?.name === 'AI_APICallError') return UNREACHABLE; // the SDK's wrapper of a fetch that threw
  return typeof e?.message === 'string' ? e.message.slice(0, 500) : String(err).slice(0, 500);
}

/** Response messages as plain JSON (they go to the database and back). */
function toPlain(messages: unknown[]): unknown[] {
  return JSON.parse(JSON.stringify(messages)) as unknown[];
}
