/**
 * Prometheus metrics of the edge. One registry per process (passed in), so tests that
 * build several edges never share counters. The runtime registers its own gauges on the
 * same registry (owned shards, mailbox depth, consumer lag...).
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface EdgeMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  latency: Histogram<'method' | 'route'>;
  /** INTERFACE §9.2: requests refused by the per-tenant rate limit. */
  tenantRateLimited: Counter;
}

export function createMetricsRegistry(opts: { defaults?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaults) collectDefaultMetrics({ register: registry });
  return registry;
}

export function createEdgeMetrics(registry: Registry): EdgeMetrics {
  return {
    registry,
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered by the edge',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Edge request latency by route',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    tenantRateLimited: new Counter({
      name: 'tenant_rate_limited_total',
      help: 'Tenant requests refused with 429 by SERVICE_TENANT_RATE_PER_S',
      registers: [registry],
    }),
  };
}
