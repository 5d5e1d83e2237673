/**
 * @module The Prometheus metrics of one server (docs/operations.md "Metrics and traces"), on a
 * registry of its own (`prom-client`; several servers in one process keep apart). Every series has
 * bounded labels: routes are templates (`/api/Order/{id}`, never a raw path), functions and resources
 * are names from the manifest. The request hot path does one histogram observe through a child
 * resolved without building strings (`RouteSeries.observe`). Gauges that mirror a service's state
 * (pool, connections, channels, sessions) are read when scraped (`collect`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Latency buckets, seconds: 1 ms … 10 s. */
const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

type Child = { observe(v: number): void };

/** The request series of one route template: children per method and status, made once each. */
export class RouteSeries {
  private readonly byMethod = new Map<string, Map<number, Child>>();

  constructor(
    private readonly histogram: Histogram<'route' | 'method' | 'status'>,
    /** The route template, e.g. `/api/{collection}` kinds such as `/api/Order/{id}`. */
    readonly route: string,
  ) {}

  /** Counts one answered request and its latency (seconds). */
  observe(method: string, status: number, seconds: number): void {
    // Keyed by the method as sent: node:http's parser admits only its fixed list of methods.
    let byStatus = this.byMethod.get(method);
    if (!byStatus) this.byMethod.set(method, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) {
      child = this.histogram.labels(this.route, KNOWN_METHODS.has(method) ? method : 'other', String(status));
      byStatus.set(status, child);
    }
    child.observe(seconds);
  }
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** What the scrape reads from the services (each optional). */
export interface MetricsSources {
  /** The jobs engine's counts (DESIGN §12), read at each scrape. */
  jobs?: () => Promise<{ pending: number; oldestPendingSeconds: number }>;
  pool?: () => { total: number; idle: number; waiting: number } | undefined;
  /** The real-time service's counters (`RealtimeService.stats`): counts since start, read as counter increments. */
  realtime?: () => {
    connections: number;
    groups: number;
    slowDropped: number;
    framesOut: number;
    messagesIn: number;
    bus?: { published: number; received: number };
  };
  agentSessions?: () => number;
}

/**
 * The metrics of one server. Create it once per server; `text()` is the scrape body.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'HTTP requests by route template, method and status: latency in seconds (_count is the request count).',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: LATENCY,
    registers: [this.registry],
  });
  readonly statements = new Histogram({
    name: 'svc_db_statement_duration_seconds',
    help: 'Database statements run by the app (outside transactions and in them): duration in seconds.',
    buckets: LATENCY,
    registers: [this.registry],
  });
  readonly statementErrors = new Counter({ name: 'svc_db_statement_errors_total', help: 'Database statements that failed.', registers: [this.registry] });
  readonly pool = new Gauge({
    name: 'svc_db_pool_connections',
    help: 'PostgreSQL pool connections by state (total, idle, waiting = callers queued for one).',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly functionCalls = new Histogram({
    name: 'svc_function_duration_seconds',
    help: 'Function calls by function and outcome (ok, error): duration in seconds.',
    labelNames: ['function', 'outcome'] as const,
    buckets: LATENCY,
    registers: [this.registry],
  });
  readonly rtConnections = new Gauge({ name: 'svc_realtime_connections', help: 'Real-time connections open on this instance.', registers: [this.registry] });
  readonly rtChannels = new Gauge({
    name: 'svc_realtime_channels',
    help: 'Real-time channels (groups) with members on this instance.',
    registers: [this.registry],
  });
  readonly rtMessages = new Counter({
    name: 'svc_realtime_messages_total',
    help: 'Real-time messages by direction: in (from clients), out (frames sent to clients).',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  readonly rtDropped = new Counter({
    name: 'svc_realtime_slow_readers_dropped_total',
    help: 'Connections closed because they read too slowly.',
    registers: [this.registry],
  });
  readonly busMessages = new Counter({
    name: 'svc_bus_messages_total',
    help: 'Redis bus messages by direction: publish, receive.',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  readonly agentSessions = new Gauge({ name: 'svc_agent_sessions', help: 'Agent sessions running on this instance.', registers: [this.registry] });
  readonly agentTurns = new Counter({
    name: 'svc_agent_turns_total',
    help: 'Agent turns by outcome (ok, error).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly agentTokens = new Counter({
    name: 'svc_agent_tokens_total',
    help: 'Model tokens of agent turns by kind (input, output).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly agentCredits = new Counter({ name: 'svc_agent_credits_total', help: 'Credits charged for agent turns.', registers: [this.registry] });
  readonly jobsPending = new Gauge({
    name: 'svc_jobs_pending',
    help: 'Jobs waiting to run (due or not), read at scrape (DESIGN §12).',
    registers: [this.registry],
  });
  readonly jobsOldest = new Gauge({
    name: 'svc_jobs_oldest_pending_seconds',
    help: 'How long the oldest due job has waited, in seconds (0 when none is due).',
    registers: [this.registry],
  });
  readonly jobRuns = new Counter({
    name: 'svc_job_runs_total',
    help: 'Job runs on this instance by result (ok, failed: retried later, dead: out of attempts).',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly jobDuration = new Histogram({
    name: 'svc_job_duration_seconds',
    help: 'Duration of job runs on this instance.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly routes = new Map<string, RouteSeries>();
  /** The totals read at the previous scrape (counters grow by the difference). */
  private readonly seen = { slowDropped: 0, framesOut: 0, messagesIn: 0, published: 0, received: 0 };

  constructor(sources: MetricsSources = {}) {
    collectDefaultMetrics({ register: this.registry, prefix: 'svc_' });
    this.sources = sources;
    this.busOut = this.busMessages.labels('publish');
    this.busIn = this.busMessages.labels('receive');
    this.rtIn = this.rtMessages.labels('in');
    this.rtOut = this.rtMessages.labels('out');
  }

  /** Where the scrape reads gauges from; set by the server once its services exist. */
  sources: MetricsSources;
  readonly busOut;
  readonly busIn;
  readonly rtIn;
  readonly rtOut;

  /** The series of a route template (made once; callers keep it). */
  route(template: string): RouteSeries {
    let s = this.routes.get(template);
    if (!s) this.routes.set(template, (s = new RouteSeries(this.requests, template)));
    return s;
  }

  /** The scrape body in the Prometheus text format, gauges read from `sources` first. */
  async text(): Promise<string> {
    const pool = this.sources.pool?.();
    if (pool) {
      this.pool.set({ state: 'total' }, pool.total);
      this.pool.set({ state: 'idle' }, pool.idle);
      this.pool.set({ state: 'waiting' }, pool.waiting);
    }
    const rt = this.sources.realtime?.();
    if (rt) {
      this.rtConnections.set(rt.connections);
      this.rtChannels.set(rt.groups);
      this.grow(this.rtDropped, 'slowDropped', rt.slowDropped);
      this.grow(this.rtOut, 'framesOut', rt.framesOut);
      this.grow(this.rtIn, 'messagesIn', rt.messagesIn);
      if (rt.bus) {
        this.grow(this.busOut, 'published', rt.bus.published);
        this.grow(this.busIn, 'received', rt.bus.received);
      }
    }
    const sessions = this.sources.agentSessions?.();
    if (sessions !== undefined) this.agentSessions.set(sessions);
    const jobs = await this.sources.jobs?.().catch(() => undefined);
    if (jobs) {
      this.jobsPending.set(jobs.pending);
      this.jobsOldest.set(jobs.oldestPendingSeconds);
    }
    return this.registry.metrics();
  }

  /** Records one database statement (`openDatabase`'s `observe`). */
  readonly statement = (seconds: number, failed: boolean): void => {
    this.statements.observe(seconds);
    if (failed) this.statementErrors.inc();
  };

  private grow(counter: { inc(n: number): void }, key: keyof Metrics['seen'], total: number): void {
    if (total > this.seen[key]) counter.inc(total - this.seen[key]);
    this.seen[key] = total;
  }

  /** The `Content-Type` of `text()`. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
