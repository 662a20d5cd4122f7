/**
 * The metrics contract: what the server sends to CloudWatch as EMF (Powertools Metrics), under the
 * namespace `POWERTOOLS_METRICS_NAMESPACE` with the `service` dimension `POWERTOOLS_SERVICE_NAME`.
 * The alarms (scripts/deployment-guards.ts) and docs/deploying.md ("Logs, metrics and stack traces") read it.
 * Each unique metric name and dimension values is one CloudWatch custom metric, so every dimension
 * here takes few values: `route` is the route template (never a path), `statusClass` the status's
 * hundred (`2xx`), `code` a problem code, `outcome` one of the values below.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { MetricsSink, StoreCounter } from '../contract/types.js';

type Unit = Parameters<Metrics['addMetric']>[1];

/** Per request, with the dimension sets [service], [service, route], [service, route, statusClass]. */
export const REQUEST_METRICS = { requests: 'Requests', latency: 'Latency' } as const;
/** Per problem answer, with [service, code]. */
export const PROBLEMS_METRIC = 'Problems';
/** The startup probe's runs, with [service, outcome] (`PROBE_OUTCOMES` of lib/store/probe.ts). */
export const PROBE_METRIC = 'ProbeOutcome';

/** What each of the store's counters is sent as: a metric and its `outcome`, with [service, outcome]. */
export const STORE_METRICS: Readonly<Record<StoreCounter, { metric: string; outcome: string }>> = {
  // An append whose expected count or hash another writer's append had changed (409, the caller re-reads).
  appendConflicts: { metric: 'ConflictRetries', outcome: 'append-conflict' },
  // A write refused for its fencing token: a newer lease, or none live (docs/DESIGN.md, "The write path").
  fencedWrites: { metric: 'FencedWrites', outcome: 'refused' },
  // The store's own upkeep and what it found damaged.
  persistenceFailures: { metric: 'StoreEvents', outcome: 'persistence-failure' },
  corruptObjects: { metric: 'StoreEvents', outcome: 'corrupt-object' },
  manifestRepairs: { metric: 'StoreEvents', outcome: 'manifest-repair' },
  listRewrites: { metric: 'StoreEvents', outcome: 'list-rewrite' },
  archivedLists: { metric: 'StoreEvents', outcome: 'archived-list' },
};

type MetricsLog = NonNullable<NonNullable<ConstructorParameters<typeof Metrics>[0]>['logger']>;

/**
 * What Metrics has to say, said in `logger`'s lines; but not its warning that a dimension is in two
 * dimension sets: the request's sets share `route` by design, with one value.
 */
export function metricsLog(logger: MetricsLog): MetricsLog {
  const shared = /^EMF key "[^"]+" is defined as both a dimension set and dimension set;/;
  return {
    debug: (...args) => logger.debug(...args),
    info: (...args) => logger.info(...args),
    warn: (...args) => (shared.test(String(args[0])) ? undefined : logger.warn(...args)),
    error: (...args) => logger.error(...args),
  };
}

/** `2xx`, `4xx`, … of a status. */
export const statusClassOf = (status: number) => `${Math.floor(status / 100)}xx`;

/** What the application records; with no `Metrics` (off AWS), nothing. */
export interface MetricsRecorder {
  /** The store's counters. */
  readonly sink: MetricsSink;
  /** One answered request: `route` is the route template (or `unmatched`), `code` its problem's. */
  request(route: string, status: number, ms: number, code: string | undefined): void;
  /** A run of the backend probe, by what it found (`PROBE_OUTCOMES` of lib/store/probe.ts). */
  probe(outcome: string): void;
}

/**
 * A recorder on `metrics`. A request's `Requests` and `Latency` are stored on `metrics` with their
 * three dimension sets (published by the handler's `logMetrics` at the end of the invocation);
 * every other metric has dimensions of its own, so it is a blob of its own (`singleMetric()`,
 * written at once).
 */
export function metricsRecorder(metrics: Metrics | undefined): MetricsRecorder {
  const single = (metric: string, name: string, value: string, count = 1) => {
    if (!metrics) return;
    const blob = metrics.singleMetric();
    blob.addDimension(name, value);
    blob.addMetric(metric, 'Count' satisfies Unit, count);
  };
  return {
    sink: {
      count: (name, value = 1) => {
        const { metric, outcome } = STORE_METRICS[name];
        single(metric, 'outcome', outcome, value);
      },
    },
    request(route, status, ms, code) {
      if (!metrics) return;
      // An empty set is [service] alone (Powertools adds the default dimension to every set).
      metrics.addDimensions({});
      metrics.addDimensions({ route });
      metrics.addDimensions({ route, statusClass: statusClassOf(status) });
      metrics.addMetric(REQUEST_METRICS.requests, 'Count' satisfies Unit, 1);
      metrics.addMetric(REQUEST_METRICS.latency, 'Milliseconds' satisfies Unit, ms);
      if (code) single(PROBLEMS_METRIC, 'code', code);
    },
    probe: (outcome) => single(PROBE_METRIC, 'outcome', outcome),
  };
}
