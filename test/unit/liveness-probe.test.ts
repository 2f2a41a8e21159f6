import { describe, expect, it } from 'vitest';
import { LivenessProbe, REUSE_MS } from '../../src/runtime/liveness-probe.js';

/** A check the test answers by hand, counting how often it was started. */
function manualCheck() {
  const started: Array<{ answer: () => void; fail: () => void }> = [];
  const check = () =>
    new Promise<void>((resolve, reject) => started.push({ answer: resolve, fail: () => reject(new Error('refused')) }));
  return { started, check };
}

const settledWithin = async (p: Promise<unknown>) => {
  let settled = false;
  void p.then(() => (settled = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return settled;
};

/** Time as the probe reads it, moved by the test. */
function manualTime() {
  let t = 1_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('LivenessProbe', () => {
  it('waiters arriving while a check is under way share it', async () => {
    const { started, check } = manualCheck();
    const time = manualTime();
    const probe = new LivenessProbe('Postgres', check, { now: time.now });
    const a = probe.answered();
    const b = probe.answered();
    expect(started).toHaveLength(1);
    started[0]!.answer();
    await expect(Promise.all([a, b])).resolves.toEqual([true, true]);
    // Past the reuse window the next waiter starts a new check: an answer is not kept.
    time.advance(REUSE_MS);
    void probe.answered();
    expect(started).toHaveLength(2);
  });

  it('waiters arriving just after a check settled take its outcome: one check per window, however many wait', async () => {
    const { started, check } = manualCheck();
    const time = manualTime();
    const probe = new LivenessProbe('Postgres', check, { now: time.now });
    const first = probe.answered();
    started[0]!.answer();
    await expect(first).resolves.toBe(true);
    // A thousand waiters whose rounds fall just after it (each round 250 ms, not in step).
    for (let i = 0; i < 1000; i++) {
      const answer = probe.answered();
      expect(started).toHaveLength(1);
      await expect(answer).resolves.toBe(true);
      time.advance((REUSE_MS - 1) / 1000);
    }
    // A refusal too (a server refusing connections is not asked a thousand times a second).
    time.advance(REUSE_MS);
    const refused = probe.answered();
    started[1]!.fail();
    await expect(refused).resolves.toBe(false);
    for (let i = 0; i < 100; i++) {
      const answer = probe.answered();
      expect(started).toHaveLength(2);
      await expect(answer).resolves.toBe(false);
    }
  });

  it('a refused check is no answer, a hung one none yet, and a waiter after the window checks again', async () => {
    const { started, check } = manualCheck();
    const time = manualTime();
    const probe = new LivenessProbe('NATS', check, { now: time.now });
    const refused = probe.answered();
    expect(await settledWithin(refused)).toBe(false);
    started[0]!.fail();
    await expect(refused).resolves.toBe(false);
    time.advance(REUSE_MS);
    const next = probe.answered();
    expect(started).toHaveLength(2);
    started[1]!.answer();
    await expect(next).resolves.toBe(true);
  });
});
