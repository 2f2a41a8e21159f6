/**
 * A node's metrics registry (`/metrics`): the runtime's counters and histograms, created
 * before any part they count, the upstream-call metrics, and the store's gauges. The
 * gauges that read the actor host's parts are added once they exist (actor-host.ts).
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { observeUpstreamCalls } from '../connectors/upstream-metrics.js';
import { createMetricsRegistry } from '../edge/metrics.js';
import type { Logger } from '../log.js';
import { createRuntimeMetrics, type RuntimeMetrics } from '../runtime/metrics.js';
import { registerDeadLetterMetrics } from '../store/dead-letter-metrics.js';
import { registerEffectMetrics } from '../store/effect-metrics.js';
import { registerInstallMetrics } from '../store/install-metrics.js';
import type { Pool } from './postgres.js';
import type { Undo } from './undo.js';

export interface NodeMetrics {
  registry: Registry;
  runtime: RuntimeMetrics;
}

export function openMetrics(config: Readonly<Config>, pool: Pool, log: Logger, undo: Undo): NodeMetrics {
  const registry = createMetricsRegistry({ defaults: true });
  const stopUpstream = observeUpstreamCalls(registry, config);
  undo.push({ name: 'upstream metrics', fn: async () => stopUpstream() });
  registerInstallMetrics(registry, pool);
  registerEffectMetrics(registry, pool, config.namespace, log);
  registerDeadLetterMetrics(registry, pool);
  return { registry, runtime: createRuntimeMetrics(registry) };
}
