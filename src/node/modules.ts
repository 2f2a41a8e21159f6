/**
 * A node's modules (wiring/modules.ts lists them): the connectors first, from the runtime's
 * ports, then the service modules, with the connectors' drivers and the parts they hand
 * work to (the ingest committer, the change feed, the effect runner), built here before
 * any of them runs.
 */
import { jetstream } from '@nats-io/jetstream';
import type { Config } from '../config.js';
import type { EffectTimings } from '../effects/effect-retry.js';
import { EffectRunner } from '../effects/effect-runner.js';
import type { ConnectorId } from '../store/installs.js';
import type { ConnectorDriver, DriverRegistry } from '../connectors/driver.js';
import { createChangeFeed } from '../graph/change-feed.js';
import { FeedNotices } from '../runtime/feed-notices.js';
import type { IngestCommitter } from '../ingest/commit.js';
import { nodeIngestCommitter } from '../ingest/deliver.js';
import { IngestPublisher } from '../ingest/publish.js';
import type { Logger } from '../log.js';
import type { RuntimeMetrics } from '../runtime/metrics.js';
import { kvPort } from '../runtime/kv-port.js';
import { shardOf, type Names } from '../runtime/names.js';
import type { Seal } from '../runtime/seal.js';
import type { Router } from '../runtime/router.js';
import { CredentialCipher, type MasterKeys } from '../store/credential-cipher.js';
import { pgBlobPort } from '../store/runtime-ports.js';
import type { ModuleDeps, NodeModule } from '../wiring/module.js';
import { connectorModules, serviceModules } from '../wiring/modules.js';
import type { NodeNats } from './nats-setup.js';
import { REQUEST_WAIT_MS, type NodePools } from './postgres.js';

/** spec §2.3: backfill cursors stay under the record store's 100 KB row ceiling. */
const CURSOR_MAX_BYTES = 100 * 1024;
const DEDUP_TTL_MS = 10 * 60_000;

export interface ModulesParts {
  config: Readonly<Config>;
  log: Logger;
  pools: NodePools;
  nats: NodeNats;
  names: Names;
  seal: Seal;
  masterKeys: MasterKeys;
  router: Router;
  metrics: RuntimeMetrics;
  registry: ModuleDeps['metrics'];
  /** A node without the actors role runs no effects. */
  hostsActors: boolean;
  effectTimings?: Partial<EffectTimings>;
}

export interface NodeModules {
  modules: NodeModule[];
  deps: ModuleDeps;
  committer: IngestCommitter;
  /** The enabled connectors' drivers. */
  drivers: DriverRegistry;
  /** Started by the actor host, once it owns shards. */
  effects: EffectRunner | null;
  /** INTERFACE §10.1: wakes this node's feed readers when a tenant's feed advanced (ends with the connection). */
  feedNotices: FeedNotices;
}

export async function buildModules(p: ModulesParts): Promise<NodeModules> {
  const { config, log, nats, names: n, seal, metrics } = p;
  const { pool, requestPool } = p.pools;
  const publisher = new IngestPublisher({
    // INTERFACE §9.3: the publish a webhook awaits gives up after 2 s (503, the platform retries).
    js: jetstream(nats.nc, { timeout: REQUEST_WAIT_MS }),
    names: n,
    shards: config.shards,
    blobs: pgBlobPort(requestPool),
    maxPayload: nats.nc.info?.max_payload ?? 1024 * 1024,
    seal,
    observe: (connector, seconds, acked) => {
      if (acked) metrics.ingestPublish.observe({ connector }, seconds);
      else metrics.ingestPublishFailures.inc({ connector });
    },
  });
  const deps: ModuleDeps = {
    config,
    log,
    pool,
    requestPool,
    cipher: CredentialCipher.fromMasterKeys(p.masterKeys),
    actors: p.router,
    publish: (event) => publisher.publish(event),
    cursors: kvPort(await nats.bucket(n.cursorBucket, { maxValueSize: CURSOR_MAX_BYTES })),
    dedup: kvPort(await nats.bucket(n.dedupBucket, { ttlMs: DEDUP_TTL_MS })),
    shardOf: (key) => shardOf(key, config.shards),
    metrics: p.registry,
  };
  const connectors = connectorModules.map((make) => make(deps));
  const drivers = new Map<ConnectorId, ConnectorDriver>();
  for (const m of connectors) if (m.driver) drivers.set(m.id, m.driver);

  const committer = nodeIngestCommitter(config, pool, drivers, log, metrics);
  // INTERFACE §9.4: effects of events run on their shard's owner, off the ingest path.
  const effects = !p.hostsActors
    ? null
    : new EffectRunner({
        pool,
        drivers,
        log,
        namespace: config.namespace,
        timings: p.effectTimings,
        onOutcome: (connector, kind, outcome) => {
          const m = metrics;
          const c = outcome === 'done' ? m.effectsDone : outcome === 'failed' ? m.effectFailures : m.effectsGivenUp;
          c.inc({ connector, kind });
        },
      });
  const feed = createChangeFeed(nats.nc, n, log);
  const feedNotices = new FeedNotices(nats.nc, n, log);
  feedNotices.start();
  // INTERFACE §9.3: the dead-letter replay route waits at most 2 s for JetStream, as publishes do.
  const ingest = { js: jetstream(nats.nc, { timeout: REQUEST_WAIT_MS }), names: n, seal };
  const services = serviceModules.map((make) =>
    make({ ...deps, drivers, committer, feed, feedNotices, effects, runtimeMetrics: metrics, ingest }),
  );
  return { modules: [...connectors, ...services], deps, committer, drivers, effects, feedNotices };
}
