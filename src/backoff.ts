/**
 * The one retry policy: capped exponential backoff with full jitter, bounded by a
 * deadline. Retry number `n` (1 = the first retry after a failure) waits a uniform draw
 * in [min, ceiling), where the ceiling doubles from `firstMs` up to `capMs` (AWS's "full
 * jitter": retries of many callers that failed together spread out instead of colliding
 * again in step). An upstream's Retry-After lengthens the wait, never shortens it; a wait
 * that would end past the deadline is not taken. Pure: the caller brings the time and
 * the random draw (runtime/clock.ts, or a test's manual clock), so tests never sleep.
 *
 * Whether a failure is worth retrying at all is `isRetryable` (errors.ts), the one
 * classifier of outcomes.
 */
/** Time as timers see it (runtime/ports.ts `Clock` is one; tests hand a manual clock). */
export interface RetryClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface BackoffPolicy {
  /** The ceiling of the first retry's wait. */
  firstMs: number;
  /** The ceiling never grows past this. */
  capMs: number;
  /** The least wait (default 0: full jitter). */
  minMs?: number;
}

/** The ceiling of retry `n`'s wait (1-based; 0 and below read as 1). */
export function backoffCeilingMs(p: BackoffPolicy, n: number): number {
  const doublings = Math.min(Math.max(0, Math.floor(n) - 1), 30);
  return Math.min(p.capMs, p.firstMs * 2 ** doublings);
}

/** Retry `n`'s wait, in whole ms: uniform in [min, ceiling); `random` is in [0, 1). */
export function backoffMs(p: BackoffPolicy, n: number, random: () => number = Math.random): number {
  const ceiling = backoffCeilingMs(p, n);
  const min = Math.min(p.minMs ?? 0, ceiling);
  return min + Math.floor(random() * (ceiling - min));
}

export interface RetryAt {
  /** Retry number, 1-based. */
  attempt: number;
  /** The upstream's Retry-After, in seconds, when it gave one. */
  retryAfterS?: number;
  /** Epoch ms past which no retry starts (none: no deadline). */
  deadlineMs?: number;
}

/**
 * The wait before the next try, or null when the deadline leaves no room for it: the
 * jittered backoff, lengthened to the upstream's Retry-After.
 */
export function nextRetryMs(
  p: BackoffPolicy,
  r: RetryAt,
  now: number,
  random: () => number = Math.random,
): number | null {
  const wait = Math.max(backoffMs(p, r.attempt, random), (r.retryAfterS ?? 0) * 1000);
  if (r.deadlineMs !== undefined && now + wait >= r.deadlineMs) return null;
  return wait;
}

/**
 * Runs `attempt` until it succeeds, `retryable` says no, or the deadline leaves no room for
 * another try; throws the last failure then. Waits on `clock` (a test's manual clock
 * moves it), and stops waiting when `signal` aborts.
 */
export async function retrying<T>(
  attempt: (n: number) => Promise<T>,
  o: {
    policy: BackoffPolicy;
    retryable: (err: unknown) => boolean;
    deadlineMs?: number;
    retryAfterS?: (err: unknown) => number | undefined;
    clock: RetryClock;
    random?: () => number;
    signal?: AbortSignal;
    onRetry?: (err: unknown, n: number, waitMs: number) => void;
  },
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!o.retryable(err) || o.signal?.aborted) throw err;
      const at = { attempt: n, retryAfterS: o.retryAfterS?.(err), deadlineMs: o.deadlineMs };
      const wait = nextRetryMs(o.policy, at, o.clock.now(), o.random);
      if (wait === null) throw err;
      o.onRetry?.(err, n, wait);
      await sleepOn(o.clock, wait, o.signal);
    }
  }
}

function sleepOn(clock: RetryClock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(handle);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const handle = clock.setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
