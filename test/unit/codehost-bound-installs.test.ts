/**
 * unit: the webhook fan-out lists — the per-turn batched lookup (one query for every
 * lookup of a turn of the event loop) and the cache in front of it (never "no install",
 * only while changes are heard, never an answer that raced a change; TTL; size bound).
 */
import { describe, expect, it } from 'vitest';
import { BoundInstallsCache } from '../../src/connectors/codehost/bound-installs-cache.js';
import {
  boundInstallsFinder,
  type BoundInstall,
  type FindBoundInstalls,
} from '../../src/connectors/codehost/find-bound-installs.js';
import type { Queryable } from '../../src/store/db.js';

const T0 = 1_700_000_000_000;
const inst = (n: number): BoundInstall => ({ install_id: `i-${n}`, tenant_id: `t-${n}` });

/** A finder answering from `table`, recording each call, each answer held until released. */
function fakeFinder(table: Map<number, BoundInstall[]>) {
  const calls: number[] = [];
  const held: Array<() => void> = [];
  let hold = false;
  const find: FindBoundInstalls = (id) => {
    calls.push(id);
    const answer = [...(table.get(id) ?? [])];
    if (!hold) return Promise.resolve(answer);
    return new Promise((resolve) => held.push(() => resolve(answer)));
  };
  return { find, calls, held, holdAnswers: (on: boolean) => (hold = on) };
}

describe('unit: batched bound-installs lookup', () => {
  it('sends one query for every lookup of a turn, and gives each its own installs in the order of the rows', async () => {
    const queries: unknown[][] = [];
    const q = {
      async query(_sql: string, params: unknown[]) {
        queries.push(params);
        return {
          rows: [
            { external_id: '7', ...inst(1) },
            { external_id: '8', ...inst(2) },
            { external_id: '7', ...inst(3) },
          ],
        };
      },
    } as unknown as Queryable;
    const find = boundInstallsFinder(q);
    const [a, b, c, none] = await Promise.all([find(7), find(8), find(7), find(9)]);
    expect(queries).toEqual([[['7', '8', '9']]]);
    expect(a).toEqual([inst(1), inst(3)]);
    expect(c).toEqual([inst(1), inst(3)]);
    expect(b).toEqual([inst(2)]);
    expect(none).toEqual([]);
    // The next turn is a new query.
    await find(8);
    expect(queries).toHaveLength(2);
  });

  it('fails every lookup of a batch whose query failed', async () => {
    const q = { query: async () => Promise.reject(new Error('db down')) } as unknown as Queryable;
    const find = boundInstallsFinder(q);
    const results = await Promise.allSettled([find(1), find(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});

describe('unit: bound-installs cache', () => {
  it('keeps a non-empty list while changes are heard, and looks it up again once one is', async () => {
    const table = new Map([[7, [inst(1)]]]);
    const f = fakeFinder(table);
    const cache = new BoundInstallsCache({ find: f.find, now: () => T0 });
    cache.setLive(true);
    expect(await cache.lookup(7)).toEqual([inst(1)]);
    expect(await cache.lookup(7)).toEqual([inst(1)]);
    expect(f.calls).toEqual([7]);

    // Another tenant installs it (on any node): the announcement arrives, the next delivery sees both.
    table.set(7, [inst(1), inst(2)]);
    cache.invalidate();
    expect(await cache.lookup(7)).toEqual([inst(1), inst(2)]);
    expect(f.calls).toEqual([7, 7]);
  });

  it('never keeps "no install": the first delivery after an install is created reaches it', async () => {
    const table = new Map<number, BoundInstall[]>();
    const f = fakeFinder(table);
    const cache = new BoundInstallsCache({ find: f.find, now: () => T0 });
    cache.setLive(true);
    expect(await cache.lookup(7)).toEqual([]);
    table.set(7, [inst(1)]);
    expect(await cache.lookup(7)).toEqual([inst(1)]);
    expect(cache.size).toBe(1);
  });

  it('keeps nothing while changes cannot be heard, and forgets everything when they stop being heard', async () => {
    const f = fakeFinder(new Map([[7, [inst(1)]]]));
    const cache = new BoundInstallsCache({ find: f.find, now: () => T0 });
    await cache.lookup(7);
    await cache.lookup(7);
    expect(f.calls).toEqual([7, 7]);
    cache.setLive(true);
    await cache.lookup(7);
    expect(cache.size).toBe(1);
    cache.setLive(false);
    expect(cache.size).toBe(0);
    await cache.lookup(7);
    expect(f.calls).toEqual([7, 7, 7, 7]);
  });

  it('uses an answer that raced a change for its own request, but does not keep it', async () => {
    const table = new Map([[7, [inst(1)]]]);
    const f = fakeFinder(table);
    const cache = new BoundInstallsCache({ find: f.find, now: () => T0 });
    cache.setLive(true);
    f.holdAnswers(true);
    const racing = cache.lookup(7);
    // The change commits and is announced while the (older) answer is on its way.
    table.set(7, [inst(1), inst(2)]);
    cache.invalidate();
    f.held.shift()!();
    expect(await racing).toEqual([inst(1)]);
    expect(cache.size).toBe(0);
    f.holdAnswers(false);
    expect(await cache.lookup(7)).toEqual([inst(1), inst(2)]);
  });

  it('looks a list up again after the TTL, and holds at most maxEntries installations, oldest dropped first', async () => {
    let now = T0;
    const f = fakeFinder(new Map([1, 2, 3].map((n) => [n, [inst(n)]])));
    const cache = new BoundInstallsCache({ find: f.find, now: () => now, ttlMs: 1_000, maxEntries: 2 });
    cache.setLive(true);
    await cache.lookup(1);
    now += 999;
    await cache.lookup(1);
    expect(f.calls).toEqual([1]);
    now += 1;
    await cache.lookup(1);
    expect(f.calls).toEqual([1, 1]);

    await cache.lookup(2);
    await cache.lookup(3);
    expect(cache.size).toBe(2);
    f.calls.length = 0;
    await cache.lookup(3);
    await cache.lookup(2);
    await cache.lookup(1);
    expect(f.calls).toEqual([1]);
  });
});
