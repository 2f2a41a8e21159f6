/** Unit: the installation write pacer with a fake clock (INTERFACE §8.4, §8.26). */
import { describe, expect, it } from 'vitest';
import { GITHUB_WRITE_BURST, GITHUB_WRITES_PER_MINUTE, WritePacer } from '../../src/connectors/codehost/write-pacer.js';

const opts = { perMinute: GITHUB_WRITES_PER_MINUTE, burst: GITHUB_WRITE_BURST };
const SLOT_MS = 60_000 / GITHUB_WRITES_PER_MINUTE;

describe('WritePacer', () => {
  it('lets a burst through, then spaces writes at 80 a minute', () => {
    const p = new WritePacer(opts, 0);
    for (let i = 0; i < GITHUB_WRITE_BURST; i++) expect(p.reserve(0, 10_000)).toEqual({ ok: true, waitMs: 0 });
    const waits = [1, 2, 3].map(() => p.reserve(0, 10_000));
    expect(waits).toEqual([1, 2, 3].map((k) => ({ ok: true, waitMs: expect.closeTo(k * SLOT_MS, 6) })));
  });

  it('sustains exactly the rate over a minute', () => {
    const p = new WritePacer(opts, 0);
    let granted = 0;
    for (let t = 0; t < 60_000; t += 10) {
      const r = p.reserve(t, 0);
      if (r.ok) granted++;
    }
    expect(granted).toBeGreaterThanOrEqual(GITHUB_WRITES_PER_MINUTE + GITHUB_WRITE_BURST - 1);
    expect(granted).toBeLessThanOrEqual(GITHUB_WRITES_PER_MINUTE + GITHUB_WRITE_BURST);
  });

  it('refuses a write whose slot is beyond the caller’s wait, with the time to retry, and takes nothing', () => {
    const p = new WritePacer({ perMinute: 60, burst: 1 }, 0);
    expect(p.reserve(0, 0).ok).toBe(true);
    expect(p.reserve(0, 500)).toEqual({ ok: false, retryAfterMs: 1000, held: false });
    expect(p.reserve(1000, 0)).toEqual({ ok: true, waitMs: 0 });
  });

  it('holds every write until a hold passed; a shorter hold never cuts a longer one', () => {
    const p = new WritePacer(opts, 0);
    p.hold(30_000);
    p.hold(10_000);
    expect(p.reserve(5_000, 60_000)).toEqual({ ok: false, retryAfterMs: 25_000, held: true });
    expect(p.heldUntil).toBe(30_000);
    expect(p.reserve(30_000, 0)).toEqual({ ok: true, waitMs: 0 });
  });
});
