/** The node's ingest commit slots: a bounded count, served in arrival order. */
import { describe, expect, it } from 'vitest';
import { CommitSlots } from '../../src/runtime/commit-slots.js';

describe('CommitSlots', () => {
  it('hands out its size at once, then serves waiters first come first served', async () => {
    const slots = new CommitSlots(2);
    const a = await slots.acquire();
    const b = await slots.acquire();
    const order: string[] = [];
    const c = slots.acquire().then((r) => (order.push('c'), r));
    const d = slots.acquire().then((r) => (order.push('d'), r));
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(slots.waiting()).toBe(2);
    b();
    (await c)();
    a();
    (await d)();
    expect(order).toEqual(['c', 'd']);
    expect(slots.waiting()).toBe(0);
  });

  it('a slot given back twice counts once', async () => {
    const slots = new CommitSlots(1);
    const a = await slots.acquire();
    a();
    a();
    await slots.acquire();
    let third = false;
    void slots.acquire().then(() => (third = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(third).toBe(false);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new CommitSlots(0)).toThrow(/positive integer/);
    expect(() => new CommitSlots(1.5)).toThrow(/positive integer/);
  });
});
