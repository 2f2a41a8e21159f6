/**
 * The work a node runs for each shard it owns (ARCHITECTURE.md: "Only the owner subscribes
 * to `<ns>.actor.<shard>.>` and runs that shard's ingest consumer"). The shard manager
 * calls `acquire` after winning a lease and `release` before giving one up (or at once
 * when it is lost), so this is the only place shard work starts and stops.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { BlobPort, DeadLetterPort, IngestEvent, StoredEventsPort } from './ports.js';
import type { IngestAttemptsPort } from './ingest-attempts.js';
import { DeliveryRoom } from './delivery-room.js';
import { DEFAULT_INGEST_MAX_IN_FLIGHT, DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES, IngestBuffer } from './ingest-buffer.js';
import { ShardIngestConsumer } from './ingest-consumer.js';
import type { IngestDeliveryMeta } from './ingest-settle.js';
import type { Names } from './names.js';
import { serveShard, type ActorRequest } from './router.js';
import type { Seal } from './seal.js';
import type { ShardListener } from './shard-ports.js';
import { within } from './within.js';

export interface ShardHostOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  log: Logger;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  dispatch(req: ActorRequest): Promise<unknown>;
  /** Commit events of one install, in order, all or none (group commit; `alone`: in a transaction of their own). */
  deliver(events: IngestEvent[], meta: IngestDeliveryMeta[], opts?: { alone?: boolean }): Promise<void>;
  /** Passivate every activation of the shard (after its subscription and consumer stopped). */
  passivate(shard: number): Promise<void>;
  /** After the shard's work started: resume actors that run without requests (backfill walkers). */
  onAcquired?(shard: number): Promise<void>;
  /** INTERFACE §9.4: seal checked on every actor request and ingest message, refusals counted. */
  seal?: Seal | null;
  onRefused?(path: 'actor' | 'ingest'): void;
  /** Attempts of redelivered events across owners, so shard moves never dead-letter an event. */
  attempts?: IngestAttemptsPort | null;
  /** At takeover, which of an earlier owner's unsettled events are stored already (ingest-takeover.ts). */
  storedEvents?: StoredEventsPort | null;
  /** Decoded bytes of ingest batches delivered at once across this node's shards (delivery-room.ts). */
  deliveryRoomBytes?: number;
  /** Ingest held at once across this node's shards: events, and bytes of message data (ingest-buffer.ts). */
  maxInFlight?: { events: number; bytes: number };
}

const FLUSH_TIMEOUT_MS = 2_000;

interface ShardWork {
  server: { stop(): Promise<void> };
  consumer: ShardIngestConsumer;
}

export class ShardHost implements ShardListener {
  private readonly work = new Map<number, ShardWork>();
  /** Counts of consumers already stopped, so totals stay monotonic across shard moves. */
  private readonly retired = { delivered: 0, redeliveries: 0, deadLettered: 0 };
  private readonly room: DeliveryRoom;
  private readonly buffer: IngestBuffer;

  constructor(private readonly o: ShardHostOptions) {
    this.room = new DeliveryRoom(o.deliveryRoomBytes);
    this.buffer = new IngestBuffer(
      o.maxInFlight?.events ?? DEFAULT_INGEST_MAX_IN_FLIGHT,
      o.maxInFlight?.bytes ?? DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES,
    );
  }

  async acquire(shard: number): Promise<void> {
    if (this.work.has(shard)) return;
    const log = this.o.log.child({ shard });
    const server = serveShard({
      nc: this.o.nc,
      names: this.o.names,
      shard,
      log,
      handler: this.o.dispatch,
      seal: this.o.seal ?? null,
      onRefused: () => this.o.onRefused?.('actor'),
    });
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
      onRefused: () => this.o.onRefused?.('ingest'),
      attempts: this.o.attempts ?? null,
      storedEvents: this.o.storedEvents ?? null,
      room: this.room,
      buffer: this.buffer,
      // The connection's PING round trip, given up after a while: a stop must not hang on a dead server.
      flush: () => within(this.o.nc.flush(), FLUSH_TIMEOUT_MS, 'the NATS flush'),
    });
    this.work.set(shard, { server, consumer });
    try {
      await consumer.start();
    } catch (err) {
      this.work.delete(shard);
      await server.stop();
      throw err;
    }
    // A failed resume must not cost the shard: it is logged and retried on the next move.
    await this.o.onAcquired?.(shard).catch((err: unknown) => log.error({ err }, 'resuming actors of the shard failed'));
  }

  async release(shard: number): Promise<void> {
    const w = this.work.get(shard);
    if (!w) return;
    this.work.delete(shard);
    // Stop taking new work first, let in-flight handlers finish, then drop activations.
    await Promise.allSettled([w.server.stop(), w.consumer.stop()]);
    const st = w.consumer.stats();
    this.retired.delivered += st.delivered;
    this.retired.redeliveries += st.redeliveries;
    this.retired.deadLettered += st.deadLettered;
    await this.o.passivate(shard);
  }

  /** Shards whose work runs here now. */
  shards(): number[] {
    return [...this.work.keys()];
  }

  /** Ingest counters of this node since start (cumulative across shard moves). */
  ingestTotals(): {
    inFlight: number;
    inFlightBytes: number;
    /** Lanes waiting for room to decode their next batch (delivery-room.ts). */
    waitingForRoom: number;
    delivered: number;
    redeliveries: number;
    deadLettered: number;
  } {
    // Every consumer of this node holds its events in the node's one buffer.
    const t = {
      inFlight: this.buffer.size(),
      inFlightBytes: this.buffer.bytes(),
      waitingForRoom: this.room.waiting(),
      ...this.retired,
    };
    for (const w of this.work.values()) {
      const st = w.consumer.stats();
      t.delivered += st.delivered;
      t.redeliveries += st.redeliveries;
      t.deadLettered += st.deadLettered;
    }
    return t;
  }
}
