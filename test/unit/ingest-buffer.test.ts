/** The node's bound on ingest events held: reservations, held events and bytes, and who waits for room. */
import { describe, expect, it } from 'vitest';
import { HeldEvents, IngestBuffer } from '../../src/ingest/buffer.js';

const KiB = 1024;
const MiB = 1024 * KiB;

describe('IngestBuffer', () => {
  it('counts reserved and held places against its capacity', () => {
    const b = new IngestBuffer(10);
    const r = b.reserve(6);
    expect(b.free()).toBe(4);
    // Three of the six arrive: each turns a reserved place into a held one.
    for (let i = 0; i < 3; i++) {
      b.hold(100);
      b.arrived(r);
    }
    expect([b.size(), b.free()]).toEqual([3, 4]);
    // The request ends short: its other three places come back, once.
    b.cancel(r);
    b.cancel(r);
    expect([b.size(), b.free()]).toEqual([3, 7]);
    b.release(100);
    expect([b.size(), b.free()]).toEqual([2, 8]);
  });

  it('onRoom calls at once while there is room, otherwise once an event is released', () => {
    const b = new IngestBuffer(2);
    let woken = 0;
    b.onRoom(() => woken++);
    expect(woken).toBe(1);
    b.hold(10);
    b.hold(10);
    b.onRoom(() => woken++);
    b.onRoom(() => woken++);
    expect(woken).toBe(1);
    b.release(10);
    expect(woken).toBe(3);
    // Each waiter is called once.
    b.release(10);
    expect(woken).toBe(3);
  });

  it('a reservation given back wakes the waiters too; a waiter taken off is not called', () => {
    const b = new IngestBuffer(4);
    const r = b.reserve(4);
    const woken: string[] = [];
    b.onRoom(() => woken.push('a'));
    const leave = b.onRoom(() => woken.push('b'));
    leave();
    b.hold(10);
    b.arrived(r);
    expect(woken).toEqual([]);
    b.cancel(r);
    expect(woken).toEqual(['a']);
  });

  it('a waiter for several places is called only once that many are free', () => {
    const b = new IngestBuffer(40);
    for (let i = 0; i < 40; i++) b.hold(10);
    const woken: string[] = [];
    b.onRoom(() => woken.push('one'));
    b.onRoom(() => woken.push('thirty-two'), 32);
    b.release(10);
    expect(woken).toEqual(['one']);
    for (let i = 0; i < 30; i++) b.release(10);
    expect(woken).toEqual(['one']);
    b.release(10);
    expect(woken).toEqual(['one', 'thirty-two']);
  });

  it('counts bytes too: room is what the free bytes hold at the moving mean of the sizes held', () => {
    const b = new IngestBuffer(1000, 1 * MiB);
    // Before any event: 4 KiB expected, so 256 events' worth.
    expect(b.free()).toBe(256);
    for (let i = 0; i < 64; i++) b.hold(16 * KiB);
    expect(b.bytes()).toBe(1 * MiB);
    expect(b.free()).toBe(0);
    for (let i = 0; i < 32; i++) b.release(16 * KiB);
    // 64 events of 16 KiB: about 16 KiB expected, so the 512 KiB free hold 32 more (give or take).
    expect(b.free()).toBeGreaterThanOrEqual(31);
    expect(b.free()).toBeLessThanOrEqual(33);
    // A request reserves at the size expected when it was made, and gives back as much.
    const before = b.free();
    const r = b.reserve(8);
    expect(b.free()).toBe(before - 8);
    b.hold(64 * KiB);
    b.arrived(r);
    b.cancel(r);
    b.release(64 * KiB);
    for (let i = 0; i < 32; i++) b.release(16 * KiB);
    expect([b.size(), b.bytes()]).toEqual([0, 0]);
    // Larger events raise what is expected within a few of them.
    for (let i = 0; i < 16; i++) {
      b.hold(256 * KiB);
      b.release(256 * KiB);
    }
    expect(b.free()).toBeLessThanOrEqual(6);
    // What an empty node holds at that size: what a busy shard's wait for room is a share of.
    expect(b.span()).toBe(b.free());
    expect(new IngestBuffer(100, 1 * MiB).span()).toBe(100);
  });

  it('a request gives back exactly the bytes it reserved, whatever is expected when it ends', () => {
    const b = new IngestBuffer(1000, 1 * MiB);
    const r = b.reserve(10);
    expect(b.bytesReserved()).toBe(10 * 4 * KiB);
    // The expected size moves while the request is open (another shard's events).
    for (let i = 0; i < 20; i++) b.hold(64 * KiB);
    b.hold(1 * KiB);
    b.arrived(r);
    expect(b.bytesReserved()).toBe(9 * 4 * KiB);
    b.cancel(r);
    expect(b.bytesReserved()).toBe(0);
    // A second request, reserved at the new size, gives back the same.
    const r2 = b.reserve(2);
    const reserved = b.bytesReserved();
    expect(reserved).toBeGreaterThan(2 * 40 * KiB);
    b.arrived(r2);
    expect(b.bytesReserved()).toBe(reserved / 2);
  });

  it('a waiter for more than an empty node now holds is woken once the node has what it can hold', () => {
    const b = new IngestBuffer(1000, 1 * MiB);
    for (let i = 0; i < 64; i++) b.hold(16 * KiB);
    let woken = false;
    b.onRoom(() => (woken = true), 32);
    // Larger events come: an empty node would now hold 8 of them, never 32.
    for (let i = 0; i < 64; i++) b.hold(128 * KiB);
    for (let i = 0; i < 64; i++) b.release(128 * KiB);
    expect(b.span()).toBeLessThan(32);
    expect(woken).toBe(false);
    for (let i = 0; i < 64; i++) b.release(16 * KiB);
    expect(woken).toBe(true);
  });

  it('an event larger than the whole byte bound fits an empty node, and nothing more until it is gone', () => {
    const b = new IngestBuffer(100, 1 * MiB);
    for (let i = 0; i < 32; i++) {
      b.hold(3 * MiB);
      b.release(3 * MiB);
    }
    expect(b.free()).toBe(1);
    b.hold(3 * MiB);
    expect(b.free()).toBe(0);
    let woken = false;
    b.onRoom(() => (woken = true));
    b.release(3 * MiB);
    expect(woken).toBe(true);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new IngestBuffer(0)).toThrow();
    expect(() => new IngestBuffer(1.5)).toThrow();
    expect(() => new IngestBuffer(10, 0)).toThrow();
  });
});

describe('HeldEvents', () => {
  it('holds a place per sequence it keeps, once however often it is set, and gives it back on delete or clear', () => {
    const b = new IngestBuffer(10);
    const held = new HeldEvents<string>(b, (v) => v.length);
    held.set(1, 'a');
    held.set(1, 'a again');
    held.set(2, 'bb');
    expect([b.size(), b.bytes()]).toEqual([2, 3]);
    expect(held.delete(1)).toBe(true);
    expect(held.delete(1)).toBe(false);
    expect([b.size(), b.bytes()]).toEqual([1, 2]);
    held.set(3, 'ccc');
    held.clear();
    expect([held.size, b.size(), b.bytes()]).toEqual([0, 0, 0]);
  });

  it('gives back the bytes it held for a sequence, even when its value changed since', () => {
    const b = new IngestBuffer(10);
    const held = new HeldEvents<{ data: string }>(b, (v) => v.data.length);
    const v = { data: 'abcd' };
    held.set(7, v);
    v.data = 'a';
    held.delete(7);
    expect(b.bytes()).toBe(0);
  });
});
