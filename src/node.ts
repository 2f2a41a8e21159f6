/**
 * One node of the cluster (INTERFACE §1 `serve`): an edge (Fastify) and/or an actor host
 * (shard owner) against one NATS and one Postgres. Every node runs this same code; the
 * operator scales by starting more of them.
 *
 * Start order: Postgres (migrations under an advisory lock) → NATS (version check, ingest
 * stream, KV buckets) → connector modules → actor host (shard leases; each owned shard
 * serves actor requests and runs its ingest consumer) → edge (listen last, so /readyz
 * never says yes too early). Stop order is the reverse, and releases shard leases at once
 * so survivors take over without waiting for the lease TTL.
 */
import type { FastifyInstance } from 'fastify';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { Config } from './config.js';
import { EffectRunner, type EffectTimings } from './actors/effect-runner.js';
import { installActor } from './actors/install.js';
import { installWritesActor } from './actors/install-writes.js';
import type { ConnectorDriver } from './connectors/driver.js';
import type { ConnectorModule, ModuleDeps } from './wiring/module.js';
import { MODULES } from './wiring/modules.js';
import type { ConnectorId } from './connectors/catalog.js';
import { buildEdge } from './edge/app.js';
import { createTenantAuth } from './edge/auth.js';
import { startOpsListeners } from './node/ops-listeners.js';
import { deadLetterRoutes } from './edge/routes/dead-letters.js';
import { createEdgeMetrics, createMetricsRegistry } from './edge/metrics.js';
import { createChangeFeed } from './graph/change-feed.js';
import type { Logger } from './log.js';
import { IngestPublisher } from './ingest/publish.js';
import { Kernel } from './runtime/kernel.js';
import { kvPort } from './runtime/kv-port.js';
import { names as makeNames, parseKey, shardOf } from './runtime/names.js';
import { registerRuntimeMetrics, type RuntimeMetrics } from './runtime/metrics.js';
import { observeUpstreamCalls } from './connectors/upstream-metrics.js';
import { registerInstallMetrics } from './store/install-metrics.js';
import { registerEffectMetrics } from './store/effect-metrics.js';
import { registerDeadLetterMetrics } from './store/dead-letter-metrics.js';
import { Router } from './runtime/router.js';
import { createSeal } from './runtime/seal.js';
import { ShardHost } from './runtime/shard-host.js';
import { ingestAttempts } from './ingest/attempts.js';
import { NodeIngest } from './ingest/node-ingest.js';
import { ShardManager } from './runtime/shard-manager.js';
import { CredentialCipher, type MasterKeys } from './store/credential-cipher.js';
import { listenNotify } from './store/listen-notify.js';
import { pgBlobPort, pgDeadLetterPort, pgStoredEventsPort } from './store/runtime-ports.js';
import { findTenantByApiKey } from './store/tenants.js';
import { replayDeadLetters } from './wiring/replay-dead-letters.js';
import { openPools, openTenantPool, REQUEST_WAIT_MS, type Pool } from './node/postgres.js';
import { warnIncompleteConnectors } from './node/preflight.js';
import { deliverToInstallActor, nodeIngestCommitter } from './ingest/deliver.js';
import { openNodeNats } from './node/nats-setup.js';
import { modulesSweep } from './node/resume-sweep.js';
import { readinessCheck } from './node/readiness.js';
import { keyLister } from './runtime/kv-keys.js';
import { stopInOrder } from './node/stop-in-order.js';
import { undoAll, type Undo } from './node/undo.js';

export type Role = 'edge' | 'actors';

export interface RunningNode {
  url: string | null;
  nodeId: string;
  stop(): Promise<void>;
  edge: FastifyInstance | null;
  shards: ShardManager | null;
  nc: NatsConnection;
}

/** spec §2.3: backfill cursors stay under the record store's 100 KB row ceiling. */
const CURSOR_MAX_BYTES = 100 * 1024;
const DEDUP_TTL_MS = 10 * 60_000;

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
  const undo: Undo = [];
  try {
    return await startParts(config, opts, undo);
  } catch (err) {
    await undoAll(undo);
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new Error(`cannot start: ${message}`, { cause: err });
  }
}

async function startParts(config: Readonly<Config>, opts: StartOptions, undo: Undo): Promise<RunningNode> {
  const { log } = opts;
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  if (!config.masterKey) throw new Error('SERVICE_MASTER_KEY is required');
  const masterKeys: MasterKeys = { current: config.masterKey, previous: config.security.previousMasterKeys };
  // INTERFACE §9.4: what this deployment puts on NATS is sealed, and only sealed messages are acted on.
  const seal = createSeal([masterKeys.current, ...masterKeys.previous]);
  const roles = new Set(opts.roles);
  const n = makeNames(config.namespace);

  warnIncompleteConnectors(config, log);

  // The cross-tenant pool (ingest, fan-out, walkers, actors); tenant routes use `tenantDb`.
  const { pool, requestPool, onIdleError } = await openPools(config, log, undo);

  const { nc, jsm, js, bucket } = await openNodeNats(config, n, log, undo);
  const blobs = pgBlobPort(pool);
  const publisher = new IngestPublisher({
    // INTERFACE §9.3: the publish a webhook awaits gives up after 2 s (503, the platform retries).
    js: jetstream(nc, { timeout: REQUEST_WAIT_MS }),
    names: n,
    shards: config.shards,
    blobs: pgBlobPort(requestPool),
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
    seal,
    observe: (connector, seconds, acked) => {
      if (acked) runtimeMetrics?.ingestPublish.observe({ connector }, seconds);
      else runtimeMetrics?.ingestPublishFailures.inc({ connector });
    },
  });
  const registry = createMetricsRegistry({ defaults: true });
  const stopUpstreamMetrics = observeUpstreamCalls(registry, config);
  registerInstallMetrics(registry, pool);
  registerEffectMetrics(registry, pool, config.namespace, log);
  const router = new Router({ nc, names: n, shards: config.shards, log, seal });

  const deps: ModuleDeps = {
    config,
    log,
    pool,
    requestPool,
    cipher: CredentialCipher.fromMasterKeys(masterKeys),
    actors: router,
    publish: (event) => publisher.publish(event),
    cursors: kvPort(await bucket(n.cursorBucket, { maxValueSize: CURSOR_MAX_BYTES })),
    dedup: kvPort(await bucket(n.dedupBucket, { ttlMs: DEDUP_TTL_MS })),
    shardOf: (key) => shardOf(key, config.shards),
    metrics: registry,
  };
  const modules: ConnectorModule[] = MODULES.map((make) => make(deps));
  const drivers = new Map<ConnectorId, ConnectorDriver>();
  for (const m of modules) if (m.driver) drivers.set(m.id, m.driver);

  const feed = createChangeFeed(nc, n, log);
  const kernel = new Kernel({ log });
  let runtimeMetrics: RuntimeMetrics | null = null;
  let shards: ShardManager | null = null;
  // INTERFACE §9.4: effects of events run on their shard's owner, off the ingest path.
  const effects = roles.has('actors')
    ? new EffectRunner({
        pool,
        drivers,
        log,
        namespace: config.namespace,
        ownedShards: () => shards?.owned() ?? [],
        timings: opts.effectTimings,
        onOutcome: (connector, kind, outcome) => {
          const m = runtimeMetrics;
          if (!m) return;
          const c = outcome === 'done' ? m.effectsDone : outcome === 'failed' ? m.effectFailures : m.effectsGivenUp;
          c.inc({ connector, kind });
        },
      })
    : null;
  const committer = nodeIngestCommitter(config, pool, drivers, log, () => runtimeMetrics);
  kernel.register(
    installActor({
      pool,
      drivers,
      commit: (part, o) => committer.commit(part, o),
      onCommitted: feed.publish,
      onDropped: (install, drop) =>
        runtimeMetrics?.ingestDropped.inc({ connector: install.connector_id, tier: String(drop.tier) }),
      onEffects: () => effects?.wake(),
      onRefused: (path) => runtimeMetrics?.fenceRefused.inc({ path }),
    }),
  );
  kernel.register(
    installWritesActor({ pool, drivers, onRefused: (path) => runtimeMetrics?.fenceRefused.inc({ path }) }),
  );
  for (const m of modules) for (const def of m.actors) kernel.register(def);

  let ingest: NodeIngest | null = null;
  if (roles.has('actors')) {
    ingest = new NodeIngest({
      nc,
      js,
      jsm,
      names: n,
      blobs,
      deadLetters: pgDeadLetterPort(pool),
      deliver: deliverToInstallActor(kernel, () => runtimeMetrics),
      seal,
      onRefused: () => runtimeMetrics?.fenceRefused.inc({ path: 'ingest' }),
      attempts: ingestAttempts(deps.dedup, n.ingestStream),
      storedEvents: pgStoredEventsPort(pool),
      maxInFlight: config.ingestMaxInFlight,
    });
    const host = new ShardHost({
      nc,
      names: n,
      log,
      dispatch: (req) => kernel.dispatch(parseKey(req.key), req.msg, { deadline: req.deadline }),
      ingest,
      seal,
      onRefused: () => runtimeMetrics?.fenceRefused.inc({ path: 'actor' }),
      passivate: (shard) => kernel.passivate((key) => shardOf(key, config.shards) === shard),
      onAcquired: async (shard) => {
        for (const m of modules) await m.resumeShards?.(new Set([shard]));
      },
    });
    shards = new ShardManager({
      nc,
      names: n,
      nodeId: config.nodeId,
      shards: config.shards,
      leaseTtlMs: config.leaseTtlMs,
      log,
      listener: host,
      replicas: config.nats.replicas,
    });
  }
  runtimeMetrics = registerRuntimeMetrics(registry, { kernel, shards, ingest, committer, jsm, names: n });
  registerDeadLetterMetrics(registry, pool);
  undo.push({ name: 'kernel', fn: () => kernel.stop() });
  undo.push({ name: 'shards', fn: async () => shards?.stop() });
  await shards?.start();
  effects?.start();
  undo.push({ name: 'effects', fn: async () => effects?.stop() });
  const sweep = shards ? modulesSweep(modules, shards, log, opts.resumeSweepMs) : null;
  sweep?.start();
  undo.push({ name: 'resume sweep', fn: async () => sweep?.stop() });

  // Requests of its own bounded below /readyz's 3 s (INTERFACE §9.3).
  const readyTimeoutMs = 2_000;
  const leases = await bucket(n.leaseBucket, { ttlMs: config.leaseTtlMs, timeoutMs: readyTimeoutMs });
  const ready = readinessCheck({
    nc,
    requestPool,
    leaseKeys: roles.has('actors') ? keyLister(nc, leases, n.leaseBucket, readyTimeoutMs) : null,
    shards: config.shards,
  });

  let edge: FastifyInstance | null = null;
  let url: string | null = null;
  let keysHeard: { stop(): Promise<void> } | null = null;
  let tenantDb: Pool | null = null;
  if (roles.has('edge')) {
    const resolveTenant = (raw: string) => findTenantByApiKey(requestPool, masterKeys, raw);
    // INTERFACE §9.1: a key revoked on any node is refused here within 5 s.
    const auth = createTenantAuth(resolveTenant);
    keysHeard = listenNotify(pool, 'api_keys_changed', log, { notified: auth.invalidate, live: auth.setLive });
    undo.push({ name: 'key announcements', fn: async () => keysHeard?.stop() });
    tenantDb = await openTenantPool(config.databaseUrl, pool, onIdleError, log);
    undo.push({ name: 'postgres (tenant routes)', fn: async () => tenantDb?.end() });
    edge = await buildEdge({
      config,
      log,
      db: requestPool,
      tenantDb,
      actors: router,
      resolveTenant,
      auth,
      ready,
      metrics: createEdgeMetrics(registry),
      plugins: [
        ...modules.flatMap((m) => (m.routes ? [{ plugin: m.routes }] : [])),
        { plugin: deadLetterRoutes((sel) => replayDeadLetters({ db: pool, js, names: n, seal }, sel)) },
      ],
    });
    undo.push({ name: 'edge', fn: () => edge!.close() });
    url = await edge.listen({ host: config.host, port: config.port });
    for (const m of modules) await m.startEdge?.();
  }
  // Probes and scraping reach every node: one without the edge answers the ops routes alone.
  const listeners = await startOpsListeners(config, registry, { hasEdge: edge !== null, ready });
  undo.push({ name: 'ops listeners', fn: () => listeners.close() });
  url ??= listeners.url;
  log.info({ url, roles: [...roles] }, 'node ready');

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= stopInOrder(log, {
      edge,
      modules,
      metricsServer: listeners,
      keysHeard,
      sweep,
      effects,
      shards,
      kernel,
      nc,
      pools: [pool, requestPool, tenantDb],
      stopUpstreamMetrics,
    }));

  return { url, nodeId: config.nodeId, stop, edge, shards, nc };
}
