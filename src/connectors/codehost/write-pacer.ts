/**
 * Pacing of one GitHub installation's content-creating requests (GitHub's secondary rate
 * limits: about 80 a minute, sent one after another) and the hold after GitHub said
 * "slow down" (INTERFACE §8.4, §8.26: that installation refuses writes until it passed).
 *
 * A token bucket that takes reservations: a write either goes now, waits for its slot
 * (when the wait fits the caller's budget), or is refused with the time to retry. Pure
 * and clock-free (the caller passes `now`), so the math is unit-tested with a fake clock.
 */

/** GitHub docs, "Best practices": no more than 80 content-generating requests a minute. */
export const GITHUB_WRITES_PER_MINUTE = 80;
/** A short burst is fine; sustained traffic is held to the rate. */
export const GITHUB_WRITE_BURST = 5;

export type WriteReservation = { ok: true; waitMs: number } | { ok: false; retryAfterMs: number; held: boolean };

export class WritePacer {
  private tokens: number;
  private last: number;
  private holdUntil = 0;
  private readonly perMs: number;

  constructor(
    private readonly opts: { perMinute: number; burst: number },
    now: number,
  ) {
    this.perMs = opts.perMinute / 60_000;
    this.tokens = opts.burst;
    this.last = now;
  }

  /** Epoch ms until which writes are refused (0 when not held). */
  get heldUntil(): number {
    return this.holdUntil;
  }

  /** GitHub asked us to stop until `untilMs`; a later hold never shortens an earlier one. */
  hold(untilMs: number): void {
    this.holdUntil = Math.max(this.holdUntil, untilMs);
  }

  /** Takes the next slot if it comes within `maxWaitMs`. */
  reserve(now: number, maxWaitMs: number): WriteReservation {
    if (this.holdUntil > now) return { ok: false, retryAfterMs: this.holdUntil - now, held: true };
    this.tokens = Math.min(this.opts.burst, this.tokens + Math.max(0, now - this.last) * this.perMs);
    this.last = now;
    const waitMs = this.tokens >= 1 ? 0 : (1 - this.tokens) / this.perMs;
    if (waitMs > Math.max(0, maxWaitMs)) return { ok: false, retryAfterMs: waitMs, held: false };
    // The slot is taken now; tokens may go negative, which pushes the next slot further out.
    this.tokens -= 1;
    return { ok: true, waitMs };
  }
}
