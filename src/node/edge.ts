/**
 * A node's edge (Fastify): tenant key announcements, the tenant routes' pool, every
 * module's routes, and the listen, last, so /readyz never says yes too early; then the
 * modules' edge clients (e.g. the Socket Mode client).
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { buildEdge } from '../edge/app.js';
import { createTenantAuth } from '../edge/auth.js';
import type { ReadinessCheck } from '../edge/context.js';
import { createEdgeMetrics } from '../edge/metrics.js';
import type { Logger } from '../log.js';
import type { FeedWaker } from '../runtime/feed-notices.js';
import type { Router } from '../runtime/router.js';
import type { Registry } from 'prom-client';
import type { MasterKeys } from '../store/credential-cipher.js';
import { listenNotify } from '../store/listen-notify.js';
import { keyUsageRecorder } from '../store/api-key-usage.js';
import { findTenantByApiKey } from '../store/tenants.js';
import type { NodeModule } from '../wiring/module.js';
import { openTenantPool, type NodePools } from './postgres.js';
import type { Undo } from './undo.js';

export interface EdgeParts {
  config: Readonly<Config>;
  log: Logger;
  pools: NodePools;
  masterKeys: MasterKeys;
  router: Router;
  ready: ReadinessCheck;
  registry: Registry;
  modules: readonly NodeModule[];
  /** INTERFACE §10.1: held feed requests wake on the notice of the commit that advanced their tenant. */
  feedNotices: FeedWaker;
}

export interface NodeEdge {
  edge: FastifyInstance;
  url: string;
}

/**
 * Builds the edge and compiles its routes (fastify's `ready`), without listening. Under load
 * that is seconds of synchronous work, so the node does it before it takes shard leases:
 * done after, the stall outlasted the leases' fence window and the node dropped every shard
 * it had just taken (issue 33).
 */
export async function buildNodeEdge(p: EdgeParts, undo: Undo): Promise<FastifyInstance> {
  const { config, log, modules } = p;
  const { pool, requestPool, onIdleError } = p.pools;
  const resolveTenant = (raw: string) => findTenantByApiKey(requestPool, p.masterKeys, raw);
  // INTERFACE §9.1: a key revoked on any node is refused here within 5 s.
  // INTERFACE §10.4: last_used_at, written off the request path at most once a minute per key.
  const usage = keyUsageRecorder(pool, { onError: (err) => log.warn({ err }, 'API key last_used_at not written') });
  const auth = createTenantAuth(resolveTenant, { used: usage.used });
  const keysHeard = listenNotify(pool, 'api_keys_changed', log, { notified: auth.invalidate, live: auth.setLive });
  undo.push({ name: 'key announcements', fn: () => keysHeard.stop() });
  const tenantDb = await openTenantPool(config.databaseUrl!, pool, onIdleError, log);
  undo.push({ name: 'postgres (tenant routes)', fn: () => tenantDb.end() });
  const edge = await buildEdge({
    config,
    log,
    db: requestPool,
    tenantDb,
    actors: p.router,
    resolveTenant,
    auth,
    ready: p.ready,
    metrics: createEdgeMetrics(p.registry),
    feed: p.feedNotices,
    plugins: modules.flatMap((m) => (m.routes ? [{ plugin: m.routes }] : [])),
  });
  undo.push({ name: 'edge', fn: () => closeEdge(edge) });
  await edge.ready();
  return edge;
}

/** Listens (last, so /readyz never says yes too early), then starts the modules' edge clients. */
export async function listenNodeEdge(
  edge: FastifyInstance,
  p: Pick<EdgeParts, 'config' | 'modules'>,
  undo: Undo,
): Promise<NodeEdge> {
  const { config, modules } = p;
  const url = await edge.listen({ host: config.host, port: config.port });
  for (const m of modules) {
    await m.startEdge?.();
    undo.push({ name: `${m.id} edge`, fn: async () => m.stopEdge?.() });
  }
  return { edge, url };
}

/**
 * INTERFACE §8.24: a graceful stop ends within 5 s. Closing stops new requests at once (503
 * on a kept-alive socket) and waits for those in flight; what still runs after this long (an
 * emit waiting for its bucket, a held change feed or event stream) has its socket closed, so
 * its client retries on another node instead of holding this one.
 */
const EDGE_DRAIN_MS = 2_000;

async function closeEdge(edge: { close(): Promise<unknown>; server: { closeAllConnections(): void } }) {
  const timer = setTimeout(() => edge.server.closeAllConnections(), EDGE_DRAIN_MS);
  try {
    await edge.close();
  } finally {
    clearTimeout(timer);
  }
}
