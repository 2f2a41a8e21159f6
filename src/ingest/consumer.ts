/**
 * The shard consumer (ARCHITECTURE.md "Inbound", step 2): the shard owner pulls its slice of
 * the ingest stream, keeps each install's events in order, hands them to `deliver` in batches
 * (the install actor, whose batch is committed in one transaction), and settles each message
 * only after its delivery resolved. node-ingest.ts walks one event through the whole path.
 *
 * - Pull: one request at a time, sized by the room the node's buffer has (pull.ts, buffer.ts).
 * - Order: an install's events are delivered in stream order, also across failures
 *   (lanes.ts) and a previous owner's crash (takeover.ts); installs run concurrently.
 * - Batches: each lane's waiting events go out in batches (batches.ts) once the node has
 *   room for them (delivery-room.ts).
 * - Fence: a message without this deployment's seal is terminated as it arrives (settle.ts).
 * - Failure: nak with a growing delay; at `maxDeliver` attempts (counted across owners,
 *   attempts.ts) the event is dead-lettered and acked so later events flow (settle.ts).
 * - Only the ack of an event with a blob is confirmed (ackAck) before its blob goes. A
 *   crash between commit and ack replays, so `deliver` must be idempotent.
 */
import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { installIdOfIngestSubject, type Names } from '../runtime/names.js';
import type { BlobPort, DeadLetterPort, StoredEventsPort } from '../runtime/ports.js';
import type { Seal } from '../runtime/seal.js';
import type { IngestAttemptsPort } from './attempts.js';
import { LaneBatches, type DeliverBatch } from './batches.js';
import { DEFAULT_INGEST_MAX_IN_FLIGHT } from '../config-defaults.js';
import { HeldEvents, IngestBuffer } from './buffer.js';
import { DeliveryRoom } from './delivery-room.js';
import { InstallLanes, laneOf } from './lanes.js';
import { ShardPuller } from './pull.js';
import { RefusalLog } from './refusals.js';
import { IngestSettler, type Tracked } from './settle.js';
import { ensureIngestConsumer } from './stream.js';
import { blockUnsettled } from './takeover.js';

export interface ShardIngestConsumerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  shard: number;
  log: Logger;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  /** Where each batch goes (batches.ts): the install actor, on a node (deliver.ts). */
  deliver: DeliverBatch;
  /**
   * Most events in one delivery. Default 512: against 256, the ingest transaction's Postgres
   * CPU per chat event fell 6-7 % and the node's about 20 % (bench/graph/chat-batch.ts), and
   * a one-install drain committed 7 % more, 32 installs 12 % more (docs/performance-log.md).
   */
  maxBatch?: number;
  /**
   * A batch takes no more events once those it holds reach this many bytes (their messages,
   * or their blobs, which run up to 25 MiB each). Default 4 MiB: 512 chat messages are about
   * 1.5 MiB, and a batch of large webhooks decoded at once would hold their whole size (a
   * 30 KB-event drain peaked at 450 MiB with 16 MiB batches, 380 MiB with 4 MiB).
   */
  maxBatchBytes?: number;
  /**
   * Decoded bytes of batches being delivered at once, shared by the node's shards
   * (delivery-room.ts). Default: a room of DEFAULT_DELIVERY_ROOM_BYTES of its own.
   */
  room?: DeliveryRoom;
  /**
   * Events the node holds at once across its shards (buffer.ts), shared by them.
   * Default: DEFAULT_INGEST_MAX_IN_FLIGHT of its own.
   */
  buffer?: IngestBuffer;
  maxDeliver?: number;
  /** On stop, waits (bounded) until the server has every ack sent: a PING round trip. */
  flush?: (() => Promise<void>) | null;
  /** Attempts across owners (attempts.ts): shard moves never dead-letter an event. */
  attempts?: IngestAttemptsPort | null;
  /** At takeover, which unsettled events are stored: those hold no lane (takeover.ts). Null: all block. */
  storedEvents?: StoredEventsPort | null;
  /** Server-side ack wait: how long a dead owner's events stay out (a live one sends +WPI). */
  ackWaitMs?: number;
  /**
   * Events one shard holds at most, enforced by the server: 2 batches' worth (default 1024),
   * so the next batch of a busy install gathers while one commits. The node's `buffer` bounds
   * all its shards together.
   */
  maxAckPending?: number;
  /** First nak delay; doubles per delivery up to 60 s. Default 1000. */
  nakBaseMs?: number;
  /** INTERFACE §9.4: when set, a message without this deployment's seal is refused. */
  seal?: Seal | null;
  /** Counts and logs refused messages (shared by a node's shards); default one of its own, counting nothing. */
  refusals?: RefusalLog;
}

export type ConsumerStats = { inFlight: number; delivered: number; redeliveries: number; deadLettered: number };

export class ShardIngestConsumer {
  private readonly o: Required<ShardIngestConsumerOptions>;
  private readonly log: Logger;
  private readonly lanes: InstallLanes;
  private readonly settler: IngestSettler;
  private readonly batches: LaneBatches;
  /** Every event in our hands (queued, held or delivering), by stream sequence; counted in the node's buffer. */
  private readonly tracked: HeldEvents<Tracked>;
  private puller: ShardPuller | null = null;
  private pump: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private readonly counts = { delivered: 0, redeliveries: 0, deadLettered: 0 };

  constructor(opts: ShardIngestConsumerOptions) {
    this.o = {
      maxDeliver: 8,
      attempts: null,
      storedEvents: null,
      flush: null,
      ackWaitMs: 10_000,
      maxAckPending: 1024,
      maxBatch: 512,
      maxBatchBytes: 4 * 1024 * 1024,
      nakBaseMs: 1_000,
      seal: null,
      ...opts,
      room: opts.room ?? new DeliveryRoom(),
      buffer: opts.buffer ?? new IngestBuffer(DEFAULT_INGEST_MAX_IN_FLIGHT),
      refusals: opts.refusals ?? new RefusalLog({ log: opts.log }),
    };
    // A shard holding nothing may take any room: its puller looks again (pull.ts).
    this.tracked = new HeldEvents<Tracked>(
      this.o.buffer,
      (t) => t.msg.data.length,
      () => this.puller?.nudge(),
    );
    this.log = opts.log.child({ shard: opts.shard, consumer: opts.names.ingestConsumer(opts.shard) });
    this.lanes = new InstallLanes(
      (err) => this.log.error({ err }, 'ingest lane task failed'),
      () => this.puller?.nudge(),
    );
    this.settler = new IngestSettler({
      log: this.log,
      lanes: this.lanes,
      tracked: this.tracked,
      counts: this.counts,
      blobs: this.o.blobs,
      deadLetters: this.o.deadLetters,
      nakBaseMs: this.o.nakBaseMs,
      maxDeliver: this.o.maxDeliver,
      attempts: this.o.attempts,
      seal: this.o.seal,
      refusals: this.o.refusals,
    });
    this.batches = new LaneBatches({
      log: this.log,
      lanes: this.lanes,
      settler: this.settler,
      room: this.o.room,
      deliver: this.o.deliver,
      maxBatch: this.o.maxBatch,
      maxBatchBytes: this.o.maxBatchBytes,
      maxDeliver: this.o.maxDeliver,
      counts: this.counts,
      stopping: () => this.stopping,
    });
  }

  async start(): Promise<void> {
    const { js, names, shard, maxAckPending, ackWaitMs } = this.o;
    await ensureIngestConsumer(this.o.jsm, names, shard, { ackWaitMs, maxAckPending });
    // Before pulling: events an earlier owner left unsettled come back only after the ack
    // wait, so newer events of their installs must wait for those not stored yet.
    const { unsettled, stored } = await this.blockUnsettled();
    if (unsettled > 0) this.log.info({ unsettled, stored }, 'unsettled ingest events of an earlier owner');
    const consumer = await js.consumers.get(names.ingestStream, names.ingestConsumer(shard));
    // Stopped while starting (the shard moved on): pull nothing.
    if (this.stopping) return;
    const puller = new ShardPuller({
      consumer,
      buffer: this.o.buffer,
      log: this.log,
      dispatch: (m) => this.dispatch(m),
      nextRedelivery: () => this.lanes.nextRedelivery(),
      held: () => this.tracked.size,
      onGap: (seq) => this.recoverGap(seq),
    });
    this.puller = puller;
    this.pump = puller.run();
    // +WPI for what we hold, so a slow delivery or a held event is not redelivered meanwhile.
    this.timer = setInterval(() => this.keepAlive(), Math.max(250, Math.floor(ackWaitMs / 3)));
    this.timer.unref();
  }

  /** Stop pulling, let running deliveries settle, hand every other event back (nak). */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      await this.puller?.stop();
      await this.pump;
      this.lanes.releaseAll();
      await Promise.allSettled(this.lanes.tails());
      await Promise.allSettled(this.settler.pendingAcks());
      // Unconfirmed acks must reach the server before the next owner looks for unsettled events.
      await this.o.flush?.().catch(() => undefined);
      if (this.timer) clearInterval(this.timer);
      // Every path above settles what it held; this only keeps a leak from shrinking the node's buffer.
      if (this.tracked.size > 0) this.log.warn({ held: this.tracked.size }, 'ingest events still held after stop');
      this.tracked.clear();
    })();
    return this.stopped;
  }

  /** Events delivered, not settled and not in our hands hold their lanes (takeover.ts). */
  private blockUnsettled(): Promise<{ unsettled: number; stored: number }> {
    const { jsm, names, shard, storedEvents, ackWaitMs } = this.o;
    const held = (seq: number) => this.tracked.has(seq);
    return blockUnsettled({ jsm, names, shard, log: this.log, storedEvents, lanes: this.lanes, held, ackWaitMs });
  }

  /**
   * The server delivered events we never saw (a pull request that ended on missed heartbeats
   * while a stalled server still sent to it, a connection lost with deliveries in it): they
   * come back only after the ack wait, so, as at a takeover, the later events of their
   * installs wait for them. Best effort: on failure the events keep their delivery order.
   */
  private async recoverGap(seq: number): Promise<void> {
    try {
      const { unsettled, stored } = await this.blockUnsettled();
      this.log.warn({ seq, unsettled, stored }, 'ingest deliveries went missing; their installs wait for them');
    } catch (err) {
      this.log.error({ err, seq }, 'ingest deliveries went missing and could not be looked up; order may break');
    }
  }

  stats(): ConsumerStats {
    return { inFlight: this.tracked.size, ...this.counts };
  }

  private dispatch(m: JsMsg): void {
    if (m.info.deliveryCount > 1) this.counts.redeliveries++;
    // Ended as it arrives, before it takes a place in the node's buffer or a lane: a flood of
    // forged messages costs one MAC each and never holds back a sealed event.
    if (!this.settler.sealed(m)) return this.settler.refuse(m);
    const known = this.tracked.get(m.seq);
    if (known) {
      // The server resent what we still hold (e.g. after a reconnect): keep one run, ack the newest.
      known.msg = m;
      return;
    }
    const installId = installIdOfIngestSubject(m.subject);
    const t: Tracked = { msg: m, installId, lane: laneOf(installId, m.seq) };
    this.tracked.set(m.seq, t);
    if (this.stopping) return this.settler.handBack(t);
    this.batches.add([t]);
    // A blocking event that came back is in hand now, in its place in the queue: the events
    // behind it need not wait for it any longer, and it commits in a batch with them.
    if (this.lanes.isHead(t.lane, m.seq)) this.lanes.unblock(t.lane, m.seq);
  }

  private keepAlive(): void {
    for (const t of this.tracked.values()) t.msg.working();
    for (const { key, seq } of this.lanes.overdue(Date.now(), this.o.ackWaitMs * 2)) {
      this.log.warn({ seq, lane: key }, 'blocked ingest event never came back; releasing the events behind it');
      this.lanes.unblock(key, seq);
    }
  }
}
