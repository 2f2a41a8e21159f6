/**
 * Token buckets for chat writes (spec §8, INTERFACE §8.5) as GCRA: a bucket of
 * `capacity` refilled at one token per `intervalMs` is one number, the theoretical
 * arrival time (`tat`) of the next token. A reservation may be granted with a wait (the
 * workspace bucket lets an emit wait up to 10 s, INTERFACE §3) and is then counted at
 * once, so waiters line up without holding anyone's mailbox. Pure: the clock is a parameter.
 */

export interface BucketSpec {
  capacity: number;
  intervalMs: number;
}

/** spec §8 / INTERFACE §8.5: capacity 1, one token per second, per channel. */
export const CHANNEL_BUCKET: BucketSpec = { capacity: 1, intervalMs: 1_000 };
/** spec §8 / INTERFACE §8.5: capacity 100, 100 per minute, per workspace. */
export const WORKSPACE_BUCKET: BucketSpec = { capacity: 100, intervalMs: 600 };
/** INTERFACE §3: an emit waits at most this long for a workspace token, then answers 429. */
export const WORKSPACE_MAX_WAIT_MS = 10_000;

export type BucketReservation = { ok: true; waitMs: number; tat: number } | { ok: false; retryAfterMs: number };

/** Reserve one token at `now`, waiting at most `maxWaitMs`; a refusal changes nothing. */
export function reserve(tat: number, now: number, spec: BucketSpec, maxWaitMs = 0): BucketReservation {
  const burstMs = (spec.capacity - 1) * spec.intervalMs;
  const base = Math.max(tat, now);
  const waitMs = Math.max(0, base - burstMs - now);
  if (waitMs > maxWaitMs) return { ok: false, retryAfterMs: waitMs };
  return { ok: true, waitMs, tat: base + spec.intervalMs };
}

/** Tokens left at `now` (for metrics and tests). */
export function available(tat: number, now: number, spec: BucketSpec): number {
  const owed = Math.max(0, tat - now);
  return Math.max(0, Math.min(spec.capacity, Math.floor((spec.capacity * spec.intervalMs - owed) / spec.intervalMs)));
}
