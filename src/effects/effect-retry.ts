/**
 * When a failed side effect runs again (INTERFACE §9.4): capped exponential backoff from
 * the first retry within 10 s to at most 5 minutes apart, never sooner than the upstream's
 * Retry-After, and given up once the effect is 24 hours old. Pure: the runner
 * (effect-runner.ts) passes its clock's time, so the schedule is tested without waiting.
 */

export interface EffectTimings {
  /** First retry delay; doubles per attempt (INTERFACE §9.4: first retry within 10 s). */
  retryBaseMs: number;
  /** INTERFACE §9.4: at most 5 minutes apart. */
  retryCapMs: number;
  /** INTERFACE §9.4: given up after 24 hours. */
  giveUpAfterMs: number;
  /** Poll for due effects this often (wakes at once after a local commit). */
  pollMs: number;
  /** One attempt may take this long before it is aborted and counted as failed. */
  attemptTimeoutMs: number;
}

export const DEFAULT_EFFECT_TIMINGS: EffectTimings = {
  retryBaseMs: 5_000,
  retryCapMs: 5 * 60_000,
  giveUpAfterMs: 24 * 3600_000,
  pollMs: 1_000,
  attemptTimeoutMs: 90_000,
};

/** Delay before retry number `attempts` (1-based), jittered down by up to 20 %. */
export function effectRetryDelayMs(
  attempts: number,
  t: Pick<EffectTimings, 'retryBaseMs' | 'retryCapMs'>,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(t.retryCapMs, t.retryBaseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling * (0.8 + random() * 0.2));
}

export interface FailedAttempt {
  /** Attempts so far, this one included (1-based). */
  attempts: number;
  createdAtMs: number;
  /** The upstream's Retry-After, when the error carried one. */
  retryAfterS?: number;
}

export function effectRetryPlan(
  f: FailedAttempt,
  nowMs: number,
  t: Pick<EffectTimings, 'retryBaseMs' | 'retryCapMs' | 'giveUpAfterMs'>,
  random: () => number = Math.random,
): { giveUp: boolean; retryInMs: number } {
  const giveUp = nowMs - f.createdAtMs >= t.giveUpAfterMs;
  const retryAfterMs = f.retryAfterS !== undefined ? f.retryAfterS * 1000 : 0;
  const retryInMs = Math.min(t.retryCapMs, Math.max(effectRetryDelayMs(f.attempts, t, random), retryAfterMs));
  return { giveUp, retryInMs };
}
