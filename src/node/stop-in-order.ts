/**
 * A running node's graceful stop: what takes work in stops first (the edge, then the
 * sweeps and effects, then the shards, whose consumers hand their events back), then
 * what work runs on (actors, NATS, Postgres). Each step is bounded and a failing one is
 * logged and passed (undo.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { Kernel } from '../runtime/kernel.js';
import type { ShardManager } from '../runtime/shard-manager.js';
import type { ConnectorModule } from '../wiring/module.js';
import type { Pool } from './postgres.js';
import { flushTracing } from '../telemetry/tracing.js';
import { stopStep } from './undo.js';

export interface StoppableParts {
  edge: FastifyInstance | null;
  modules: readonly ConnectorModule[];
  metricsServer: { close(): Promise<void> } | null;
  keysHeard: { stop(): Promise<void> } | null;
  sweep: { stop(): Promise<void> } | null;
  effects: { stop(): Promise<void> } | null;
  shards: ShardManager | null;
  kernel: Kernel;
  nc: NatsConnection;
  pools: ReadonlyArray<Pool | null>;
  stopUpstreamMetrics: () => void;
}

export async function stopInOrder(log: Logger, p: StoppableParts): Promise<void> {
  const step = stopStep(log);
  log.info('node stopping');
  const edge = p.edge;
  if (edge) {
    for (const m of p.modules) await step('connector edge', async () => m.stopEdge?.());
    await step('edge', () => edge.close());
    await step('metrics', async () => p.metricsServer?.close());
    await step('key announcements', async () => p.keysHeard?.stop());
  }
  await step('resume sweep', async () => p.sweep?.stop());
  await step('effects', async () => p.effects?.stop());
  await step('shards', async () => p.shards?.stop());
  await step('kernel', () => p.kernel.stop());
  await step('nats', () => p.nc.drain());
  await step('postgres', () => Promise.all(p.pools.map((pool) => pool?.end())));
  p.stopUpstreamMetrics();
  // INTERFACE §10.7: the spans of the last work leave before the process does.
  await step('traces', () => flushTracing());
  log.info('node stopped');
}
