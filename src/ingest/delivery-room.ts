/**
 * How much decoded event data a node's shard consumers hand to the install actors at once
 * (ARCHITECTURE.md "Inbound" 2). Many installs' batches may wait together for one ingest
 * transaction (group commit across installs), and a batch holds its events decoded, blobs
 * included (up to 25 MiB each), which the stream's in-flight bound does not count
 * (buffer.ts counts message data). A lane reserves a full batch's bytes before it
 * admits one, then keeps only what its batch holds: small batches of many installs pass
 * together, large ones two at a time. Waiters are served in arrival order.
 *
 * The bound is on reservations: a batch stops taking events once it holds `maxBatchBytes`,
 * so it may pass that by its last event (a blob of up to 25 MiB). With the default room, two
 * full batches at once hold at most about 2 × (4 + 25) MiB decoded, as the two commit slots
 * did before batches of several installs shared a transaction.
 */

/** Unless told otherwise: two full batches (consumer.ts `maxBatchBytes`). */
const DEFAULT_DELIVERY_ROOM_BYTES = 8 * 1024 * 1024;

export interface RoomReservation {
  /** Keep `bytes` instead of what was reserved (the batch's real size). */
  resize(bytes: number): void;
  /** Give the room back (idempotent). */
  release(): void;
}

export class DeliveryRoom {
  private used = 0;
  private readonly waiters: Array<{ bytes: number; admit: () => void }> = [];

  constructor(readonly capacityBytes: number = DEFAULT_DELIVERY_ROOM_BYTES) {
    if (!Number.isInteger(capacityBytes) || capacityBytes < 1)
      throw new Error(`delivery room must be a positive number of bytes, got ${capacityBytes}`);
  }

  /** Waits until `bytes` fit (a reservation larger than the room fits an empty room). */
  async reserve(bytes: number): Promise<RoomReservation> {
    if (this.waiters.length === 0 && this.fits(bytes)) this.used += bytes;
    else await new Promise<void>((admit) => this.waiters.push({ bytes, admit }));
    let held = bytes;
    return {
      resize: (n) => {
        this.used += n - held;
        held = n;
        this.wake();
      },
      release: () => {
        this.used -= held;
        held = 0;
        this.wake();
      },
    };
  }

  /** Lanes waiting for room now (a gauge of delivery pressure). */
  waiting(): number {
    return this.waiters.length;
  }

  private fits(bytes: number): boolean {
    return this.used === 0 || this.used + bytes <= this.capacityBytes;
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const w = this.waiters.shift()!;
      this.used += w.bytes;
      w.admit();
    }
  }
}
