/** unit: the `github_general` bucket (spec §3.2, §8) on a fake clock. */
import { describe, expect, it } from 'vitest';
import {
  capacity,
  newGate,
  observe,
  pause,
  reserveOf,
  take,
} from '../../src/connectors/codehost/backfill/rate-gate.js';

const T0 = 1_700_000_000_000;

function drain(s: ReturnType<typeof newGate>, now: number): number {
  let n = 0;
  while (take(s, now).ok) n++;
  return n;
}

describe('unit: code-host rate gate', () => {
  it('is sized from the installation limit, at least 5000 per hour: a minute of burst, then the hourly pace', () => {
    const s = newGate(T0);
    expect(drain(s, T0)).toBe(capacity(5000));
    const denied = take(s, T0);
    expect(denied).toMatchObject({ ok: false, reason: 'bucket' });
    // 5000/h is one token every 720 ms.
    expect(denied.ok === false && denied.retryAfterMs).toBe(720);
    expect(take(s, T0 + 720).ok).toBe(true);
    expect(take(s, T0 + 720).ok).toBe(false);
  });

  it('never sizes below 5000/h, and grows with a larger observed limit', () => {
    const small = newGate(T0);
    observe(small, { limit: 1000, remaining: 900, resetAtMs: T0 + 3_600_000 }, T0);
    expect(small.limit).toBe(5000);
    const big = newGate(T0);
    observe(big, { limit: 15_000, remaining: 15_000, resetAtMs: T0 + 3_600_000 }, T0);
    expect(big.limit).toBe(15_000);
    // Refill at the new size: a minute later the burst is 250.
    expect(drain(big, T0 + 60_000)).toBe(capacity(15_000));
  });

  it('respects the observed remaining: shut at the reserve until the reset, then open again', () => {
    const s = newGate(T0);
    const reset = T0 + 600_000;
    observe(s, { limit: 5000, remaining: reserveOf(5000) + 2, resetAtMs: reset }, T0);
    expect(take(s, T0).ok).toBe(true);
    expect(take(s, T0).ok).toBe(true);
    const shut = take(s, T0 + 1000);
    expect(shut).toEqual({ ok: false, retryAfterMs: reset - (T0 + 1000), reason: 'budget' });
    expect(take(s, reset).ok).toBe(true);
  });

  it('keeps the lowest remaining of one window whatever order observations arrive in', () => {
    const s = newGate(T0);
    const reset = T0 + 600_000;
    observe(s, { limit: 5000, remaining: 100, resetAtMs: reset }, T0);
    observe(s, { limit: 5000, remaining: 4000, resetAtMs: reset }, T0);
    expect(s.remaining).toBe(100);
    observe(s, { limit: 5000, remaining: 4999, resetAtMs: reset + 3_600_000 }, T0);
    expect(s.remaining).toBe(4999);
  });

  it('a secondary limit pauses for its retry-after, or 60 s without one', () => {
    const s = newGate(T0);
    pause(s, 120, T0);
    expect(take(s, T0 + 119_000)).toMatchObject({ ok: false, reason: 'paused', retryAfterMs: 1000 });
    expect(take(s, T0 + 120_000).ok).toBe(true);
    const t = newGate(T0);
    pause(t, 5, T0);
    expect(take(t, T0 + 4_999)).toMatchObject({ ok: false, reason: 'paused' });
    expect(take(t, T0 + 5_000).ok).toBe(true);
    // A later, shorter pause never shortens a longer one.
    pause(t, 120, T0);
    pause(t, 5, T0);
    expect(t.pausedUntilMs).toBe(T0 + 120_000);
    const u = newGate(T0);
    pause(u, null, T0);
    expect(u.pausedUntilMs).toBe(T0 + 60_000);
  });
});
