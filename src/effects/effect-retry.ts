/**
 * When a failed side effect runs again (INTERFACE §9.4): the one retry policy (backoff.ts:
 * full jitter, the first retry within 10 s, at most 5 minutes apart), never sooner than the
 * upstream's Retry-After, and given up once the effect is 24 hours old, or at once when the
 * failure cannot be mended by retrying (`isRetryable`, errors.ts: a 404 or 422 upstream, a
 * refused payload). Pure: the runner (effect-runner.ts) passes its clock's time, so the
 * schedule is tested without waiting.
 */
import { backoffMs, nextRetryMs } from '../backoff.js';

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

/** Delay before retry number `attempts` (1-based): the effects' policy, without a Retry-After. */
export function effectRetryDelayMs(
  attempts: number,
  t: Pick<EffectTimings, 'retryBaseMs' | 'retryCapMs'>,
  random: () => number = Math.random,
): number {
  return backoffMs({ firstMs: t.retryBaseMs, capMs: t.retryCapMs }, attempts, random);
}

export interface FailedAttempt {
  /** Attempts so far, this one included (1-based). */
  attempts: number;
  createdAtMs: number;
  /** The upstream's Retry-After, when the error carried one. */
  retryAfterS?: number;
  /** False when a retry cannot succeed (`isRetryable`): the effect fails at once. */
  retryable?: boolean;
}

export function effectRetryPlan(
  f: FailedAttempt,
  nowMs: number,
  t: Pick<EffectTimings, 'retryBaseMs' | 'retryCapMs' | 'giveUpAfterMs'>,
  random: () => number = Math.random,
): { giveUp: boolean; retryInMs: number } {
  const giveUp = f.retryable === false || nowMs - f.createdAtMs >= t.giveUpAfterMs;
  const policy = { firstMs: t.retryBaseMs, capMs: t.retryCapMs };
  const wait = nextRetryMs(policy, { attempt: f.attempts, retryAfterS: f.retryAfterS }, nowMs, random) ?? 0;
  return { giveUp, retryInMs: Math.min(t.retryCapMs, wait) };
}
