/**
 * Runtime metrics on the node's registry (issue: owned shards, active actors, mailbox
 * depth, consumer lag, ingest and ack latency, redeliveries, dead letters). Gauges read
 * the components' own stats at scrape time, so nothing is double-counted and a scrape
 * costs one consumer-info request per owned shard.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Kernel } from './kernel.js';
import type { Names } from './names.js';
import type { ShardManager } from './shard-manager.js';

export interface RuntimeMetrics {
  /** Time the install actor took to commit one event (handler only). */
  ingestCommit: Histogram;
  /** Events per ingest transaction (group commit). */
  ingestBatchSize: Histogram;
  /** Installs whose events share an ingest transaction (group commit across installs). */
  ingestBatchInstalls: Histogram;
  /** From the stream storing an event to its Postgres commit. */
  eventToCommit: Histogram;
  /** Edge side: publish to JetStream ack, per connector. */
  ingestPublish: Histogram<'connector'>;
  ingestPublishFailures: Counter<'connector'>;
  /** Self-emitted events dropped by a connector's filter, counted after commit (INTERFACE §8.20). */
  ingestDropped: Counter<'connector' | 'tier'>;
  /** Side-effect attempts that failed, and effects given up after 24 h (INTERFACE §9.4). */
  effectFailures: Counter<'connector' | 'kind'>;
  effectsGivenUp: Counter<'connector' | 'kind'>;
  effectsDone: Counter<'connector' | 'kind'>;
  /**
   * INTERFACE §9.4, the NATS fence: messages refused. `path`: `ingest` / `actor` (no valid
   * seal), `install_ingest` / `install_request` (tenant or install not the install's own),
   * `actor_replay` (a sealed actor request delivered a second time, replay-guard.ts).
   */
  fenceRefused: Counter<'path'>;
  /**
   * INTERFACE §10.5: audit entries lost after their action was done: an emit's entry whose
   * receipt transaction failed and whose write alone failed again. `action`: `emit`.
   */
  auditLost: Counter<'action'>;
}

/** What a node's ingest reports (ingest/node-ingest.ts), cumulative across shard moves. */
export interface IngestTotals {
  inFlight: number;
  inFlightBytes: number;
  /** Lanes waiting for room to decode their next batch (ingest/delivery-room.ts). */
  waitingForRoom: number;
  delivered: number;
  redeliveries: number;
  deadLettered: number;
}

/** What the runtime gauges read at scrape time: the parts of a started node. */
export interface ObservedParts {
  kernel: Kernel;
  shards: ShardManager | null;
  /** The node's ingest (ingest/node-ingest.ts), where it consumes: its totals and the shards it consumes. */
  ingest: { totals(): IngestTotals; shards(): number[] } | null;
  /** The node's ingest committer (ingest/commit.ts), where it has one. */
  committer: { waiting(): number; runningTransactions(): number } | null;
  jsm: JetStreamManager;
  names: Names;
}

/** The gauges that read the node's parts (kernel, shards, ingest, committer) when scraped. */
export function observeRuntime(registry: Registry, parts: ObservedParts): void {
  const { kernel, shards, ingest, committer, jsm, names } = parts;
  const registers = [registry];
  const gauge = (name: string, help: string, read: () => number | null) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const v = read();
        if (v !== null) this.set(v);
      },
    });

  gauge('connector_service_shards_owned', 'Shards whose work runs on this node', () => shards?.stats().owned ?? 0);
  gauge('connector_service_shards_target', "This node's fair share of shards", () => shards?.stats().target ?? 0);
  gauge(
    'connector_service_cluster_nodes',
    'Live nodes seen in the heartbeat bucket',
    () => shards?.stats().liveNodes ?? 0,
  );
  gauge('connector_service_lease_renew_age_seconds', 'Age of the oldest held lease since its last renew', () => {
    const age = shards?.stats().lastRenewAgeMs;
    return age == null ? 0 : age / 1000;
  });
  new Gauge({
    name: 'connector_service_actors_active',
    help: 'Active actor activations by kind',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      for (const [kind, n] of Object.entries(kernel.stats().activeByKind)) this.set({ kind }, n);
    },
  });
  gauge(
    'connector_service_actor_mailbox_depth',
    'Messages waiting in actor mailboxes',
    () => kernel.stats().mailboxDepth,
  );
  gauge('connector_service_ingest_in_flight', 'Ingest messages being delivered', () => ingest?.totals().inFlight ?? 0);
  gauge(
    'connector_service_ingest_room_waiting',
    'Install lanes waiting for room to decode their next batch (8 MiB of batches per node)',
    () => ingest?.totals().waitingForRoom ?? 0,
  );
  gauge(
    'connector_service_ingest_commit_running',
    'Ingest transactions running (at most SERVICE_INGEST_COMMIT_SLOTS)',
    () => committer?.runningTransactions() ?? 0,
  );
  gauge(
    'connector_service_ingest_commit_waiting',
    'Install batches waiting for an ingest transaction (all commit slots busy)',
    () => committer?.waiting() ?? 0,
  );
  gauge(
    'connector_service_ingest_in_flight_bytes',
    'Bytes of ingest message data this node holds (SERVICE_INGEST_MAX_IN_FLIGHT_BYTES bounds it on average)',
    () => ingest?.totals().inFlightBytes ?? 0,
  );

  const monotonic = (name: string, help: string, read: () => number) => {
    let seen = 0;
    return new Counter({
      name,
      help,
      registers,
      collect() {
        const v = read();
        if (v > seen) this.inc(v - seen);
        seen = Math.max(seen, v);
      },
    });
  };
  monotonic(
    'connector_service_ingest_delivered_total',
    'Events committed by this node',
    () => ingest?.totals().delivered ?? 0,
  );
  monotonic(
    'connector_service_ingest_redeliveries_total',
    'Ingest messages delivered more than once',
    () => ingest?.totals().redeliveries ?? 0,
  );
  monotonic(
    'connector_service_ingest_dead_letters_total',
    'Ingest messages moved to the dead-letter table',
    () => ingest?.totals().deadLettered ?? 0,
  );

  new Gauge({
    name: 'connector_service_ingest_consumer_pending',
    help: 'Consumer lag: stored events not yet delivered, per owned shard',
    labelNames: ['shard'],
    registers,
    async collect() {
      this.reset();
      for (const shard of ingest?.shards() ?? []) {
        const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard)).catch(() => null);
        if (info) this.set({ shard: String(shard) }, info.num_pending + info.num_ack_pending);
      }
    },
  });
}

/**
 * The node's counters and histograms: created before anything they count, so every part
 * gets them when it is built (no part waits for them to exist).
 */
export function createRuntimeMetrics(registry: Registry): RuntimeMetrics {
  const registers = [registry];
  const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  return {
    ingestCommit: new Histogram({
      name: 'connector_service_ingest_commit_seconds',
      help: 'Ingest transaction time: one batch of events of one or more installs',
      buckets,
      registers,
    }),
    ingestBatchSize: new Histogram({
      name: 'connector_service_ingest_batch_events',
      help: 'Events committed per ingest transaction (group commit)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers,
    }),
    ingestBatchInstalls: new Histogram({
      name: 'connector_service_ingest_batch_installs',
      help: 'Installs whose events share an ingest transaction (group commit across installs)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    }),
    eventToCommit: new Histogram({
      name: 'connector_service_ingest_event_to_commit_seconds',
      help: 'Stream store to Postgres commit',
      buckets,
      registers,
    }),
    ingestPublish: new Histogram({
      name: 'connector_service_ingest_publish_seconds',
      help: 'Edge publish to JetStream ack (the wait before a webhook is answered), by connector',
      labelNames: ['connector'],
      buckets,
      registers,
    }),
    ingestPublishFailures: new Counter({
      name: 'connector_service_ingest_publish_failures_total',
      help: 'Publishes JetStream did not acknowledge (answered 503 upstream, which retries), by connector',
      labelNames: ['connector'],
      registers,
    }),
    ingestDropped: new Counter({
      name: 'connector_service_ingest_dropped_total',
      help: 'Inbound events dropped by the self-emit filters, by connector and tier (spec §6.3)',
      labelNames: ['connector', 'tier'],
      registers,
    }),
    effectFailures: new Counter({
      name: 'connector_service_effect_failures_total',
      help: 'Failed attempts of side effects of ingested events (retried with backoff), by connector and kind',
      labelNames: ['connector', 'kind'],
      registers,
    }),
    effectsGivenUp: new Counter({
      name: 'connector_service_effects_given_up_total',
      help:
        'Side effects abandoned: failing for 24 hours, or failed in a way a retry cannot mend, ' +
        'by connector and kind',
      labelNames: ['connector', 'kind'],
      registers,
    }),
    effectsDone: new Counter({
      name: 'connector_service_effects_done_total',
      help: 'Side effects that ran to completion, by connector and kind',
      labelNames: ['connector', 'kind'],
      registers,
    }),
    fenceRefused: new Counter({
      name: 'connector_service_nats_refused_total',
      help:
        'NATS messages refused by the fence: unsealed, replayed, or naming another tenant or install ' +
        '(INTERFACE §9.4)',
      labelNames: ['path'],
      registers,
    }),
    auditLost: new Counter({
      name: 'connector_service_audit_entries_lost_total',
      help:
        'Audit entries not written although their action was done: an emit whose receipt and then its entry alone ' +
        'failed to commit (INTERFACE §10.5), by action',
      labelNames: ['action'],
      registers,
    }),
  };
}
