/**
 * Unit: the retry schedule of durable side effects (actors/effect-retry.ts, INTERFACE §9.4):
 * first retry within 10 s, doubling, at most 5 minutes apart, Retry-After honoured, given
 * up at 24 hours. Time and jitter are arguments, so nothing here waits.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_EFFECT_TIMINGS, effectRetryPlan } from '../../src/effects/effect-retry.js';

const created = 1_700_000_000_000;
const top = () => 0.999_999;
const bottom = () => 0;

describe('effect retry schedule (INTERFACE §9.4)', () => {
  it('doubles its ceiling from 5 s to the 5-minute cap, with full jitter below it', () => {
    const plan = (attempts: number, random: () => number) =>
      effectRetryPlan({ attempts, createdAtMs: created }, created + 1_000, DEFAULT_EFFECT_TIMINGS, random).retryInMs;
    const ceilings = [5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000];
    expect(ceilings.map((_, i) => plan(i + 1, top))).toEqual(ceilings.map((c) => c - 1));
    expect(ceilings.map((_, i) => plan(i + 1, bottom))).toEqual(ceilings.map(() => 0));
    expect(plan(1, top)).toBeLessThanOrEqual(10_000); // first retry within 10 s
    expect(plan(60, top)).toBe(299_999); // no overflow after many attempts
  });

  it('never retries sooner than the upstream Retry-After, and never later than the cap', () => {
    const t = DEFAULT_EFFECT_TIMINGS;
    expect(effectRetryPlan({ attempts: 1, createdAtMs: created, retryAfterS: 42 }, created, t, top).retryInMs).toBe(
      42_000,
    );
    expect(effectRetryPlan({ attempts: 1, createdAtMs: created, retryAfterS: 3_600 }, created, t, top).retryInMs).toBe(
      300_000,
    );
    expect(effectRetryPlan({ attempts: 4, createdAtMs: created, retryAfterS: 1 }, created, t, top).retryInMs).toBe(
      39_999,
    );
  });

  it('fails at once when a retry cannot mend the failure (an upstream 404 or 422)', () => {
    const t = DEFAULT_EFFECT_TIMINGS;
    expect(effectRetryPlan({ attempts: 1, createdAtMs: created, retryable: false }, created, t, top).giveUp).toBe(true);
    expect(effectRetryPlan({ attempts: 1, createdAtMs: created, retryable: true }, created, t, top).giveUp).toBe(false);
  });

  it('gives up once the effect is 24 hours old, not a millisecond before', () => {
    const t = DEFAULT_EFFECT_TIMINGS;
    const day = 24 * 3600_000;
    expect(effectRetryPlan({ attempts: 300, createdAtMs: created }, created + day - 1, t, top).giveUp).toBe(false);
    expect(effectRetryPlan({ attempts: 300, createdAtMs: created }, created + day, t, top).giveUp).toBe(true);
  });
});
