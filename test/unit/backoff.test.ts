/** Unit: the one retry policy (src/backoff.ts): full jitter, cap, Retry-After, deadline, on a manual clock. */
import { describe, expect, it } from 'vitest';
import { backoffCeilingMs, backoffMs, nextRetryMs, retrying } from '../../src/backoff.js';
import { ManualClock } from '../support/clock.js';

const policy = { firstMs: 100, capMs: 1_000 };
const top = () => 0.999_999;
const bottom = () => 0;
/** Lets the retry loop reach its wait before the clock moves. */
const settle = () => new Promise((r) => setImmediate(r));

describe('backoff', () => {
  it('doubles the ceiling from the first wait up to the cap, without overflow', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffCeilingMs(policy, n))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoffCeilingMs(policy, 10_000)).toBe(1_000);
    expect(backoffCeilingMs(policy, 0)).toBe(100);
  });

  it('draws the wait uniformly between the least wait (0 unless set) and the ceiling', () => {
    expect(backoffMs(policy, 3, bottom)).toBe(0);
    expect(backoffMs(policy, 3, top)).toBe(399);
    expect(backoffMs(policy, 3, () => 0.5)).toBe(200);
    expect(backoffMs({ ...policy, minMs: 80 }, 3, bottom)).toBe(80);
    expect(backoffMs({ ...policy, minMs: 5_000 }, 1, bottom)).toBe(100);
  });

  it("waits at least the upstream's Retry-After, and takes no wait that ends past the deadline", () => {
    expect(nextRetryMs(policy, { attempt: 1, retryAfterS: 3 }, 0, top)).toBe(3_000);
    expect(nextRetryMs(policy, { attempt: 4 }, 0, top)).toBe(799);
    expect(nextRetryMs(policy, { attempt: 4, deadlineMs: 800 }, 0, top)).toBe(799);
    expect(nextRetryMs(policy, { attempt: 4, deadlineMs: 799 }, 0, top)).toBeNull();
    expect(nextRetryMs(policy, { attempt: 1, retryAfterS: 3, deadlineMs: 2_000 }, 0, bottom)).toBeNull();
  });
});

describe('retrying', () => {
  it('retries what is retryable on the clock until it succeeds', async () => {
    const clock = new ManualClock();
    const waits: number[] = [];
    let calls = 0;
    const run = retrying(
      async () => {
        calls++;
        if (calls < 3) throw new Error('not yet');
        return 'done';
      },
      { policy, retryable: () => true, clock, random: top, onRetry: (_e, _n, ms) => waits.push(ms) },
    );
    await settle();
    await clock.advance(99);
    await settle();
    await clock.advance(199);
    await expect(run).resolves.toBe('done');
    expect(calls).toBe(3);
    expect(waits).toEqual([99, 199]);
  });

  it('throws at once what is not retryable, and the last failure once the deadline leaves no room', async () => {
    const clock = new ManualClock();
    let calls = 0;
    const permanent = new Error('404');
    await expect(
      retrying(
        async () => {
          calls++;
          throw permanent;
        },
        { policy, retryable: (e) => e !== permanent, clock },
      ),
    ).rejects.toBe(permanent);
    expect(calls).toBe(1);

    calls = 0;
    const run = retrying(
      async (n) => {
        calls++;
        throw new Error(`try ${n}`);
      },
      { policy, retryable: () => true, clock, random: top, deadlineMs: clock.now() + 500 },
    );
    const outcome = run.catch((e: Error) => e.message);
    await settle();
    await clock.advance(99);
    await settle();
    await clock.advance(199);
    expect(await outcome).toBe('try 3');
    expect(calls).toBe(3);
  });
});
