/** unit: the rebalance arithmetic (targets, remainder placement, choice of shards). */
import { describe, expect, it } from 'vitest';
import {
  pickExtras,
  pickFree,
  preferenceOrder,
  releaseBatch,
  shareTable,
  targetShare,
  roundWaitMs,
  untilHeartbeatExpiry,
} from '../../src/runtime/rebalance.js';

describe('unit: rebalance targets', () => {
  it('gives the first S mod N nodes in sorted order ceil and the rest floor', () => {
    const t = shareTable(8, ['c', 'a', 'b']);
    expect(Object.fromEntries(t)).toEqual({ a: 3, b: 3, c: 2 });
    expect(Object.fromEntries(shareTable(10, ['d', 'b', 'c', 'a']))).toEqual({ a: 3, b: 3, c: 2, d: 2 });
  });

  it('targets always sum to S, each within floor..ceil, independent of input order', () => {
    for (let s = 1; s <= 40; s++) {
      for (let n = 1; n <= 12; n++) {
        const nodes = Array.from({ length: n }, (_, i) => `node-${(i * 7919) % 1000}`);
        const t = shareTable(s, nodes);
        const values = [...t.values()];
        expect(values.reduce((a, b) => a + b, 0)).toBe(s);
        for (const v of values) {
          expect(v).toBeGreaterThanOrEqual(Math.floor(s / n));
          expect(v).toBeLessThanOrEqual(Math.ceil(s / n));
        }
        expect(shareTable(s, [...nodes].reverse())).toEqual(t);
      }
    }
  });

  it('a single node owns everything; more nodes than shards leaves some at zero', () => {
    expect(targetShare(8, ['a'], 'a')).toBe(8);
    expect(Object.fromEntries(shareTable(2, ['z', 'y', 'x']))).toEqual({ x: 1, y: 1, z: 0 });
  });

  it('counts self as live when its heartbeat is not yet listed, and ignores duplicates', () => {
    expect(targetShare(8, [], 'a')).toBe(8);
    expect(targetShare(8, ['b'], 'a')).toBe(4);
    expect(targetShare(9, ['b', 'b', 'a'], 'a')).toBe(5);
    expect(targetShare(9, ['b', 'a'], 'b')).toBe(4);
  });

  it('releases half the excess per round, at least one, never below target', () => {
    expect(releaseBatch(8, 4)).toBe(2);
    expect(releaseBatch(6, 4)).toBe(1);
    expect(releaseBatch(5, 4)).toBe(1);
    expect(releaseBatch(4, 4)).toBe(0);
    expect(releaseBatch(2, 4)).toBe(0);
    expect(releaseBatch(64, 0)).toBe(32);
  });
});

describe('unit: rebalance shard choice', () => {
  it('preference order is a rotation of all shards starting at a per-node hash', () => {
    const order = preferenceOrder(16, 'node-a');
    expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    for (let i = 1; i < 16; i++) expect(order[i]).toBe((order[0]! + i) % 16);
    expect(preferenceOrder(16, 'node-a')).toEqual(order);
    const starts = new Set(['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].map((n) => preferenceOrder(64, n)[0]));
    expect(starts.size).toBeGreaterThan(3); // nodes do not all race for the same shard
  });

  it('pickFree skips taken shards and stops at count', () => {
    const order = preferenceOrder(8, 'n');
    const taken = new Set([order[0]!, order[2]!]);
    expect(pickFree(8, taken, 'n', 3)).toEqual([order[1], order[3], order[4]]);
    expect(pickFree(8, new Set([0, 1, 2, 3, 4, 5, 6, 7]), 'n', 3)).toEqual([]);
    expect(pickFree(8, new Set(), 'n', 0)).toEqual([]);
  });

  it('pickExtras gives up the least preferred owned shards', () => {
    const order = preferenceOrder(8, 'n');
    const owned = [order[0]!, order[3]!, order[6]!, order[7]!];
    expect(pickExtras(8, owned, 'n', 2)).toEqual([order[7], order[6]]);
    expect(pickExtras(8, owned, 'n', 0)).toEqual([]);
  });

  it('nodes following the rules converge to the exact table through joins and leaves', () => {
    const S = 32;
    const owner = new Map<number, string>();
    const round = (nodes: string[]) => {
      for (const n of nodes) {
        const mine = [...owner].filter(([, o]) => o === n).map(([s]) => s);
        const target = targetShare(S, nodes, n);
        if (mine.length > target) {
          for (const s of pickExtras(S, mine, n, releaseBatch(mine.length, target))) owner.delete(s);
        } else {
          for (const s of pickFree(S, new Set(owner.keys()), n, target - mine.length)) owner.set(s, n);
        }
      }
    };
    const settle = (nodes: string[]) => {
      let rounds = 0;
      const counts = () => nodes.map((n) => [...owner.values()].filter((o) => o === n).length);
      const want = nodes.map((n) => shareTable(S, nodes).get(n));
      while (JSON.stringify(counts()) !== JSON.stringify(want) || owner.size !== S) {
        round(nodes);
        rounds += 1;
        expect(rounds).toBeLessThan(12);
      }
      return rounds;
    };
    const steps = [['a'], ['a', 'b'], ['a', 'b', 'c'], ['b', 'c'], ['b', 'c', 'd', 'e', 'f'], ['f'], ['a', 'f']];
    for (const nodes of steps) {
      for (const [s, o] of owner) if (!nodes.includes(o)) owner.delete(s); // a leaver's leases expire
      settle(nodes);
      const again = new Map(owner);
      round(nodes);
      expect(owner).toEqual(again); // settled means no further moves (no thrashing)
    }
  });
});

describe('unit: foreseen heartbeat expiry', () => {
  it("counts on the server's clock: the own heartbeat's put time is now", () => {
    const heard = [
      { key: 'self', putAtMs: 100_000 },
      { key: 'live', putAtMs: 99_500 },
      { key: 'silent', putAtMs: 97_800 },
    ];
    // The silent node's heartbeat, put 2.2 s before ours, expires 0.8 s from now with a 3 s TTL.
    expect(untilHeartbeatExpiry(heard, 'self', 3_000)).toBe(800);
    // Already past its expiry (the server has not removed it yet): negative, the caller waits its least.
    expect(untilHeartbeatExpiry([...heard, { key: 'gone', putAtMs: 96_000 }], 'self', 3_000)).toBe(-1_000);
  });

  it('the next round comes just after a foreseen expiry, and a past-due heartbeat is not polled in a loop', () => {
    const o = { ttlMs: 3_000, renewMs: 1_000, marginMs: 50, pastDueMs: 200 };
    const self = { key: 'self', putAtMs: 100_000 };
    // Expires in 0.8 s: the round after it, 50 ms later, comes before the renewal period's.
    expect(roundWaitMs([self, { key: 'silent', putAtMs: 97_800 }], 'self', o)).toBe(850);
    // Expires after the renewal period: the period.
    expect(roundWaitMs([self, { key: 'live', putAtMs: 99_900 }], 'self', o)).toBe(1_000);
    expect(roundWaitMs([self], 'self', o)).toBe(1_000);
    // Past its expiry and still listed (a nodes bucket made with a longer TTL keeps it 30 s):
    // every round sees it past due, and each waits the least wait, not 50 ms.
    for (const putAtMs of [96_000, 80_000, 71_000])
      expect(roundWaitMs([self, { key: 'gone', putAtMs }], 'self', o)).toBe(200);
  });

  it('without its own heartbeat listed, the newest put stands for now; alone, nothing expires', () => {
    expect(
      untilHeartbeatExpiry(
        [
          { key: 'a', putAtMs: 10_000 },
          { key: 'b', putAtMs: 12_000 },
        ],
        'self',
        3_000,
      ),
    ).toBe(1_000);
    expect(untilHeartbeatExpiry([{ key: 'self', putAtMs: 5 }], 'self', 3_000)).toBe(Infinity);
    expect(untilHeartbeatExpiry([], 'self', 3_000)).toBe(Infinity);
  });
});
