/**
 * How many ingest events a node holds at once across every shard it owns: pulled and not
 * yet settled (queued in a lane, committing, waiting for their ack), plus those its open
 * pull requests may still bring. The server bounds each shard on its own (max_ack_pending,
 * 1 024), so without this a node owning many backlogged shards, the usual case after an
 * outage with the default 64 shards, held up to 1 024 events per shard at once (a 32-install
 * drain over 64 shards peaked at 349 MiB). A node commits at most its commit slots × 512
 * events at a time, so what it holds beyond a few batches only waits.
 *
 * The shard consumers pull only what fits (ingest-pull.ts): a pull request reserves room
 * for the events it asks for, and each event it brings turns its reserved place into a held
 * one until the event is settled.
 */

/** Unless told otherwise (SERVICE_INGEST_MAX_IN_FLIGHT): eight full batches. */
export const DEFAULT_INGEST_MAX_IN_FLIGHT = 4096;

export class IngestBuffer {
  private held = 0;
  private reserved = 0;
  /** Who waits for room, with the room each waits for. */
  private readonly waiters = new Map<() => void, number>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`ingest in-flight capacity must be a positive integer, got ${capacity}`);
  }

  /** Places neither held nor reserved. */
  free(): number {
    return Math.max(0, this.capacity - this.held - this.reserved);
  }

  /** Events held now (a gauge). */
  size(): number {
    return this.held;
  }

  /** Reserve `n` places for a pull request (the caller asks for at most `free()`). */
  reserve(n: number): void {
    this.reserved += n;
  }

  /** Give back reserved places: an event arrived (and is `hold`-ed), or the request ended short. */
  unreserve(n: number): void {
    if (n <= 0) return;
    this.reserved = Math.max(0, this.reserved - n);
    this.wake();
  }

  hold(): void {
    this.held++;
  }

  /** An event held was settled (acked, nak'd, dead-lettered, refused or handed back). */
  release(): void {
    this.held = Math.max(0, this.held - 1);
    this.wake();
  }

  /**
   * Call `wake` once `least` places are free (at once when they are now). Returns the
   * function that takes it off the list, for a waiter that stops waiting for another reason.
   */
  onRoom(wake: () => void, least = 1): () => void {
    if (this.free() >= least) {
      wake();
      return () => undefined;
    }
    this.waiters.set(wake, least);
    return () => this.waiters.delete(wake);
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    const free = this.free();
    for (const [w, least] of this.waiters) {
      if (free < least) continue;
      this.waiters.delete(w);
      w();
    }
  }
}

/**
 * The events a shard consumer holds, by stream sequence. Every event it adds or removes is
 * counted in the node's buffer, so the count can never drift from what is really held.
 */
export class HeldEvents<T> extends Map<number, T> {
  /** `onEmpty`: the last event held was removed. */
  constructor(
    private readonly buffer: IngestBuffer,
    private readonly onEmpty: () => void = () => undefined,
  ) {
    super();
  }

  override set(seq: number, value: T): this {
    if (!this.has(seq)) this.buffer.hold();
    return super.set(seq, value);
  }

  override delete(seq: number): boolean {
    const had = super.delete(seq);
    if (had) this.buffer.release();
    if (had && this.size === 0) this.onEmpty();
    return had;
  }

  override clear(): void {
    for (let i = 0; i < this.size; i++) this.buffer.release();
    super.clear();
  }
}
