/**
 * When traces are on (docs/operations.md "Metrics and traces"): only when the standard OTEL_*
 * variables ask, `OTEL_TRACES_EXPORTER=none` winning; off, `startTracing` loads nothing and every
 * hook is inert. The route templates of the Express application's requests: a bounded set whatever
 * the path, and the log store's ids sort in the order they were made.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { requestSpan, startTracing, statementSpan, tracingOn, tracingWanted } from '../../../dist/runtime/tracing/tracing.js';
import { Metrics } from '../../../dist/runtime/metrics/metrics.js';
import { expressRoutes } from '../../../dist/runtime/metrics/routes.js';
import { LogIds } from '../../../dist/runtime/logs/log-store.js';

describe('tracingWanted', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    [{ OTEL_TRACES_EXPORTER: ' NONE ' }, false],
  ])('%j → %s', (env, want) => {
    expect(tracingWanted(env)).toBe(want);
  });

  it('leaves traces off, and every hook inert, when nothing asks', async () => {
    expect(await startTracing({}, 'app', pino({ level: 'silent' }))).toBe(false);
    expect(tracingOn()).toBe(false);
    expect(requestSpan()).toBeUndefined();
    expect(statementSpan('sqlite', 'SELECT 1')).toBeUndefined();
  });
});

describe('expressRoutes', () => {
  const routeOf = expressRoutes(new Metrics(), ['echo']);
  it.each([
    ['/api/_auth', '/api/_auth'],
    ['/api/_admin/logs?from=x', '/api/_admin/*'],
    ['/api/echo', '/api/echo'],
    ['/api/echo/', '/api/{unknown}'],
    ['/api/_invoke/echo?x=1', '/api/_invoke/echo'],
    ['/api/_invoke/other', '/api/{unknown}'],
    ['/api/Order/123/anything', '/api/{unknown}'],
    ['/api/%E0%A4%A', '/api/{unknown}'],
    ['/_/assets/x.js', '/_/*'],
    ['/_', '/_/*'],
    ['/login?next=/', '/login'],
    ['/index.html', '/{static}'],
  ])('%s → %s', (url, route) => {
    expect(routeOf(url).route).toBe(route);
  });
});

describe('LogIds', () => {
  it('sort in the order they were made, within a ms, across ms and when the clock steps back', () => {
    const ids = new LogIds();
    const made = [1000, 1000, 1000, 1001, 999, 5000, 5000].map((ms) => ids.next(ms));
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
    expect(made[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
