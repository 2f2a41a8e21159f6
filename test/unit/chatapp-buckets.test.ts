import { describe, expect, it } from 'vitest';
import {
  CHANNEL_BUCKET,
  WORKSPACE_BUCKET,
  WORKSPACE_MAX_WAIT_MS,
  available,
  reserve,
} from '../../src/connectors/chatapp/rate-buckets.js';

describe('chat rate buckets (INTERFACE §8.5)', () => {
  it('channel: one write, then none until a second has passed', () => {
    const t0 = 1_000_000;
    const first = reserve(0, t0, CHANNEL_BUCKET);
    expect(first).toEqual({ ok: true, waitMs: 0, tat: t0 + 1_000 });
    const tat = (first as { tat: number }).tat;
    expect(reserve(tat, t0 + 1, CHANNEL_BUCKET)).toEqual({ ok: false, retryAfterMs: 999 });
    expect(reserve(tat, t0 + 999, CHANNEL_BUCKET)).toEqual({ ok: false, retryAfterMs: 1 });
    expect(reserve(tat, t0 + 1_000, CHANNEL_BUCKET)).toMatchObject({ ok: true, waitMs: 0 });
  });

  it('workspace: a burst of 100, then one per 600 ms, with waits up to 10 s granted and counted', () => {
    const t0 = 5_000_000;
    let tat = 0;
    for (let i = 0; i < 100; i++) {
      const r = reserve(tat, t0, WORKSPACE_BUCKET, WORKSPACE_MAX_WAIT_MS);
      expect(r).toMatchObject({ ok: true, waitMs: 0 });
      tat = (r as { tat: number }).tat;
    }
    expect(available(tat, t0, WORKSPACE_BUCKET)).toBe(0);
    const waits: number[] = [];
    for (;;) {
      const r = reserve(tat, t0, WORKSPACE_BUCKET, WORKSPACE_MAX_WAIT_MS);
      if (!r.ok) {
        // Refused beyond 10 s of waiting; nothing was counted for the refusal.
        expect(r.retryAfterMs).toBe(10_200);
        expect(reserve(tat, t0, WORKSPACE_BUCKET, WORKSPACE_MAX_WAIT_MS)).toEqual(r);
        break;
      }
      waits.push(r.waitMs);
      tat = r.tat;
    }
    expect(waits).toEqual(Array.from({ length: 16 }, (_, i) => (i + 1) * 600));
    // A minute later the bucket is full again.
    expect(available(tat, t0 + 60_000 + 16 * 600, WORKSPACE_BUCKET)).toBe(100);
  });

  it('refills continuously: 100 per minute on average', () => {
    let tat = 0;
    let granted = 0;
    for (let t = 0; t < 10 * 60_000; t += 100) {
      const r = reserve(tat, 1e9 + t, WORKSPACE_BUCKET);
      if (r.ok) {
        granted++;
        tat = r.tat;
      }
    }
    // 100 up front, then 100 per minute for 10 minutes.
    expect(granted).toBeGreaterThanOrEqual(1_099);
    expect(granted).toBeLessThanOrEqual(1_100);
  });
});
