/**
 * Prometheus metrics of the edge. One registry per process (passed in), so tests that
 * build several edges never share counters. The runtime registers its own gauges on the
 * same registry (owned shards, mailbox depth, consumer lag...).
 */
import { METHODS } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CHAT_EMIT_KINDS } from '../connectors/chatapp/emit.js';
import { CODEHOST_EMIT_KINDS } from '../connectors/codehost/emit-schema.js';
import { ErrorCodes } from '../errors.js';
import { toAppError } from '../errors-wire.js';
import { packageVersion } from '../version.js';

/**
 * Label values come from closed sets (issue 32): a value a caller chose (an emit kind, a
 * method) would make a new series per value, without bound, and could carry bytes the
 * exposition format does not escape. Anything outside its set is counted as `other`.
 */
const OTHER_LABEL = 'other';
const EMIT_KINDS: ReadonlySet<string> = new Set([...CHAT_EMIT_KINDS, ...CODEHOST_EMIT_KINDS]);
const OUTCOMES: ReadonlySet<string> = new Set(['ok', ...Object.values(ErrorCodes)]);
const HTTP_METHODS: ReadonlySet<string> = new Set(METHODS);

function closedLabel(allowed: ReadonlySet<string>, value: string): string {
  return allowed.has(value) ? value : OTHER_LABEL;
}

export interface EdgeMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  latency: Histogram<'method' | 'route'>;
  /** INTERFACE §9.2: requests refused by the per-tenant rate limit. */
  tenantRateLimited: Counter;
  /** Emits and node actions by emit kind and outcome (`ok` or the error code). */
  emits: Counter<'kind' | 'outcome'>;
  /** INTERFACE §9.3: bytes of webhook bodies held before their signature is checked (64 MiB at most). */
  unverifiedBodyBytes: Gauge;
  /** INTERFACE §10.1: change-feed requests held open now, by mode (`sse` or `long_poll`). */
  feedHeld: Gauge<'mode'>;
  /**
   * INTERFACE §10.5: the exports streaming now, each by the bytes it holds in this process
   * (its stream's buffer and the response's), read when the metrics are scraped.
   */
  exports: Set<() => number>;
}

export function createMetricsRegistry(opts: { defaults?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaults) collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'connector_service_build_info',
    help: 'Always 1; the labels say which build runs',
    labelNames: ['version', 'node_version'],
    registers: [registry],
  }).set({ version: packageVersion(), node_version: process.version }, 1);
  return registry;
}

export function createEdgeMetrics(registry: Registry): EdgeMetrics {
  const exports = new Set<() => number>();
  new Gauge({
    name: 'connector_service_exports_open',
    help: 'Exports (GET /api/v1/export) streaming from this node now',
    registers: [registry],
    collect() {
      this.set(exports.size);
    },
  });
  new Gauge({
    name: 'connector_service_export_held_bytes',
    help: 'Bytes the open exports hold in this node, read but not yet taken by their readers',
    registers: [registry],
    collect() {
      let held = 0;
      for (const bytes of exports) held += bytes();
      this.set(held);
    },
  });
  return {
    registry,
    requests: new Counter({
      name: 'connector_service_http_requests_total',
      help: 'HTTP requests answered by the edge',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'connector_service_http_request_duration_seconds',
      help: 'Edge request latency by route',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    tenantRateLimited: new Counter({
      name: 'connector_service_tenant_rate_limited_total',
      help: 'Tenant requests refused with 429 by SERVICE_TENANT_RATE_PER_S',
      registers: [registry],
    }),
    emits: new Counter({
      name: 'connector_service_emits_total',
      help: 'Emits (and node actions) by kind and outcome: ok, or the error code answered',
      labelNames: ['kind', 'outcome'],
      registers: [registry],
    }),
    unverifiedBodyBytes: new Gauge({
      name: 'connector_service_unverified_body_bytes',
      help: 'Bytes of webhook and chat event bodies held before their signature is checked (at most 64 MiB)',
      registers: [registry],
    }),
    feedHeld: new Gauge({
      name: 'connector_service_feed_held_requests',
      help: 'Change-feed requests held open on this node: SSE streams and long-polls waiting for a commit',
      labelNames: ['mode'],
      registers: [registry],
    }),
    exports,
  };
}

/** Counts one emit by its outcome; the promise's own result or error passes through. */
export async function countEmit<T>(metrics: EdgeMetrics, kind: string, emit: Promise<T>): Promise<T> {
  try {
    const r = await emit;
    metrics.emits.inc({ kind: closedLabel(EMIT_KINDS, kind), outcome: 'ok' });
    return r;
  } catch (err) {
    countRefusedEmit(metrics, kind, err);
    throw err;
  }
}

/** Counts one emit that failed, also one refused before it reached its install (an invalid kind or body). */
export function countRefusedEmit(metrics: EdgeMetrics, kind: unknown, err: unknown): void {
  const label = closedLabel(EMIT_KINDS, typeof kind === 'string' ? kind : '');
  metrics.emits.inc({ kind: label, outcome: closedLabel(OUTCOMES, toAppError(err).code) });
}

/** One answered request; `route` is the matched route's template (a closed set), or `unmatched`. */
export function countRequest(metrics: EdgeMetrics, method: string, route: string, status: number, s: number): void {
  const m = closedLabel(HTTP_METHODS, method);
  metrics.requests.inc({ method: m, route, status: String(status) });
  metrics.latency.observe({ method: m, route }, s);
}
