/**
 * The durable ingest path (ARCHITECTURE.md "Inbound (nothing lost, nothing twice)"), and a
 * node's share of it: one consumer per shard it owns, all holding their events in the
 * node's one buffer and delivering through its one delivery room.
 *
 * One event's walk through this folder:
 *
 * 1. publish.ts: the edge verified a webhook and publishes the event (message.ts: its body,
 *    or a blob ref when it is too large; its `Nats-Msg-Id` `<install_id>:<event id>`) on
 *    `<ns>.ingest.<shard>.<connector>.<install_id>`, and answers 2xx once the stream
 *    (stream.ts) acknowledged it. A retry inside the duplicate window is absorbed there.
 * 2. The owner of the install's shard runs that shard's consumer (consumer.ts, started
 *    here). At a takeover it first blocks the lanes of the events an earlier owner left
 *    unsettled and not stored (takeover.ts), so an install's order survives a kill -9.
 * 3. pull.ts asks the server for as many events as the node has room for (buffer.ts). A
 *    message without this deployment's seal is terminated there and then (settle.ts, told
 *    by refusals.ts); a sealed event is held, and queued in its install's lane (lanes.ts:
 *    one lane per install, in stream order, blocked behind a failed event until it comes back).
 * 4. batches.ts takes what the lane has waiting as one batch once the node has room to
 *    decode it (delivery-room.ts), and admits each event (settle.ts: its attempts counted
 *    across owners in attempts.ts, its blob read).
 * 5. deliver.ts hands the batch to the install's actor (actors/install.ts), which fences it
 *    to its install and gives it to the node's committer (commit.ts): batches of several
 *    installs share one Postgres transaction, which writes the events, their graph
 *    projection and their effects (transaction.ts) keyed by `(install_id, event id)`.
 * 6. Once that committed, settle.ts acks the message (confirmed first when it has a blob,
 *    which then goes). A failure naks it with a growing delay and blocks its lane, a batch
 *    that failed is retried event by event (batches.ts), and at the last attempt the event
 *    is dead-lettered and acked so its lane flows. A crash anywhere replays; the unique key
 *    absorbs it.
 * 7. sweep.ts, now and then: messages acked below the consumer's floor that a restarted
 *    nats-server kept are deleted.
 * 8. max-deliveries.ts: a message the server stopped delivering (the consumer's finite
 *    max_deliver, stream.ts) is dead-lettered from the server's advisory, or dropped if forged.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { IngestTotals } from '../runtime/metrics.js';
import type { Names } from '../runtime/names.js';
import type { BlobPort, DeadLetterPort, StoredEventsPort } from '../runtime/ports.js';
import type { Seal } from '../runtime/seal.js';
import type { ShardWork } from '../runtime/shard-ports.js';
import { within } from '../runtime/within.js';
import type { IngestAttemptsPort } from './attempts.js';
import type { DeliverBatch } from './batches.js';
import { DEFAULT_INGEST_MAX_IN_FLIGHT, DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES } from '../config-defaults.js';
import { IngestBuffer } from './buffer.js';
import { ShardIngestConsumer } from './consumer.js';
import { DeliveryRoom } from './delivery-room.js';
import { RefusalLog } from './refusals.js';
import { MaxedDeadLetterer } from './max-deliveries.js';
import { AckedSweeper } from './sweep.js';

export interface NodeIngestOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  /** Commit events of one install, in order, all or none (group commit; `alone`: in a transaction of their own). */
  deliver: DeliverBatch;
  /** INTERFACE §9.4: when set, an ingest message without this deployment's seal is refused, and counted. */
  seal?: Seal | null;
  onRefused?(): void;
  /** Where refusals are told (refusals.ts: bounded, shared by the node's shards). */
  log: Logger;
  /** Attempts of redelivered events across owners, so shard moves never dead-letter an event. */
  attempts?: IngestAttemptsPort | null;
  /** At takeover, which of an earlier owner's unsettled events are stored already (takeover.ts). */
  storedEvents?: StoredEventsPort | null;
  /** Ingest held at once across this node's shards: events, and bytes of message data (buffer.ts). */
  maxInFlight?: { events: number; bytes: number };
}

const FLUSH_TIMEOUT_MS = 2_000;

interface ShardConsumer {
  consumer: ShardIngestConsumer;
  sweeper: AckedSweeper;
  maxed: MaxedDeadLetterer;
}

export class NodeIngest implements ShardWork {
  private readonly running = new Map<number, ShardConsumer>();
  /**
   * Counts of consumers already stopped (so totals stay monotonic across shard moves), and dead
   * letters made from advisories.
   */
  private readonly retired = { delivered: 0, redeliveries: 0, deadLettered: 0 };
  private readonly room = new DeliveryRoom();
  private readonly buffer: IngestBuffer;
  private readonly refusals: RefusalLog;

  constructor(private readonly o: NodeIngestOptions) {
    this.refusals = new RefusalLog({ log: o.log, onRefused: () => o.onRefused?.() });
    this.buffer = new IngestBuffer(
      o.maxInFlight?.events ?? DEFAULT_INGEST_MAX_IN_FLIGHT,
      o.maxInFlight?.bytes ?? DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES,
    );
  }

  /**
   * The shard's consumer, then its sweeps and the reader of its max-deliveries advisories
   * (max-deliveries.ts); a consumer that fails to start is forgotten and its error thrown.
   */
  async start(shard: number, log: Logger): Promise<void> {
    const consumer = new ShardIngestConsumer({
      js: this.o.js,
      jsm: this.o.jsm,
      names: this.o.names,
      shard,
      log,
      blobs: this.o.blobs,
      deadLetters: this.o.deadLetters,
      deliver: (events, meta, opts) => this.o.deliver(events, meta, opts),
      seal: this.o.seal ?? null,
      refusals: this.refusals,
      attempts: this.o.attempts ?? null,
      storedEvents: this.o.storedEvents ?? null,
      room: this.room,
      buffer: this.buffer,
      // The connection's PING round trip, given up after a while: a stop must not hang on a dead server.
      flush: () => within(this.o.nc.flush(), FLUSH_TIMEOUT_MS, 'the NATS flush'),
    });
    const sweeper = new AckedSweeper({ jsm: this.o.jsm, names: this.o.names, shard, log });
    const maxed = new MaxedDeadLetterer({
      js: this.o.js,
      jsm: this.o.jsm,
      names: this.o.names,
      shard,
      log,
      deadLetters: this.o.deadLetters,
      seal: this.o.seal ?? null,
      refusals: this.refusals,
      onDeadLettered: () => this.retired.deadLettered++,
    });
    const entry = { consumer, sweeper, maxed };
    this.running.set(shard, entry);
    try {
      await consumer.start();
    } catch (err) {
      if (this.running.get(shard) === entry) this.running.delete(shard);
      throw err;
    }
    // Stopped while starting (the shard moved on): no sweeps, no advisories.
    if (this.running.get(shard) === entry) {
      sweeper.start();
      maxed.start();
    }
  }

  /** Stop the shard's sweeps and consumer; its counts join the node's totals. */
  async stop(shard: number): Promise<void> {
    const entry = this.running.get(shard);
    if (!entry) return;
    this.running.delete(shard);
    entry.sweeper.stop();
    await Promise.all([entry.consumer.stop(), entry.maxed.stop()]);
    const st = entry.consumer.stats();
    this.retired.delivered += st.delivered;
    this.retired.redeliveries += st.redeliveries;
    this.retired.deadLettered += st.deadLettered;
  }

  /** Shards whose consumer runs here now. */
  shards(): number[] {
    return [...this.running.keys()];
  }

  /** Ingest counters of this node since start (cumulative across shard moves). */
  totals(): IngestTotals {
    // Every consumer of this node holds its events in the node's one buffer.
    const t = {
      inFlight: this.buffer.size(),
      inFlightBytes: this.buffer.bytes(),
      waitingForRoom: this.room.waiting(),
      ...this.retired,
    };
    for (const { consumer } of this.running.values()) {
      const st = consumer.stats();
      t.delivered += st.delivered;
      t.redeliveries += st.redeliveries;
      t.deadLettered += st.deadLettered;
    }
    return t;
  }
}
