/** Unit: the node's delivery room, bytes of decoded batches handed to install actors at once. */
import { describe, expect, it } from 'vitest';
import { DeliveryRoom } from '../../src/ingest/delivery-room.js';

// No sleeps: a reservation that does not fit is queued before reserve() first yields, so
// waiting() is the positive sign that it was not admitted, and awaiting it shows it was.
describe('DeliveryRoom', () => {
  it('admits reservations while they fit, then waiters in arrival order as room frees', async () => {
    const room = new DeliveryRoom(100);
    const a = await room.reserve(60);
    const order: string[] = [];
    const b = room.reserve(60).then((r) => (order.push('b'), r));
    const c = room.reserve(10).then((r) => (order.push('c'), r));
    // c would fit, but waits behind b: first come, first served.
    expect(room.waiting()).toBe(2);
    a.release();
    await b;
    await c;
    expect(order).toEqual(['b', 'c']);
    expect(room.waiting()).toBe(0);
  });

  it('a reservation cut down to its batch size lets others in', async () => {
    const room = new DeliveryRoom(100);
    const a = await room.reserve(100);
    const b = room.reserve(100);
    expect(room.waiting()).toBe(1);
    a.resize(0);
    expect(room.waiting()).toBe(0);
    await b;
  });

  it('an empty room takes a reservation larger than itself; a release twice counts once', async () => {
    const room = new DeliveryRoom(10);
    const big = await room.reserve(50);
    big.release();
    big.release();
    const a = await room.reserve(10);
    const second = room.reserve(1);
    expect(room.waiting()).toBe(1);
    a.release();
    expect(room.waiting()).toBe(0);
    await second;
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new DeliveryRoom(0)).toThrow(/positive number/);
    expect(() => new DeliveryRoom(1.5)).toThrow(/positive number/);
  });
});
