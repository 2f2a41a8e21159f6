/**
 * The durable inbound path, consumer side (ARCHITECTURE.md "Inbound", step 2): the shard
 * owner pulls its slice of the ingest stream and hands an install's events to `deliver`
 * (the install actor, whose batch is committed in one transaction); messages are acked only
 * after it resolved.
 *
 * - Group commit: a lane takes what has arrived for its install (up to `maxBatch`) and
 *   delivers it once the node has room for it (delivery-room.ts); the install actor's
 *   transaction may take other installs' batches too (actors/ingest-committer.ts). What
 *   arrives meanwhile goes into the lane's next batch; pulling goes on.
 * - A failed batch is delivered again event by event: a poison event fails only itself. A
 *   failure that says nothing about the events (Postgres or the actor unavailable, the actor's
 *   mailbox full) retries the batch whole instead: a blip does not split it into one-event
 *   transactions.
 * - Order: an install's events are delivered in stream order, also across failures
 *   (ingest-lanes.ts) and a previous owner's crash (ingest-unsettled.ts); installs run
 *   concurrently.
 * - Failure: nak with a growing delay; at `maxDeliver` attempts (counted across owners,
 *   ingest-attempts.ts) the event is dead-lettered and acked so later events flow.
 * - Only the ack of an event with a blob is confirmed (ackAck) before its blob goes. A
 *   crash between commit and ack replays, so `deliver` must be idempotent.
 */
import type { JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { DeliveryRoom, type RoomReservation } from './delivery-room.js';
import { ensureIngestConsumer } from './ensure-ingest-consumer.js';
import { DEFAULT_INGEST_MAX_IN_FLIGHT, HeldEvents, IngestBuffer } from './ingest-buffer.js';
import type { ConsumerStats, ShardIngestConsumerOptions } from './ingest-consumer-options.js';
import { InstallLanes, laneOf } from './ingest-lanes.js';
import { PendingLanes } from './ingest-pending.js';
import { ShardPuller } from './ingest-pull.js';
import { blockUnsettled } from './ingest-takeover.js';
import { IngestSettler, type Ready, type Tracked } from './ingest-settle.js';
import { AckedSweeper } from './ingest-sweep.js';
import { admitBatch } from './ingest-admit-batch.js';
import { installIdOfIngestSubject } from './names.js';
import { errorText } from './error-text.js';
import { saysNothingAboutInput } from '../errors-wire.js';

export type { ConsumerStats, ShardIngestConsumerOptions } from './ingest-consumer-options.js';

export class ShardIngestConsumer {
  private readonly o: Required<ShardIngestConsumerOptions>;
  private readonly log: Logger;
  private readonly lanes: InstallLanes;
  private readonly settler: IngestSettler;
  /** Every event in our hands (queued, held or delivering), by stream sequence; counted in the node's buffer. */
  private readonly tracked: HeldEvents<Tracked>;
  /** Events of each lane waiting for its next batch, in stream order; a lane here has a drain queued. */
  private readonly pending = new PendingLanes((lane) => void this.lanes.enqueue(lane, () => this.drain(lane)));
  private puller: ShardPuller | null = null;
  private pump: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private sweeper: AckedSweeper | null = null;
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
      onRefused: () => undefined,
      ...opts,
      room: opts.room ?? new DeliveryRoom(),
      buffer: opts.buffer ?? new IngestBuffer(DEFAULT_INGEST_MAX_IN_FLIGHT),
    };
    // A shard holding nothing may take any room: its puller looks again (ingest-pull.ts).
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
      onRefused: this.o.onRefused,
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
    this.sweeper = new AckedSweeper({ jsm: this.o.jsm, names, shard, log: this.log });
    this.sweeper.start();
  }

  /** Stop pulling, let running deliveries settle, hand every other event back (nak). */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      this.sweeper?.stop();
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

  /** Events delivered, not settled and not in our hands hold their lanes (ingest-takeover.ts). */
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
    this.enqueue([t]);
    // A blocking event that came back is in hand now, in its place in the queue: the events
    // behind it need not wait for it any longer, and it commits in a batch with them.
    if (this.lanes.isHead(t.lane, m.seq)) this.lanes.unblock(t.lane, m.seq);
  }

  /** Into their lane's queue in stream order (a redelivery goes before later events); a drain runs it. */
  private enqueue(ts: Tracked[]): void {
    this.pending.add(ts);
  }

  /** Deliver the lane's pending events batch after batch until none are left. */
  private async drain(lane: string): Promise<void> {
    for (;;) {
      const queue = this.pending.get(lane);
      if (!queue || queue.length === 0) {
        this.pending.delete(lane);
        return;
      }
      await this.lanes.waitTurn(lane, queue[0]!.msg.seq, () => this.stopping);
      if (this.stopping) {
        this.pending.delete(lane);
        for (const t of queue) this.settler.handBack(t);
        return;
      }
      // Room for a full batch first; what arrives meanwhile joins it.
      const room = await this.o.room.reserve(this.o.maxBatchBytes);
      try {
        // Stopping, or an earlier event began to block while we waited: go round again.
        const block = this.lanes.firstBlock(lane);
        if (this.stopping || (block !== null && block < queue[0]!.msg.seq)) continue;
        // Up to the lane's first blocking event: what follows it waits for its redelivery.
        let n = 0;
        while (n < queue.length && n < this.o.maxBatch && (block === null || queue[n]!.msg.seq < block)) n++;
        await this.runBatch(queue.splice(0, Math.max(1, n)), room);
      } finally {
        room.release();
      }
    }
  }

  /**
   * Deliver events of one lane in one go and settle their messages: ack, nak (retry later)
   * or dead-letter. An event that cannot be prepared (its blob unreadable) is retried and
   * blocks the lane, so the events after it go back to wait for it.
   */
  private async runBatch(batch: Tracked[], room: RoomReservation): Promise<void> {
    const { ready, rest } = await admitBatch(this.settler, batch, this.o.maxBatchBytes);
    room.resize(ready.reduce((n, r) => n + r.bytes, 0));
    this.enqueue(rest);
    if (ready.length === 0) return;
    try {
      // An event attempted before (not a shard move's hand-back) may be what failed its last
      // transaction: it does not share one with other installs' events again.
      const alone = ready.some((r) => r.tries > 1);
      await this.o.deliver(
        ready.map((r) => r.ev),
        ready.map((r) => r.meta),
        alone ? { alone } : {},
      );
    } catch (err) {
      if (ready.length > 1 && saysNothingAboutInput(err) && ready[0]!.tries < this.o.maxDeliver) {
        // The head comes back after its delay; the rest wait behind it, in order, then all go again.
        this.settler.retryLater(ready[0]!.t, err);
        this.enqueue(ready.slice(1).map((r) => r.t));
        return;
      }
      if (ready.length > 1) return this.isolate(ready, err);
      const only = ready[0]!;
      if (only.tries >= this.o.maxDeliver) return this.settler.deadLetter(only.t, errorText(err));
      return this.settler.retryLater(only.t, err);
    }
    this.counts.delivered += ready.length;
    for (const r of ready) this.settler.settle(r.t, r.blobRef);
  }

  /** A failed batch, one event at a time: only a poison event is retried, its neighbours commit. */
  private async isolate(ready: Ready[], err: unknown): Promise<void> {
    this.log.warn({ err, events: ready.length }, 'ingest batch failed; delivering its events one at a time');
    for (const [i, r] of ready.entries()) {
      try {
        await this.o.deliver([r.ev], [r.meta], { alone: true });
      } catch (e) {
        if (r.tries >= this.o.maxDeliver) {
          await this.settler.deadLetter(r.t, errorText(e));
          continue;
        }
        this.settler.retryLater(r.t, e);
        this.enqueue(ready.slice(i + 1).map((x) => x.t));
        return;
      }
      this.counts.delivered++;
      this.settler.settle(r.t, r.blobRef);
    }
  }

  private keepAlive(): void {
    for (const t of this.tracked.values()) t.msg.working();
    for (const { key, seq } of this.lanes.overdue(Date.now(), this.o.ackWaitMs * 2)) {
      this.log.warn({ seq, lane: key }, 'blocked ingest event never came back; releasing the events behind it');
      this.lanes.unblock(key, seq);
    }
  }
}
