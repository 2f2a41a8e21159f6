/**
 * One node of the cluster (INTERFACE §1 `serve`): an edge (Fastify) and/or an actor host
 * (shard owner) against one NATS and one Postgres. Every node runs this same code; the
 * operator scales by starting more of them.
 *
 * `startNode` reads as its steps, each a function that returns what the next needs:
 * settings → Postgres (migrations under an advisory lock) → NATS (version check, ingest
 * stream, KV buckets) → metrics → modules (wiring/modules.ts: connectors, then the service
 * modules) → actor host (kernel; shard leases, each owned shard serving actor requests and
 * running its ingest consumer) → edge (listen last, so /readyz never says yes too early) →
 * ops listeners. Each step records what it started; a failed start undoes it and a stop
 * runs it in reverse (node/undo.ts), releasing shard leases at once so survivors take over
 * without waiting for the lease TTL.
 */
import type { FastifyInstance } from 'fastify';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from './config.js';
import type { EffectTimings } from './effects/effect-retry.js';
import type { Logger } from './log.js';
import { names as makeNames } from './runtime/names.js';
import { Router } from './runtime/router.js';
import { openReplayBuckets, withdrawer } from './runtime/replay-guard.js';
import { createSeal } from './runtime/seal.js';
import type { ShardManager } from './runtime/shard-manager.js';
import type { MasterKeys } from './store/credential-cipher.js';
import { loadKeyring } from './store/data-keys.js';
import { startActorHost } from './node/actor-host.js';
import { buildNodeEdge, listenNodeEdge } from './node/edge.js';
import { openMetrics } from './node/metrics.js';
import { buildModules } from './node/modules.js';
import { openNodeNats } from './node/nats-setup.js';
import { startOpsListeners } from './node/ops-listeners.js';
import { openPools } from './node/postgres.js';
import { LivenessProbe } from './runtime/liveness-probe.js';
import { warnIncompleteConnectors } from './node/preflight.js';
import { nodeReadiness } from './node/readiness.js';
import { stopAll, undoAll, type Undo } from './node/undo.js';
import { flushTracing } from './telemetry/tracing.js';

export type Role = 'edge' | 'actors';

export interface RunningNode {
  url: string | null;
  nodeId: string;
  stop(): Promise<void>;
  edge: FastifyInstance | null;
  shards: ShardManager | null;
  nc: NatsConnection;
}

type StartOptions = {
  roles: Role[];
  log: Logger;
  effectTimings?: Partial<EffectTimings>;
  /** Period of the resume sweep (resume-sweep.ts); tests shorten it. */
  resumeSweepMs?: number;
};

/**
 * INTERFACE §9.1: a node that cannot start (port in use, Postgres or NATS unreachable)
 * stops what it had started and throws one line; it never keeps running half-started.
 */
export async function startNode(config: Readonly<Config>, opts: StartOptions): Promise<RunningNode> {
  const started: Undo = [];
  try {
    return await startSteps(config, opts, started);
  } catch (err) {
    await undoAll(started);
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new Error(`cannot start: ${message}`, { cause: err });
  }
}

async function startSteps(config: Readonly<Config>, opts: StartOptions, started: Undo): Promise<RunningNode> {
  const { log } = opts;
  const roles = new Set(opts.roles);
  const hostsActors = roles.has('actors');
  const { masterKeys, seal } = checkSettings(config, log);
  const names = makeNames(config.namespace);

  const pools = await openPools(config, log, started);
  // Issue 32: credentials and old-style API-key hashes under data keys, so nodes on either master key agree.
  const keyring = await loadKeyring(pools.pool, masterKeys);
  const nats = await openNodeNats(config, names, log, started);
  const { registry, runtime: metrics } = openMetrics(config, pools.pool, log, started);
  // INTERFACE §9.3: a request awaiting an actor answers 503 when NATS or Postgres goes silent meanwhile.
  const dependencies = [new LivenessProbe('Postgres', () => pools.probePool.query('select 1'))];
  // INTERFACE §8.24: an attempt no node admitted (its node died as it arrived) is withdrawn and sent again.
  const withdraw = withdrawer(await openReplayBuckets(nats.bucket, names));
  const router = new Router({ nc: nats.nc, names, shards: config.shards, log, seal, dependencies, withdraw });
  const { effectTimings, resumeSweepMs } = opts;
  const modulesParts = { config, log, pools, nats, names, seal, masterKeys: keyring, router, metrics, registry };
  const built = await buildModules({ ...modulesParts, hostsActors, effectTimings });
  const { modules } = built;
  const ready = await nodeReadiness({ config, names, nats, requestPool: pools.requestPool, hostsActors });
  // The edge is built before the node takes shard leases (building it is seconds of synchronous
  // work on a loaded machine), and listens after. Its parts stop after the actor host's, as if
  // started after it: a stopping node closes its edge first.
  const edgeParts: Undo = [];
  let builtEdge: FastifyInstance | null = null;
  let shards: ShardManager | null;
  try {
    if (roles.has('edge')) {
      const edgeP = { config, log, pools, masterKeys: keyring, router, ready, registry, modules };
      builtEdge = await buildNodeEdge({ ...edgeP, feedNotices: built.feedNotices }, edgeParts);
    }
    ({ shards } = await startActorHost(
      { config, log, hostsActors, pool: pools.pool, nats, names, seal, registry, metrics, resumeSweepMs, ...built },
      started,
    ));
  } catch (err) {
    await undoAll(edgeParts);
    throw err;
  }
  started.push(...edgeParts);
  const edge = builtEdge ? await listenNodeEdge(builtEdge, { config, modules }, started) : null;
  // Probes and scraping reach every node: one without the edge answers the ops routes alone.
  const listeners = await startOpsListeners(config, registry, { hasEdge: edge !== null, ready });
  started.push({ name: 'ops listeners', fn: () => listeners.close() });
  const url = edge?.url ?? listeners.url;
  log.info({ url, roles: [...roles] }, 'node ready');

  let stopping: Promise<void> | null = null;
  const stop = () => (stopping ??= stopNode(log, started));
  return { url, nodeId: config.nodeId, stop, edge: edge?.edge ?? null, shards, nc: nats.nc };
}

/** The settings a node cannot start without, and the seal of what it puts on NATS. */
function checkSettings(config: Readonly<Config>, log: Logger) {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  if (!config.masterKey) throw new Error('SERVICE_MASTER_KEY is required');
  const masterKeys: MasterKeys = { current: config.masterKey, previous: config.security.previousMasterKeys };
  warnIncompleteConnectors(config, log);
  // INTERFACE §9.4: what this deployment puts on NATS is sealed, and only sealed messages are acted on.
  return { masterKeys, seal: createSeal([masterKeys.current, ...masterKeys.previous]) };
}

/** A graceful stop: what started, in reverse (the ops listeners and edge first, Postgres last). */
async function stopNode(log: Logger, started: Undo): Promise<void> {
  log.info('node stopping');
  await stopAll(log, started);
  // INTERFACE §10.7: the spans of the last work leave before the process does.
  await stopAll(log, [{ name: 'traces', fn: () => flushTracing() }]);
  log.info('node stopped');
}
