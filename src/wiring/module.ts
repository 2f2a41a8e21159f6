/**
 * How a module plugs into a node (the list is wiring/modules.ts). The node builds each
 * module once at start with the runtime's ports; the module hands back the actor kinds it
 * defines (registered on every node's kernel), its HTTP routes and optional lifecycle
 * hooks. A connector module also hands back its driver (used by the install actor); a
 * service module (the install actors, dead letters) is built after the connectors, with
 * their drivers and the node's ingest committer, change feed and effect runner. Module
 * code reaches NATS only through these ports (ARCHITECTURE.md: connector code knows nothing
 * of NATS).
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { EdgeContext } from '../edge/context.js';
import type { Logger } from '../log.js';
import type { ActorKind } from '../runtime/actor-definition.js';
import type { ActorKey } from '../runtime/names.js';
import type { ActorAsk, IngestEvent, KvPort } from '../runtime/ports.js';
import type { CredentialCipher } from '../store/credential-cipher.js';
import type { ConnectorId } from '../store/installs.js';
import type { ConnectorDriver, DriverRegistry } from '../connectors/driver.js';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { EffectRunner } from '../effects/effect-runner.js';
import type { ChangeFeed } from '../graph/change-feed.js';
import type { FeedWaker } from '../runtime/feed-notices.js';
import type { IngestCommitter } from '../ingest/commit.js';
import type { RuntimeMetrics } from '../runtime/metrics.js';
import type { Names } from '../runtime/names.js';
import type { Seal } from '../runtime/seal.js';

export interface ModuleDeps {
  config: Readonly<Config>;
  log: Logger;
  pool: pg.Pool;
  /**
   * For what a webhook or event request waits on before it answers (fan-out lookups):
   * every connection and query gives up after 2 s (INTERFACE §9.3), so the route answers
   * 503 and the platform retries, instead of hanging.
   */
  requestPool: pg.Pool;
  cipher: CredentialCipher;
  /** Request/reply to any actor in the cluster (routes to its shard's owner). */
  actors: ActorAsk;
  /** Durable publish into the ingest stream; resolves once JetStream acknowledged. */
  publish(event: IngestEvent): Promise<{ duplicate: boolean }>;
  /** Backfill cursors: values must stay under 100 KB (spec §8). */
  cursors: KvPort;
  /** Short-lived keys (TTL of the bucket: 10 minutes). */
  dedup: KvPort;
  shardOf(key: ActorKey): number;
  /** The node's metrics registry, for a module's own counters (absent in route-only tests). */
  metrics?: Registry;
}

/** What every module plugs into a node. */
export interface NodeModule {
  /** Names the module in logs: a connector's id, or the service module's name. */
  id: string;
  actors: ActorKind[];
  /** Routes mounted at the root of the edge (full paths, e.g. `/api/v1/connectors/chatapp/events`). */
  routes: FastifyPluginAsync<EdgeContext> | null;
  /** Runs on nodes with the edge role (e.g. the Socket Mode client). */
  startEdge?(): Promise<void>;
  stopEdge?(): Promise<void>;
  /**
   * Called on the node that just acquired a shard, after its work started, and once a
   * minute for every shard it holds (src/node/resume-sweep.ts): resume actors that must run
   * without a request and whose key is in one of `shards` (backfill walkers, indexer
   * sessions, reconciliation). Must be idempotent: a resume of an actor with a tick pending
   * changes nothing.
   */
  resumeShards?(shards: ReadonlySet<number>): Promise<void>;
}

interface ConnectorModule extends NodeModule {
  id: ConnectorId;
  /** Null while the connector is not enabled by settings. */
  driver: ConnectorDriver | null;
}

export type ModuleFactory = (deps: ModuleDeps) => ConnectorModule;

/** What a service module gets besides the ports: the node's own parts, built before it. */
interface ServiceDeps extends ModuleDeps {
  /** The enabled connectors' drivers. */
  drivers: DriverRegistry;
  /** The node's one ingest committer (install actors share its transactions). */
  committer: IngestCommitter;
  feed: ChangeFeed;
  /** INTERFACE §10.1: wakes feed readers (webhook actors) when their tenant's feed advanced. */
  feedNotices: FeedWaker;
  /** Runs the side effects of committed events; null on a node without the actors role. */
  effects: EffectRunner | null;
  runtimeMetrics: RuntimeMetrics;
  /** The durable ingest path, for what puts events back on it (dead-letter replay). */
  ingest: { js: JetStreamClient; names: Names; seal: Seal };
}

export type ServiceModuleFactory = (deps: ServiceDeps) => NodeModule;
