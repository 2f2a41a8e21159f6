/**
 * The events of each install lane waiting for the lane's next batch (ingest-consumer.ts), in
 * stream order: a redelivery goes before the later events already waiting, and a batch's
 * unsent tail goes back in front of what arrived meanwhile. A lane that had nothing waiting
 * gets a drain queued (`onNewLane`), which takes batches from here until it is empty.
 */
import type { Tracked } from './ingest-settle.js';

export class PendingLanes {
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
