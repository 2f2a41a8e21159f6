import { describe, expect, it } from 'vitest';
import { LivenessProbe } from '../../src/runtime/liveness-probe.js';

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

describe('LivenessProbe', () => {
  it('waiters arriving while a check is under way share it', async () => {
    const { started, check } = manualCheck();
    const probe = new LivenessProbe('Postgres', check);
    const a = probe.answered();
    const b = probe.answered();
    expect(started).toHaveLength(1);
    started[0]!.answer();
    await expect(Promise.all([a, b])).resolves.toEqual([true, true]);
    // The next waiter starts a new check: an answer is not cached.
    void probe.answered();
    expect(started).toHaveLength(2);
  });

  it('a refused check is no answer, a hung one none yet, and the next waiter checks again', async () => {
    const { started, check } = manualCheck();
    const probe = new LivenessProbe('NATS', check);
    const refused = probe.answered();
    expect(await settledWithin(refused)).toBe(false);
    started[0]!.fail();
    await expect(refused).resolves.toBe(false);
    const next = probe.answered();
    expect(started).toHaveLength(2);
    started[1]!.answer();
    await expect(next).resolves.toBe(true);
  });
});
