/**
 * How a connector plugs into a node. The node builds each module once at start with the
 * runtime's ports; the module hands back its driver (used by the install actor), the
 * actor kinds it defines (registered on every node's kernel), its HTTP routes (OAuth,
 * webhooks, admin install) and optional lifecycle hooks. Connector code reaches NATS only
 * through these ports (ARCHITECTURE.md: connector code knows nothing of NATS).
 */
import type { FastifyPluginAsync } from 'fastify';
import type pg from 'pg';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { EdgeContext } from '../edge/context.js';
import type { Logger } from '../log.js';
import type { ActorKind } from '../runtime/kernel.js';
import type { ActorKey } from '../runtime/names.js';
import type { ActorAsk, IngestEvent, KvPort } from '../runtime/ports.js';
import type { CredentialCipher } from '../store/credential-cipher.js';
import type { ConnectorId } from '../connectors/catalog.js';
import type { ConnectorDriver } from '../connectors/driver.js';

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

export interface ConnectorModule {
  id: ConnectorId;
  /** Null while the connector is not enabled by settings. */
  driver: ConnectorDriver | null;
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

export type ModuleFactory = (deps: ModuleDeps) => ConnectorModule;
