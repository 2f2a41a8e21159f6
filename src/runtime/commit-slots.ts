/**
 * How many ingest batches a node commits at once (ARCHITECTURE.md "Inbound" 2, group commit).
 *
 * A lane takes its batch only once it holds a slot, so what arrives while it waits for one
 * joins that batch: under load many installs make fewer, larger transactions instead of
 * each its own small one, and Postgres spends its time on rows rather than on commits. A
 * quiet node never waits (a free slot is taken at once). Waiters are served in arrival order.
 */
/**
 * Unless told otherwise (SERVICE_INGEST_COMMIT_SLOTS). Measured on 2 cores, 32 busy installs:
 * 1 slot 2 000 committed/s, 2 slots 3 000/s, 4 slots 2 400/s, 8 slots 1 900/s (README "Performance").
 */
export const DEFAULT_COMMIT_SLOTS = 2;

export class CommitSlots {
  private free: number;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`commit slots must be a positive integer, got ${size}`);
    this.free = size;
  }

  /** Resolves with the function that gives the slot back (call it exactly once). */
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.free++;
    };
  }

  /** Lanes waiting for a slot now (a gauge of commit pressure). */
  waiting(): number {
    return this.waiters.length;
  }
}
