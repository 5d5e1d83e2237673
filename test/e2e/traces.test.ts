/**
 * OpenTelemetry traces (docs/operations.md "Metrics and traces"): the agent fixture served in this
 * process with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an OTLP/HTTP receiver on loopback (a
 * `node:http` server taking the exporter's JSON at `/v1/traces`), once per backend. A request's
 * SERVER span is named after its route template, carries its request id and has the database
 * statement as a child span; an agent turn (scripted model on loopback) gives an `invoke_agent` span
 * with a `chat <model>` child carrying the GenAI attributes and token usage, and an
 * `execute_tool <name>` child for its tool call, and the metrics count the turn, its tokens and credits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { pino } from 'pino';
import { prepareApp, ROOT, type PreparedApp, trustLoopback } from '../support/cli.js';
import { adminIdentity, userIdentity, type Identity } from '../support/auth.js';
import { backends } from '../support/backends.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { waitFor } from '../support/wait.js';
import { startServer, type RunningServer } from '../../dist/runtime/index.js';

const FIXTURE = join(ROOT, 'test/fixtures/apps/agent');

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An attribute's value (OTLP JSON wraps it as `{ stringValue }`, `{ intValue }`, …). */
const attr = (span: OtlpSpan, key: string): unknown => {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v && Object.values(v)[0];
};

/** The OTLP/HTTP receiver: every span of every export, in arrival order. */
async function startReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const json = JSON.parse(body.toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const rs of json.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((ok) => server.close(() => ok())),
  };
}

let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

for (const backend of backends()) {
  describe(`traces on ${backend}`, () => {
    let app: PreparedApp;
    let model: ModelServer;
    let server: RunningServer;
    let writer: Identity;
    const spanWhere = (test: (s: OtlpSpan) => boolean) => waitFor(async () => receiver.spans.find(test) ?? null, 5000);

    beforeAll(async () => {
      model = await startModelServer();
      app = await prepareApp(FIXTURE, backend, trustLoopback); // x-request-id of the test is kept
      server = await startServer({
        appDir: app.dir,
        port: 0,
        env: {
          ...process.env,
          ...app.env,
          MODEL_URL: model.url,
          SVC_SECRET_LLM: 'k',
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
        logger: pino({ level: 'silent' }),
      });
      writer = await userIdentity(app, server.url, 'writer', ['writer']);
    });
    afterAll(async () => {
      await server?.close();
      await model?.close();
      await app?.cleanup();
    });

    it('gives a request a span named by its route, with its request id and the database statement under it', async () => {
      const reqId = `trace-${backend}-${Date.now()}`;
      const r = await fetch(`${server.url}/Book?pageSize=2`, { headers: { ...writer.headers, 'x-request-id': reqId } });
      expect(r.status).toBe(200);
      const span = await spanWhere((s) => attr(s, 'svc.request_id') === reqId && s.kind === 2);
      expect(span).toMatchObject({ name: 'GET /api/Book' });
      expect(attr(span, 'http.route')).toBe('/api/Book');
      expect(Number(attr(span, 'http.response.status_code'))).toBe(200);
      const statement = await spanWhere((s) => s.parentSpanId === span.spanId && attr(s, 'db.system.name') === backend);
      expect(statement.traceId).toBe(span.traceId);
      expect(String(attr(statement, 'db.query.text'))).toContain('"Book"');
    });

    it('gives an agent turn its spans: the model call with GenAI attributes and the tool call', async () => {
      model.script(
        { toolCalls: [{ name: 'listBook', args: { filter: 'title eq "Dune"' } }], usage: { prompt: 300, completion: 20 } },
        { text: ['Shown.'], usage: { prompt: 400, completion: 30 } },
      );
      const r = await fetch(`${server.url}/_invoke/agentAdmin`, {
        method: 'POST',
        headers: { ...writer.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ op: 'prompt', args: JSON.stringify({ identityId: writer.id, message: 'Find Dune' }) }),
      });
      expect(((await r.json()) as { result: { status: string } }).result.status).toBe('completed');
      const turn = await spanWhere((s) => s.name === 'invoke_agent' && attr(s, 'svc.identity_id') === writer.id);
      const chat = await spanWhere((s) => s.parentSpanId === turn.spanId && s.name.startsWith('chat '));
      expect(chat.name).toBe('chat small-1');
      expect(attr(chat, 'gen_ai.system')).toBe('openai');
      expect(attr(chat, 'gen_ai.request.model')).toBe('small-1');
      expect(Number(attr(chat, 'gen_ai.usage.input_tokens'))).toBeGreaterThan(0);
      expect(Number(attr(chat, 'gen_ai.usage.output_tokens'))).toBeGreaterThan(0);
      const tool = await spanWhere((s) => s.parentSpanId === turn.spanId && s.name === 'execute_tool listBook');
      expect(attr(tool, 'gen_ai.tool.name')).toBe('listBook');
      expect(tool.traceId).toBe(turn.traceId);
      // The same turn in the metrics: the turn, its tokens and its credits.
      const admin = await adminIdentity(app, server.url);
      const text = await (await fetch(`${server.url}/_metrics`, { headers: admin.headers })).text();
      const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
      expect(value('svc_agent_turns_total{outcome="ok"}')).toBeGreaterThanOrEqual(1);
      expect(value('svc_agent_tokens_total{kind="input"}')).toBeGreaterThan(0);
      expect(value('svc_agent_tokens_total{kind="output"}')).toBeGreaterThan(0);
      expect(value('svc_agent_credits_total')).toBeGreaterThan(0);
    });
  });
}
