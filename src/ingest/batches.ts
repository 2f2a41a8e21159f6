/**
 * How a shard consumer (consumer.ts) turns the events of each install lane into deliveries,
 * and what a delivery's outcome does to them (ARCHITECTURE.md "Inbound" 2).
 *
 * - Group commit: a lane takes what has arrived for its install (up to `maxBatch`) and
 *   delivers it once the node has room for it (delivery-room.ts); the install actor's
 *   transaction may take other installs' batches too (commit.ts). What arrives meanwhile
 *   goes into the lane's next batch; pulling goes on.
 * - Each event is admitted first (settle.ts: its attempts counted, its blob read; its seal
 *   was checked as it arrived, consumer.ts); one that must be retried blocks its lane, so the events
 *   after it wait for it.
 * - A failed batch is delivered again event by event: a poison event fails only itself. A
 *   failure that says nothing about the events (Postgres or the actor unavailable, the actor's
 *   mailbox full) retries the batch whole instead: a blip does not split it into one-event
 *   transactions.
 * - At `maxDeliver` attempts an event is dead-lettered and acked, so later events flow.
 */
import { saysNothingAboutInput } from '../errors-wire.js';
import type { Logger } from '../log.js';
import { errorText } from '../runtime/error-text.js';
import type { IngestEvent } from '../runtime/ports.js';
import type { DeliveryRoom, RoomReservation } from './delivery-room.js';
import type { InstallLanes } from './lanes.js';
import type { IngestDeliveryMeta, IngestSettler, Ready, Tracked } from './settle.js';

/**
 * Commit events of one install, in order, all or none. `alone`: events being isolated
 * after their batch failed, to be committed in a transaction of their own.
 */
export type DeliverBatch = (
  events: IngestEvent[],
  meta: IngestDeliveryMeta[],
  opts?: { alone?: boolean },
) => Promise<void>;

/** Attempts after which an unsettled event runs alone (a first retry still batches). */
const SUSPECT_AFTER = 2;

export interface AdmittedBatch {
  /** What to deliver, in order (possibly nothing). */
  ready: Ready[];
  /** Not admitted: back to the lane's queue, in order. */
  rest: Tracked[];
}

/**
 * Which of the events a lane took go into one delivery: each is admitted in stream order
 * until one of these ends the batch, and the events after that point go back to the lane's
 * queue for its next batch.
 *
 * - Full by size: once the events admitted reach `maxBytes` (blobs counted at their size),
 *   the rest waits, not admitted (admitting counts an attempt).
 * - An event to retry (its blob unreadable) blocks its lane: the events after it wait for it.
 * - An event attempted twice and never settled may be what killed its owners: it runs alone,
 *   so a crash loop dead-letters it and not the neighbours of its batch.
 */
export async function admitBatch(
  settler: Pick<IngestSettler, 'admit'>,
  batch: Tracked[],
  maxBytes: number,
): Promise<AdmittedBatch> {
  const ready: Ready[] = [];
  let bytes = 0;
  for (const [i, t] of batch.entries()) {
    if (ready.length > 0 && bytes >= maxBytes) return { ready, rest: batch.slice(i) };
    const r = await settler.admit(t);
    if (r === 'settled') continue;
    if (r === 'retry') return { ready, rest: batch.slice(i + 1) };
    if (r.tries <= SUSPECT_AFTER) {
      ready.push(r);
      bytes += r.bytes;
      continue;
    }
    // A suspect: alone in its own batch, now if it comes first, else next time.
    if (ready.length > 0) return { ready, rest: batch.slice(i) };
    return { ready: [r], rest: batch.slice(i + 1) };
  }
  return { ready, rest: [] };
}

/**
 * The events of each install lane waiting for the lane's next batch, in stream order: a
 * redelivery goes before the later events already waiting, and a batch's unsent tail goes
 * back in front of what arrived meanwhile. A lane that had nothing waiting gets a drain
 * queued (`onNewLane`), which takes batches from here until it is empty.
 */
class PendingLanes {
  private readonly byLane = new Map<string, Tracked[]>();

  constructor(private readonly onNewLane: (lane: string) => void) {}

  /** Into their lane's queue in stream order (all of one lane). */
  add(ts: Tracked[]): void {
    if (ts.length === 0) return;
    const lane = ts[0]!.lane;
    const queue = this.byLane.get(lane);
    if (!queue) {
      this.byLane.set(
        lane,
        [...ts].sort((a, b) => a.msg.seq - b.msg.seq),
      );
      this.onNewLane(lane);
      return;
    }
    // Put back from the front of a batch (the usual case): all before what is queued, in one go.
    if (isSorted(ts) && (queue.length === 0 || ts[ts.length - 1]!.msg.seq < queue[0]!.msg.seq)) {
      queue.unshift(...ts);
      return;
    }
    for (const t of ts) {
      let i = queue.length;
      while (i > 0 && queue[i - 1]!.msg.seq > t.msg.seq) i--;
      queue.splice(i, 0, t);
    }
  }

  /** The lane's waiting events, oldest first (the caller takes its batch from the front). */
  get(lane: string): Tracked[] | undefined {
    return this.byLane.get(lane);
  }

  /** The lane's drain ends: the next event for it queues a new one. */
  delete(lane: string): void {
    this.byLane.delete(lane);
  }
}

function isSorted(ts: Tracked[]): boolean {
  return ts.every((t, i) => i === 0 || ts[i - 1]!.msg.seq < t.msg.seq);
}

export interface LaneBatchesOptions {
  log: Logger;
  lanes: InstallLanes;
  settler: IngestSettler;
  room: DeliveryRoom;
  deliver: DeliverBatch;
  maxBatch: number;
  maxBatchBytes: number;
  maxDeliver: number;
  /** The consumer's count of delivered events. */
  counts: { delivered: number };
  /** The consumer is stopping: what is queued goes back to the stream. */
  stopping(): boolean;
}

export class LaneBatches {
  /** Events of each lane waiting for its next batch, in stream order; a lane here has a drain queued. */
  private readonly pending = new PendingLanes((lane) => void this.o.lanes.enqueue(lane, () => this.drain(lane)));

  constructor(private readonly o: LaneBatchesOptions) {}

  /** Into their lane's queue in stream order (a redelivery goes before later events); a drain runs it. */
  add(ts: Tracked[]): void {
    this.pending.add(ts);
  }

  /** Deliver the lane's pending events batch after batch until none are left. */
  private async drain(lane: string): Promise<void> {
    const { lanes, settler } = this.o;
    for (;;) {
      const queue = this.pending.get(lane);
      if (!queue || queue.length === 0) {
        this.pending.delete(lane);
        return;
      }
      await lanes.waitTurn(lane, queue[0]!.msg.seq, () => this.o.stopping());
      if (this.o.stopping()) {
        this.pending.delete(lane);
        for (const t of queue) settler.handBack(t);
        return;
      }
      // Room for a full batch first; what arrives meanwhile joins it.
      const room = await this.o.room.reserve(this.o.maxBatchBytes);
      try {
        // Stopping, or an earlier event began to block while we waited: go round again.
        const block = lanes.firstBlock(lane);
        if (this.o.stopping() || (block !== null && block < queue[0]!.msg.seq)) continue;
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
    const { settler, maxDeliver } = this.o;
    const { ready, rest } = await admitBatch(settler, batch, this.o.maxBatchBytes);
    room.resize(ready.reduce((n, r) => n + r.bytes, 0));
    this.add(rest);
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
      if (ready.length > 1 && saysNothingAboutInput(err) && ready[0]!.tries < maxDeliver) {
        // The head comes back after its delay; the rest wait behind it, in order, then all go again.
        settler.retryLater(ready[0]!.t, err);
        this.add(ready.slice(1).map((r) => r.t));
        return;
      }
      if (ready.length > 1) return this.isolate(ready, err);
      const only = ready[0]!;
      if (only.tries >= maxDeliver) return settler.deadLetter(only.t, errorText(err));
      return settler.retryLater(only.t, err);
    }
    this.o.counts.delivered += ready.length;
    for (const r of ready) settler.settle(r.t, r.blobRef);
  }

  /** A failed batch, one event at a time: only a poison event is retried, its neighbours commit. */
  private async isolate(ready: Ready[], err: unknown): Promise<void> {
    const { settler, maxDeliver } = this.o;
    this.o.log.warn({ err, events: ready.length }, 'ingest batch failed; delivering its events one at a time');
    for (const [i, r] of ready.entries()) {
      try {
        await this.o.deliver([r.ev], [r.meta], { alone: true });
      } catch (e) {
        if (r.tries >= maxDeliver) {
          await settler.deadLetter(r.t, errorText(e));
          continue;
        }
        settler.retryLater(r.t, e);
        this.add(ready.slice(i + 1).map((x) => x.t));
        return;
      }
      this.o.counts.delivered++;
      settler.settle(r.t, r.blobRef);
    }
  }
}
