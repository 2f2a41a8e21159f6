/** The node's bound on ingest events held: reservations, held events and who waits for room. */
import { describe, expect, it } from 'vitest';
import { HeldEvents, IngestBuffer } from '../../src/runtime/ingest-buffer.js';

describe('IngestBuffer', () => {
  it('counts reserved and held places against its capacity', () => {
    const b = new IngestBuffer(10);
    b.reserve(6);
    expect(b.free()).toBe(4);
    // Three of the six arrive: each turns a reserved place into a held one.
    for (let i = 0; i < 3; i++) {
      b.unreserve(1);
      b.hold();
    }
    expect([b.size(), b.free()]).toEqual([3, 4]);
    // The request ends short: its other three places come back.
    b.unreserve(3);
    expect([b.size(), b.free()]).toEqual([3, 7]);
    b.release();
    expect([b.size(), b.free()]).toEqual([2, 8]);
  });

  it('room() is null while there is room and otherwise resolves when an event is released', async () => {
    const b = new IngestBuffer(2);
    expect(b.room()).toBeNull();
    b.hold();
    b.hold();
    const waiters = [b.room(), b.room()];
    expect(waiters.every((w) => w instanceof Promise)).toBe(true);
    let woken = 0;
    for (const w of waiters) void w!.then(() => woken++);
    await Promise.resolve();
    expect(woken).toBe(0);
    b.release();
    await Promise.resolve();
    expect(woken).toBe(2);
  });

  it('a reservation given back wakes the waiters too', async () => {
    const b = new IngestBuffer(4);
    b.reserve(4);
    const w = b.room();
    let woken = false;
    void w!.then(() => (woken = true));
    b.unreserve(1);
    await Promise.resolve();
    expect(woken).toBe(true);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new IngestBuffer(0)).toThrow();
    expect(() => new IngestBuffer(1.5)).toThrow();
  });
});

describe('HeldEvents', () => {
  it('holds a place per sequence it keeps, once however often it is set, and gives it back on delete or clear', () => {
    const b = new IngestBuffer(10);
    const held = new HeldEvents<string>(b);
    held.set(1, 'a');
    held.set(1, 'a again');
    held.set(2, 'b');
    expect(b.size()).toBe(2);
    expect(held.delete(1)).toBe(true);
    expect(held.delete(1)).toBe(false);
    expect(b.size()).toBe(1);
    held.set(3, 'c');
    held.clear();
    expect([held.size, b.size()]).toEqual([0, 0]);
  });
});
