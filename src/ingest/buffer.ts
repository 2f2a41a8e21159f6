/**
 * How many ingest events a node holds at once across every shard it owns: pulled and not
 * yet settled (queued in a lane, committing, waiting for their ack), plus those its open
 * pull requests may still bring. The server bounds each shard on its own (max_ack_pending,
 * 1 024), so without this a node owning many backlogged shards, the usual case after an
 * outage with the default 64 shards, held up to 1 024 events per shard at once (a 32-install
 * drain over 64 shards peaked at 349 MiB). A node commits at most its commit slots × 512
 * events at a time (commit.ts), so what it holds beyond a few transactions
 * only waits.
 *
 * Bounded twice: in events, and in bytes of message data (messages run up to the server's
 * max_payload, 1 MiB by default, so 4 096 of them could hold 4 GiB).
 *
 * The shard consumers pull only what fits (pull.ts): a pull request reserves room
 * for the events it asks for, and each event it brings turns its reserved place into a held
 * one until the event is settled. The defaults of both bounds are in config-defaults.ts.
 */
import { DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES } from '../config-defaults.js';

/** What a request is expected to bring per event before any was seen. */
const FIRST_GUESS_BYTES = 4096;
/**
 * Weight of each event held in the expected size: a moving mean over about the last 16,
 * and the plain mean of all until 16 were seen (so the first event already sets it).
 */
const MEAN_WEIGHT = 1 / 16;

/**
 * The places a pull request reserved: `left` events it may still bring, each counted as
 * `each` bytes until it comes (the node's expected size when the request was made).
 */
export interface PullReservation {
  left: number;
  readonly each: number;
}

export class IngestBuffer {
  private held = 0;
  private heldBytes = 0;
  private reserved = 0;
  private reservedBytes = 0;
  /**
   * Bytes expected of the next event: the moving mean of those held lately. A request is
   * sized before its events' sizes are known, so the byte bound holds on average: when sizes
   * jump (900 KB pushes after 3 KB chat messages), the requests open then still bring what
   * they asked for at the old mean, at most their count times the server's max_payload, and
   * the node then asks for nothing until it is back under (the mean catches up within about
   * 16 events). The largest seen instead would hold it strictly, and shrink a node where one
   * push in fifty nears 1 MiB to a few dozen events in hand. (The server can bound a request
   * in bytes, but the client's fetch takes a count or a byte limit, not both, and a request
   * whose next message does not fit stalls until its heartbeats are missed.)
   */
  private expected = FIRST_GUESS_BYTES;
  private seen = 0;
  /** Who waits for room, with the room each waits for. */
  private readonly waiters = new Map<() => void, number>();

  constructor(
    readonly capacity: number,
    readonly capacityBytes: number = DEFAULT_INGEST_MAX_IN_FLIGHT_BYTES,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`ingest in-flight capacity must be a positive integer, got ${capacity}`);
    if (!Number.isInteger(capacityBytes) || capacityBytes < 1)
      throw new Error(`ingest in-flight byte capacity must be a positive integer, got ${capacityBytes}`);
  }

  /**
   * Events there is room for now: places neither held nor reserved, and no more than the
   * free bytes hold at the expected size. An event larger than the whole byte bound fits an
   * empty node (it would never fit otherwise).
   */
  free(): number {
    const places = this.capacity - this.held - this.reserved;
    const byBytes = Math.floor((this.capacityBytes - this.heldBytes - this.reservedBytes) / this.each());
    return Math.max(0, Math.min(places, byBytes));
  }

  /** Events an empty node would have room for: `free()` with nothing held or reserved. */
  span(): number {
    return Math.min(this.capacity, Math.floor(this.capacityBytes / this.each()));
  }

  /** Events held now (a gauge). */
  size(): number {
    return this.held;
  }

  /** Bytes of message data held now (a gauge). */
  bytes(): number {
    return this.heldBytes;
  }

  /** Reserve room for `n` events of a pull request (the caller asks for at most `free()`). */
  reserve(n: number): PullReservation {
    const r = { left: n, each: this.each() };
    this.reserved += n;
    this.reservedBytes += n * r.each;
    return r;
  }

  /** One event of `r` arrived (and was `hold`-ed): its reserved place goes back. */
  arrived(r: PullReservation): void {
    if (r.left <= 0) return;
    r.left--;
    this.unreserve(1, r.each);
  }

  /** The request of `r` ended: the places it did not fill go back. */
  cancel(r: PullReservation): void {
    const n = r.left;
    r.left = 0;
    this.unreserve(n, r.each);
  }

  hold(bytes: number): void {
    this.held++;
    this.heldBytes += bytes;
    this.seen++;
    const weight = Math.max(MEAN_WEIGHT, 1 / this.seen);
    this.expected = Math.max(1, Math.round(this.expected + (bytes - this.expected) * weight));
  }

  /** An event held was settled (acked, nak'd, dead-lettered, refused or handed back). */
  release(bytes: number): void {
    this.held = Math.max(0, this.held - 1);
    this.heldBytes = Math.max(0, this.heldBytes - bytes);
    this.wake();
  }

  /**
   * Call `wake` once there is room for `least` events (at once when there is now). Returns
   * the function that takes it off the list, for a waiter that stops waiting for another reason.
   */
  onRoom(wake: () => void, least = 1): () => void {
    if (this.free() >= Math.min(least, this.span())) {
      wake();
      return () => undefined;
    }
    this.waiters.set(wake, least);
    return () => this.waiters.delete(wake);
  }

  private each(): number {
    return Math.min(this.expected, this.capacityBytes);
  }

  private unreserve(n: number, each: number): void {
    if (n <= 0) return;
    this.reserved = Math.max(0, this.reserved - n);
    this.reservedBytes = this.reserved === 0 ? 0 : Math.max(0, this.reservedBytes - n * each);
    this.wake();
  }

  /** Bytes reserved by open requests (a request gives back exactly what it reserved). */
  bytesReserved(): number {
    return this.reservedBytes;
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    const free = this.free();
    // Room is counted at the expected size, which moves: a wait for more than an empty node
    // now holds would never end.
    const most = this.span();
    for (const [w, least] of this.waiters) {
      if (free < Math.min(least, most)) continue;
      this.waiters.delete(w);
      w();
    }
  }
}

/**
 * The events a shard consumer holds, by stream sequence. Every event it adds or removes is
 * counted in the node's buffer, with its size as it was when added, so the counts can never
 * drift from what is really held.
 */
export class HeldEvents<T> extends Map<number, T> {
  private readonly sizes = new Map<number, number>();

  /** `sizeOf`: an event's bytes; `onEmpty`: the last event held was removed. */
  constructor(
    private readonly buffer: IngestBuffer,
    private readonly sizeOf: (value: T) => number,
    private readonly onEmpty: () => void = () => undefined,
  ) {
    super();
  }

  override set(seq: number, value: T): this {
    if (!this.has(seq)) {
      const bytes = this.sizeOf(value);
      this.sizes.set(seq, bytes);
      this.buffer.hold(bytes);
    }
    return super.set(seq, value);
  }

  override delete(seq: number): boolean {
    const had = super.delete(seq);
    if (had) {
      this.buffer.release(this.sizes.get(seq) ?? 0);
      this.sizes.delete(seq);
    }
    if (had && this.size === 0) this.onEmpty();
    return had;
  }

  override clear(): void {
    for (const bytes of this.sizes.values()) this.buffer.release(bytes);
    this.sizes.clear();
    super.clear();
  }
}
