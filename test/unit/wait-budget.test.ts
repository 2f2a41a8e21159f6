/** A request's wait budget (src/wait-budget.ts, INTERFACE §9.3): what is left, and when it is spent. */
import { describe, expect, it } from 'vitest';
import { WaitBudget } from '../../src/wait-budget.js';

describe('WaitBudget', () => {
  it('leaves its limit less what the waits took', () => {
    const b = new WaitBudget(1_000);
    b.spend(400.25);
    b.spend(-5); // a clock step back spends nothing
    expect(b.leftMs()).toBeCloseTo(599.75, 9);
    b.spend(598.75);
    expect(b.leftMs()).toBeCloseTo(1, 9);
  });

  it('is spent when less than a timer millisecond is left: a wait cut at what was left can measure that short', () => {
    const b = new WaitBudget(1_000);
    b.spend(999.99747); // the cut statement's timer fired 0.0025 ms early by performance.now()
    expect(b.leftMs()).toBe(0);
    b.spend(10);
    expect(b.leftMs()).toBe(0);
    expect(b.spentMs).toBeCloseTo(1_009.99747, 9);
  });
});
