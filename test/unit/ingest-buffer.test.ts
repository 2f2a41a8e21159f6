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

  it('onRoom calls at once while there is room, otherwise once an event is released', () => {
    const b = new IngestBuffer(2);
    let woken = 0;
    b.onRoom(() => woken++);
    expect(woken).toBe(1);
    b.hold();
    b.hold();
    b.onRoom(() => woken++);
    b.onRoom(() => woken++);
    expect(woken).toBe(1);
    b.release();
    expect(woken).toBe(3);
    // Each waiter is called once.
    b.release();
    expect(woken).toBe(3);
  });

  it('a reservation given back wakes the waiters too; a waiter taken off is not called', () => {
    const b = new IngestBuffer(4);
    b.reserve(4);
    const woken: string[] = [];
    b.onRoom(() => woken.push('a'));
    const leave = b.onRoom(() => woken.push('b'));
    leave();
    b.unreserve(1);
    expect(woken).toEqual(['a']);
  });

  it('a waiter for several places is called only once that many are free', () => {
    const b = new IngestBuffer(40);
    for (let i = 0; i < 40; i++) b.hold();
    const woken: string[] = [];
    b.onRoom(() => woken.push('one'));
    b.onRoom(() => woken.push('thirty-two'), 32);
    b.release();
    expect(woken).toEqual(['one']);
    for (let i = 0; i < 30; i++) b.release();
    expect(woken).toEqual(['one']);
    b.release();
    expect(woken).toEqual(['one', 'thirty-two']);
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
