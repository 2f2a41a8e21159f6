/**
 * Per-install ordering for the shard ingest consumer: one lane per install. Events of a
 * lane run one after another in arrival (stream) order; lanes run concurrently.
 *
 * A failed event is nak'd and comes back later as a redelivery, but the events behind it
 * were already pulled. To keep the order strict, the failed event *blocks* its lane: the
 * later events are held in memory (kept alive with +WPI by the consumer) until the blocking
 * event is delivered or dead-lettered. Its redelivery bypasses the queue (`isHead`), since
 * the queue is waiting for it.
 *
 * A lane can have several blocking events: a new shard owner blocks every event an earlier
 * owner received and never settled (a kill -9 leaves them to come back only after the ack
 * wait, while newer events arrive at once), unless the store holds it already
 * (takeover.ts). Blocking events run in stream order among
 * themselves, and an event waits for every blocking event before it.
 */
import { deferred, type Deferred } from '@nats-io/transport-node';

/** The lane of an event: its install's, or its own when its subject names none. */
export function laneOf(installId: string | null, seq: number): string {
  return installId ?? `?${seq}`;
}

interface Block {
  seq: number;
  /** Epoch ms when the server is due to redeliver the blocking event. */
  redeliverAt: number;
  release: Deferred<void>;
}

interface Lane {
  tail: Promise<void>;
  /** Events of the lane not in our hands yet that later events must wait for, by seq. */
  blocks: Map<number, Block>;
}

export class InstallLanes {
  private readonly lanes = new Map<string, Lane>();

  /**
   * `onError` sees what a task threw; tasks are expected to settle their own events.
   * `onBlock` hears of every new block (the puller then looks again at when to ask for it).
   */
  constructor(
    private readonly onError: (err: unknown) => void,
    private readonly onBlock: () => void = () => undefined,
  ) {}

  /** Run `task` after every earlier task of the same lane has finished. */
  enqueue(key: string, task: () => Promise<void>): Promise<void> {
    const lane = this.lane(key);
    const p = lane.tail.then(task).catch(this.onError);
    lane.tail = p;
    this.forgetIfIdle(key, lane, p);
    return p;
  }

  /** Is `seq` an event that blocks its lane (its redelivery must not queue behind itself)? */
  isHead(key: string, seq: number): boolean {
    return this.lanes.get(key)?.blocks.has(seq) ?? false;
  }

  /** Wait while an earlier event of the lane is blocked; returns at once when `stopping()`. */
  async waitTurn(key: string, seq: number, stopping: () => boolean): Promise<void> {
    for (;;) {
      let first: Block | null = null;
      for (const b of this.lanes.get(key)?.blocks.values() ?? [])
        if (b.seq < seq && (first === null || b.seq < first.seq)) first = b;
      if (first === null || stopping()) return;
      await first.release;
    }
  }

  /** The lane's earliest blocking event, or null: a batch must stop before it. */
  firstBlock(key: string): number | null {
    let first: number | null = null;
    for (const b of this.lanes.get(key)?.blocks.values() ?? []) if (first === null || b.seq < first) first = b.seq;
    return first;
  }

  /** Epoch ms of the earliest redelivery a lane waits for, or null (pull.ts asks for it when due). */
  nextRedelivery(): number | null {
    let next: number | null = null;
    for (const lane of this.lanes.values())
      for (const b of lane.blocks.values()) if (next === null || b.redeliverAt < next) next = b.redeliverAt;
    return next;
  }

  block(key: string, seq: number, redeliverAt: number): void {
    const lane = this.lane(key);
    // The same event failing again keeps its waiters.
    const release = lane.blocks.get(seq)?.release ?? deferred<void>();
    lane.blocks.set(seq, { seq, redeliverAt, release });
    this.onBlock();
  }

  unblock(key: string, seq: number): void {
    const lane = this.lanes.get(key);
    const block = lane?.blocks.get(seq);
    if (!lane || !block) return;
    lane.blocks.delete(seq);
    block.release.resolve();
    this.forgetIfIdle(key, lane, lane.tail);
  }

  /** Blocks overdue by `graceMs`: the server will not bring their event back. */
  overdue(now: number, graceMs: number): Array<{ key: string; seq: number }> {
    const out: Array<{ key: string; seq: number }> = [];
    for (const [key, lane] of this.lanes) {
      for (const b of lane.blocks.values()) if (now > b.redeliverAt + graceMs) out.push({ key, seq: b.seq });
    }
    return out;
  }

  /** Wake every held waiter (on stop; they see `stopping()` and hand their event back). */
  releaseAll(): void {
    for (const lane of this.lanes.values()) for (const b of lane.blocks.values()) b.release.resolve();
  }

  tails(): Promise<void>[] {
    return [...this.lanes.values()].map((l) => l.tail);
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { tail: Promise.resolve(), blocks: new Map() };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  /** Drop the lane once `p` settled and nothing was queued or blocked since. */
  private forgetIfIdle(key: string, lane: Lane, p: Promise<void>): void {
    void p.then(() => {
      if (lane.tail === p && lane.blocks.size === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
    });
  }
}
