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
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { Config } from './config.js';
import { EffectRunner, type EffectTimings } from './actors/effect-runner.js';
import { installActor } from './actors/install.js';
import { installWritesActor } from './actors/install-writes.js';
import type { ConnectorDriver } from './connectors/driver.js';
import type { ConnectorModule, ModuleDeps } from './wiring/module.js';
import { MODULES } from './wiring/modules.js';
import type { ConnectorId } from './connectors/catalog.js';
import { Gauge } from 'prom-client';
import { buildEdge } from './edge/app.js';
import { createTenantAuth } from './edge/auth.js';
import { serveMetrics } from './edge/routes/ops.js';
import { deadLetterRoutes } from './edge/routes/dead-letters.js';
import { createEdgeMetrics, createMetricsRegistry } from './edge/metrics.js';
import { createChangeFeed } from './graph/change-feed.js';
import { projectEvent } from './graph/project.js';
import type { Logger } from './log.js';
import { ensureIngestStream, IngestPublisher } from './runtime/ingest-stream.js';
import { Kernel } from './runtime/kernel.js';
import { kvPort } from './runtime/kv-port.js';
import { names as makeNames, installKey, natsDescription, parseKey, shardOf } from './runtime/names.js';
import { checkServerVersion, connectNats, openKv } from './runtime/nats.js';
import { registerRuntimeMetrics, type RuntimeMetrics } from './runtime/metrics.js';
import { observeUpstreamCalls } from './connectors/upstream-metrics.js';
import { registerInstallMetrics } from './store/install-metrics.js';
import { Router } from './runtime/router.js';
import { createSeal } from './runtime/seal.js';
import { ShardHost } from './runtime/shard-host.js';
import { ingestAttempts } from './runtime/ingest-attempts.js';
import { listKeys } from './runtime/shard-kv.js';
import { ShardManager } from './runtime/shard-manager.js';
import { CredentialCipher, type MasterKeys } from './store/credential-cipher.js';
import { listenNotify } from './store/listen-notify.js';
import { tenantScopedPool } from './store/tenant-scope.js';
import { createPool } from './store/db.js';
import { migrate } from './store/migrate.js';
import { pgBlobPort, pgDeadLetterPort } from './store/runtime-ports.js';
import { findTenantByApiKey } from './store/tenants.js';
import { replayDeadLetters } from './wiring/replay-dead-letters.js';

export type Role = 'edge' | 'actors';

export interface RunningNode {
  url: string | null;
  nodeId: string;
  stop(): Promise<void>;
  edge: FastifyInstance | null;
  shards: ShardManager | null;
  nc: NatsConnection;
}

/** Generous: the ingest handler's Postgres transaction plus a projection. */
const INGEST_DEADLINE_MS = 60_000;
/** spec §2.3: backfill cursors stay under the record store's 100 KB row ceiling. */
const CURSOR_MAX_BYTES = 100 * 1024;
const DEDUP_TTL_MS = 10 * 60_000;
/** A handler that ignores its abort signal must not hold a stopping node forever. */
const STOP_STEP_TIMEOUT_MS = 20_000;
/** INTERFACE §9.3: a request waits at most 2 s for Postgres or NATS, then answers 503. */
const REQUEST_WAIT_MS = 2_000;
/** INTERFACE §9.3: `/readyz` answers within 3 s. */
const READY_BUDGET_MS = 2_500;
/** INTERFACE §9.1: a failed start exits within 15 s, so each undo step gets a few seconds at most. */
const UNDO_STEP_TIMEOUT_MS = 3_000;

type StartOptions = { roles: Role[]; log: Logger; effectTimings?: Partial<EffectTimings> };
type Undo = Array<{ name: string; fn: () => Promise<unknown> }>;

/**
 * INTERFACE §9.1: a node that cannot start (port in use, Postgres or NATS unreachable)
 * stops what it had started and throws one line; it never keeps running half-started.
 */
export async function startNode(config: Readonly<Config>, opts: StartOptions): Promise<RunningNode> {
  const undo: Undo = [];
  try {
    return await startParts(config, opts, undo);
  } catch (err) {
    for (const u of undo.reverse()) {
      await Promise.race([
        u.fn().catch(() => undefined),
        new Promise((r) => setTimeout(r, UNDO_STEP_TIMEOUT_MS).unref()),
      ]);
    }
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

  if (config.chatapp.enabled && config.chatapp.transport === 'none') {
    // Installs and backfill work without one, but no live event would ever arrive.
    log.warn(
      { settings: ['CHATAPP_SIGNING_SECRET', 'CHATAPP_USE_SOCKET_MODE + CHATAPP_APP_TOKEN'] },
      'the chat connector has no inbound transport: set CHATAPP_SIGNING_SECRET (HTTP events) or Socket Mode, or installs will never receive live events',
    );
  }
  if (config.codehost.enabledFlag && config.codehost.missing.length > 0) {
    // INTERFACE §8.12: start, answer 501 on the webhook route, and say what is missing.
    log.warn(
      { missing: config.codehost.missing },
      'CODEHOST_CONNECTOR_ENABLED=true but settings are missing; the code-host connector stays off',
    );
  }

  // The cross-tenant pool (ingest, fan-out, walkers, actors); tenant routes use `tenantDb`.
  const onIdleError = (err: Error) => log.warn({ err }, 'idle Postgres client lost');
  const pool = createPool(config.databaseUrl, { scope: 'system', onIdleError });
  // INTERFACE §9.3: what a request waits on gives up after 2 s, also when the server is silent.
  const requestPool = createPool(config.databaseUrl, {
    scope: 'system',
    max: 10,
    connectionTimeoutMs: REQUEST_WAIT_MS,
    queryTimeoutMs: REQUEST_WAIT_MS,
    statementTimeoutMs: REQUEST_WAIT_MS,
    onIdleError,
  });
  undo.push({ name: 'postgres', fn: () => Promise.all([pool.end(), requestPool.end()]) });
  // Migrations run as the schema owner (DATABASE_MIGRATE_URL) while the node itself serves
  // as the application role, which row-level security binds (README "Security model").
  const migrator = config.security.migrateDatabaseUrl
    ? createPool(config.security.migrateDatabaseUrl, { max: 1, onIdleError })
    : pool;
  await migrate(migrator)
    .catch((err: unknown) => {
      throw new Error(`Postgres is unreachable or refused the migration: ${(err as Error).message}`, { cause: err });
    })
    .finally(() => (migrator === pool ? undefined : migrator.end()));

  const nc = await connectNats({ servers: config.natsServers, name: config.nodeId, log, auth: config.nats });
  undo.push({ name: 'nats', fn: () => nc.close() });
  await checkServerVersion(nc);
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await ensureIngestStream(jsm, n, { replicas: config.nats.replicas, maxBytes: config.nats.ingestMaxBytes });
  // INTERFACE §9.2: every bucket gets the configured replicas and a description.
  const kvOf = (name: string) => ({ replicas: config.nats.replicas, description: natsDescription(n.ns, name) });
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
  const router = new Router({ nc, names: n, shards: config.shards, log, seal });

  const deps: ModuleDeps = {
    config,
    log,
    pool,
    requestPool,
    cipher: CredentialCipher.fromMasterKeys(masterKeys),
    actors: router,
    publish: (event) => publisher.publish(event),
    cursors: kvPort(await openKv(nc, n.cursorBucket, { maxValueSize: CURSOR_MAX_BYTES, ...kvOf(n.cursorBucket) })),
    dedup: kvPort(await openKv(nc, n.dedupBucket, { ttlMs: DEDUP_TTL_MS, ...kvOf(n.dedupBucket) })),
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
  kernel.register(
    installActor({
      pool,
      drivers,
      project: projectEvent,
      onCommitted: feed.publish,
      onDropped: (install, drop) =>
        runtimeMetrics?.ingestDropped.inc({ connector: install.connector_id, tier: String(drop.tier) }),
      shardOf: (installId) => shardOf(installKey(installId), config.shards),
      namespace: config.namespace,
      onEffects: () => effects?.wake(),
      onRefused: (path) => runtimeMetrics?.fenceRefused.inc({ path }),
    }),
  );
  kernel.register(
    installWritesActor({ pool, drivers, onRefused: (path) => runtimeMetrics?.fenceRefused.inc({ path }) }),
  );
  for (const m of modules) for (const def of m.actors) kernel.register(def);

  let host: ShardHost | null = null;
  if (roles.has('actors')) {
    host = new ShardHost({
      nc,
      js,
      jsm,
      names: n,
      log,
      blobs,
      deadLetters: pgDeadLetterPort(pool),
      dispatch: (req) => kernel.dispatch(parseKey(req.key), req.msg, { deadline: req.deadline }),
      deliver: async (event, meta) => {
        const started = performance.now();
        await kernel.dispatch(
          installKey(event.installId),
          { type: 'ingest', event },
          { deadline: Date.now() + INGEST_DEADLINE_MS },
        );
        runtimeMetrics?.ingestCommit.observe((performance.now() - started) / 1000);
        runtimeMetrics?.eventToCommit.observe(Math.max(0, Date.now() - meta.storedAtMs) / 1000);
      },
      seal,
      onRefused: (path) => runtimeMetrics?.fenceRefused.inc({ path }),
      attempts: ingestAttempts(deps.dedup, n.ingestStream),
      passivate: (shard) => kernel.passivate((key) => shardOf(key, config.shards) === shard),
      onAcquired: async (shard) => {
        for (const m of modules) await m.onShardAcquired?.(shard);
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
  runtimeMetrics = registerRuntimeMetrics(registry, { kernel, shards, host, jsm, names: n });
  const deadLetterCount = pgDeadLetterPort(pool).count;
  new Gauge({
    name: 'connector_service_dead_letters',
    help: 'Dead letters waiting for an operator, whole cluster (INTERFACE §9.1)',
    registers: [registry],
    async collect() {
      this.set(await deadLetterCount());
    },
  });
  undo.push({ name: 'kernel', fn: () => kernel.stop() });
  undo.push({ name: 'shards', fn: async () => shards?.stop() });
  await shards?.start();
  effects?.start();
  undo.push({ name: 'effects', fn: async () => effects?.stop() });

  const leases = await openKv(nc, n.leaseBucket, { ttlMs: config.leaseTtlMs, ...kvOf(n.leaseBucket) });
  // INTERFACE §9.3: this node's own roles, each check bounded; an edge-only node is ready
  // when it reaches NATS and Postgres, an actor host also when every shard has an owner.
  const ready = async () => {
    const bounded = (p: Promise<unknown>) =>
      Promise.race([
        p.then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((r) => setTimeout(() => r(false), READY_BUDGET_MS).unref()),
      ]);
    const [natsOk, postgres, shardsOk] = await Promise.all([
      bounded(nc.isClosed() ? Promise.reject(new Error('closed')) : nc.rtt()),
      bounded(requestPool.query('select 1')),
      roles.has('actors')
        ? bounded(
            listKeys(leases).then((k) => {
              if (k.length < config.shards) throw new Error('shards without an owner');
            }),
          )
        : Promise.resolve(null),
    ]);
    const checks: Record<string, boolean> = { nats: natsOk, postgres };
    if (shardsOk !== null) checks.shards = shardsOk;
    return { ready: Object.values(checks).every(Boolean), checks };
  };

  let edge: FastifyInstance | null = null;
  let url: string | null = null;
  let keysHeard: { stop(): Promise<void> } | null = null;
  let metricsServer: { close(): Promise<void> } | null = null;
  let tenantDb: ReturnType<typeof createPool> | null = null;
  if (roles.has('edge')) {
    const resolveTenant = (raw: string) => findTenantByApiKey(requestPool, masterKeys, raw);
    // INTERFACE §9.1: a key revoked on any node is refused here within 5 s.
    const auth = createTenantAuth(resolveTenant);
    keysHeard = listenNotify(pool, 'api_keys_changed', log, { notified: auth.invalidate, live: auth.setLive });
    undo.push({ name: 'key announcements', fn: async () => keysHeard?.stop() });
    tenantDb = tenantScopedPool(
      createPool(config.databaseUrl, {
        max: 5,
        applicationName: 'connector-service-tenant',
        connectionTimeoutMs: REQUEST_WAIT_MS,
        queryTimeoutMs: REQUEST_WAIT_MS,
        statementTimeoutMs: REQUEST_WAIT_MS,
        onIdleError,
      }),
    );
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
    if (config.security.metricsPort !== null) {
      metricsServer = await serveMetrics(registry, { host: config.host, port: config.security.metricsPort });
    }
    for (const m of modules) await m.startEdge?.();
    log.info({ url, roles: [...roles] }, 'node ready');
  }

  const step = async (name: string, fn: () => Promise<unknown>) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        log.warn({ step: name }, 'stop step timed out; going on');
        resolve();
      }, STOP_STEP_TIMEOUT_MS);
    });
    await Promise.race([fn().catch((err: unknown) => log.warn({ err, step: name }, 'stop step failed')), timeout]);
    clearTimeout(timer);
  };
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('node stopping');
      if (edge) {
        for (const m of modules) await step('connector edge', async () => m.stopEdge?.());
        await step('edge', () => edge!.close());
        await step('metrics', async () => metricsServer?.close());
        await step('key announcements', async () => keysHeard?.stop());
      }
      await step('effects', async () => effects?.stop());
      await step('shards', async () => shards?.stop());
      await step('kernel', () => kernel.stop());
      await step('nats', () => nc.drain());
      await step('postgres', () => Promise.all([pool.end(), requestPool.end()]));
      await step('postgres (tenant routes)', async () => tenantDb?.end());
      stopUpstreamMetrics();
      log.info('node stopped');
    })());

  return { url, nodeId: config.nodeId, stop, edge, shards, nc };
}
