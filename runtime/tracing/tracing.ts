/**
 * @module OpenTelemetry traces (docs/operations.md "Metrics and traces"): off unless the standard
 * environment asks for them (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_TRACES_EXPORTER=otlp`; `OTEL_TRACES_EXPORTER=none` wins). Off, the SDK is never loaded and
 * every hook here is one check of a module variable. On, the process gets one tracer provider (the
 * first server to start sets it up) exporting OTLP over HTTP with JSON bodies in batches
 * (`OTEL_BSP_SCHEDULE_DELAY`, ms, default 5000; `OTEL_SERVICE_NAME`, default the app's name;
 * `OTEL_EXPORTER_OTLP_HEADERS` read by the exporter).
 *
 * Spans: one SERVER span per HTTP request (`GET /api/Order/{id}`, with `svc.request_id`, so a log line
 * leads to its trace), a CLIENT span per database statement made under a span (`db.query.text` is the
 * SQL with placeholders, never values), one span per function call, and per agent turn an
 * `invoke_agent` span with a `chat <model>` child (GenAI conventions: `gen_ai.system` — `openai`, the
 * protocol of every provider —, `gen_ai.request.model`, `gen_ai.usage.input_tokens`/`output_tokens`;
 * the model's steps run on the session's worker, so one span covers them with the turn's usage) and
 * an `execute_tool <name>` child per tool call. Turn spans are written when the turn ends, with the
 * turn's own times.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Span, SpanOptions, Tracer } from '@opentelemetry/api';
import type { Logger } from '../log.js';

type Api = typeof import('@opentelemetry/api');

interface Tracing {
  api: Api;
  tracer: Tracer;
  flush(): Promise<void>;
}

let on: Tracing | undefined;

/** Whether `env` asks for traces (see the module comment). */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return Boolean(exporter || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Whether traces are being recorded in this process. */
export const tracingOn = (): boolean => on !== undefined;

/**
 * Sets up the process's tracer provider when `env` asks for traces (once: later calls keep the first).
 * @param serviceName - `service.name` unless `OTEL_SERVICE_NAME` is set
 * @returns whether traces are on
 */
export async function startTracing(env: NodeJS.ProcessEnv, serviceName: string, logger: Logger): Promise<boolean> {
  if (on) return true;
  if (!tracingWanted(env)) return false;
  const [api, node, otlp, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const base = (env.OTEL_EXPORTER_OTLP_ENDPOINT || 'http://localhost:4318').replace(/\/+$/, '');
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${base}/v1/traces`;
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [new node.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url }), { scheduledDelayMillis: delay > 0 ? delay : 5000 })],
  });
  provider.register();
  on = { api, tracer: api.trace.getTracer('svc'), flush: () => provider.forceFlush() };
  logger.info({ url }, 'traces exported over OTLP/HTTP');
  return true;
}

/** Longest wait for the last export when a server closes, ms (a collector that is down never holds up a stop). */
const FLUSH_WAIT_MS = 2000;

/** Sends the spans still buffered (server close), waiting at most `FLUSH_WAIT_MS`; nothing when traces are off. */
export async function flushTracing(): Promise<void> {
  if (!on) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([on.flush().catch(() => undefined), new Promise<void>((ok) => (timer = setTimeout(ok, FLUSH_WAIT_MS)))]);
  clearTimeout(timer);
}

/**
 * Runs `handle` inside a SERVER span for the request, ended when the response closes (status code
 * and route set by then, see `noteRequest`). Only called when traces are on.
 */
export function traceRequest(req: IncomingMessage, res: ServerResponse, handle: () => void): void {
  const t = on!;
  const path = req.url ?? '/';
  const q = path.indexOf('?');
  const span = t.tracer.startSpan(req.method ?? 'GET', {
    kind: t.api.SpanKind.SERVER,
    attributes: { 'http.request.method': req.method ?? 'GET', 'url.path': q < 0 ? path : path.slice(0, q) },
  });
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: t.api.SpanStatusCode.ERROR });
    span.end();
  });
  t.api.context.with(t.api.trace.setSpan(t.api.context.active(), span), handle);
}

/** The request's span, when traces are on and one is active (`trackRequest` adds the request id and route). */
export function requestSpan(): Span | undefined {
  return on?.api.trace.getActiveSpan();
}

/** Names the request span after its route template (`GET /api/Order/{id}`, the HTTP conventions). */
export function nameRequestSpan(span: Span, method: string, route: string): void {
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}

/**
 * Starts a CLIENT span for one statement under the active span (none without one: background work
 * such as the log store's flushes makes no traces).
 * @returns the function that ends it (with the error, if any)
 */
export function statementSpan(system: string, text: string): ((err?: unknown) => void) | undefined {
  const t = on;
  if (!t || !t.api.trace.getActiveSpan()) return undefined;
  const space = text.indexOf(' ');
  const op = (space < 0 ? text : text.slice(0, space)).toUpperCase();
  const span = t.tracer.startSpan(`${op} ${system}`, {
    kind: t.api.SpanKind.CLIENT,
    attributes: { 'db.system.name': system, 'db.operation.name': op, 'db.query.text': text.length > 2000 ? text.slice(0, 2000) : text },
  });
  return (err) => {
    if (err) span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: (err as Error)?.message });
    span.end();
  };
}

/** Runs `fn` in an INTERNAL span named `name` (function calls); plain `fn()` when traces are off. */
export async function inSpan<T>(name: string, attributes: Record<string, string | number>, fn: () => Promise<T>): Promise<T> {
  const t = on;
  return t ? activeSpan(t, name, { attributes }, fn) : fn();
}

/** Runs `fn` in a new active span: an error status when it throws, ended either way. */
function activeSpan<T>(t: Tracing, name: string, options: SpanOptions, fn: () => Promise<T>): Promise<T> {
  return t.tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs one job run (DESIGN §12) in a CONSUMER span named `name`, linked to the span of the request that
 * made the job when `traceparent` (W3C `00-<trace>-<span>-<flags>`) names one; plain `fn()` when off.
 */
export async function inJobSpan<T>(
  name: string,
  attributes: Record<string, string | number>,
  traceparent: string | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const t = on;
  if (!t) return fn();
  const m = traceparent ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent) : null;
  const links = m ? [{ context: { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true } }] : [];
  return activeSpan(t, name, { attributes, links, kind: t.api.SpanKind.CONSUMER, root: true }, fn);
}

/** The W3C `traceparent` of the active span (a request's), to link a job to it; undefined when off or outside a span. */
export function activeTraceparent(): string | undefined {
  const t = on;
  const ctx = t?.api.trace.getActiveSpan()?.spanContext();
  if (!ctx || !t?.api.isSpanContextValid(ctx)) return undefined;
  return `00-${ctx.traceId}-${ctx.spanId}-0${(ctx.traceFlags & 1).toString(16)}`;
}

/** An ended agent turn as `traceTurn` writes it (times are `performance.now()` values). */
export interface TracedTurn {
  identityId: string;
  provider?: string;
  model?: string;
  status: string;
  error?: string | null;
  inputTokens: number;
  outputTokens: number;
  startedAt: number;
  endedAt: number;
  tools: { name: string; server: string; startedAt: number; endedAt: number; error?: string }[];
}

/** Writes an ended turn's spans (see the module comment); nothing when traces are off. */
export function traceTurn(turn: TracedTurn): void {
  const t = on;
  if (!t) return;
  const at = (ms: number) => performance.timeOrigin + ms;
  const root = t.tracer.startSpan(
    'invoke_agent',
    {
      startTime: at(turn.startedAt),
      attributes: { 'gen_ai.operation.name': 'invoke_agent', 'svc.identity_id': turn.identityId, ...(turn.model && { 'gen_ai.request.model': turn.model }) },
    },
    t.api.ROOT_CONTEXT,
  );
  const parent = t.api.trace.setSpan(t.api.ROOT_CONTEXT, root);
  const failed = turn.status !== 'completed';
  const chat = t.tracer.startSpan(
    `chat ${turn.model ?? 'unknown'}`,
    {
      kind: t.api.SpanKind.CLIENT,
      startTime: at(turn.startedAt),
      attributes: {
        'gen_ai.operation.name': 'chat',
        // Every provider is an OpenAI-compatible endpoint (DESIGN §4): the wire protocol is the system.
        'gen_ai.system': 'openai',
        'svc.agent.provider': turn.provider ?? 'unknown',
        'gen_ai.request.model': turn.model ?? 'unknown',
        'gen_ai.usage.input_tokens': turn.inputTokens,
        'gen_ai.usage.output_tokens': turn.outputTokens,
      },
    },
    parent,
  );
  if (failed) chat.setStatus({ code: t.api.SpanStatusCode.ERROR, message: turn.error ?? 'failed' });
  chat.end(at(turn.endedAt));
  for (const tool of turn.tools) {
    const span = t.tracer.startSpan(
      `execute_tool ${tool.name}`,
      { startTime: at(tool.startedAt), attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool.name, 'svc.tool.server': tool.server } },
      parent,
    );
    if (tool.error !== undefined) span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: tool.error.slice(0, 200) });
    span.end(at(tool.endedAt));
  }
  if (failed) root.setStatus({ code: t.api.SpanStatusCode.ERROR, message: turn.error ?? 'failed' });
  root.end(at(turn.endedAt));
}
