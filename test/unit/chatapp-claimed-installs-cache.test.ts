/**
 * unit: the chat intake's team → install cache (claimed-installs-cache.ts): "no install"
 * is never kept (a just-installed workspace is found at once), entries are kept only while
 * changes are heard, an answer that raced a change is not kept, concurrent misses of one
 * team share one query, TTL and size bound.
 */
import { describe, expect, it } from 'vitest';
import { ClaimedInstallsCache } from '../../src/connectors/chatapp/claimed-installs-cache.js';
import type { Install } from '../../src/store/installs.js';

const inst = (n: number) => ({ install_id: `i-${n}`, tenant_id: `t-${n}` }) as Install;

/** Answers from `table`, recording each call; with `hold`, answers wait until released. */
function fakeFind(table: Map<string, Install>) {
  const calls: string[] = [];
  const held: Array<() => void> = [];
  let hold = false;
  const find = (team: string) => {
    calls.push(team);
    if (!hold) return Promise.resolve(table.get(team) ?? null);
    return new Promise<Install | null>((resolve) => held.push(() => resolve(table.get(team) ?? null)));
  };
  return { find, calls, held, holdAnswers: (on: boolean) => (hold = on) };
}

describe('unit: claimed-installs cache', () => {
  it('never keeps "no install": a workspace installed just after a miss is found by the next lookup', async () => {
    const table = new Map<string, Install>();
    const f = fakeFind(table);
    const cache = new ClaimedInstallsCache({ find: f.find });
    cache.setLive(true);
    expect(await cache.lookup('T1')).toBeNull();
    table.set('T1', inst(1)); // committed; its announcement not yet heard
    expect(await cache.lookup('T1')).toEqual(inst(1));
    expect(await cache.lookup('T1')).toEqual(inst(1));
    expect(f.calls).toEqual(['T1', 'T1']);
  });

  it('keeps nothing while changes are not heard, and forgets everything on an announcement', async () => {
    const table = new Map([['T1', inst(1)]]);
    const f = fakeFind(table);
    const cache = new ClaimedInstallsCache({ find: f.find });
    await cache.lookup('T1');
    await cache.lookup('T1');
    expect(f.calls).toHaveLength(2);
    cache.setLive(true);
    await cache.lookup('T1');
    await cache.lookup('T1');
    expect(f.calls).toHaveLength(3);
    table.delete('T1'); // uninstalled elsewhere
    cache.invalidate();
    expect(await cache.lookup('T1')).toBeNull();
    cache.setLive(false);
    expect(cache.size).toBe(0);
  });

  it('shares one query among concurrent misses, but not with a lookup after an announcement', async () => {
    const table = new Map([['T1', inst(1)]]);
    const f = fakeFind(table);
    const cache = new ClaimedInstallsCache({ find: f.find });
    cache.setLive(true);
    f.holdAnswers(true);
    const a = cache.lookup('T1');
    const b = cache.lookup('T1');
    expect(f.calls).toEqual(['T1']);
    // The install changes while the query is out: the answer serves a and b but is not kept,
    // and a lookup started after the announcement sends its own query.
    table.set('T1', inst(2));
    cache.invalidate();
    const c = cache.lookup('T1');
    expect(f.calls).toEqual(['T1', 'T1']);
    for (const release of f.held.splice(0)) release();
    expect(await a).toEqual(inst(2));
    expect(await b).toEqual(inst(2));
    expect(await c).toEqual(inst(2));
    f.holdAnswers(false);
  });

  it('an answer that raced an announcement is not kept', async () => {
    const table = new Map([['T1', inst(1)]]);
    const f = fakeFind(table);
    const cache = new ClaimedInstallsCache({ find: f.find });
    cache.setLive(true);
    f.holdAnswers(true);
    const a = cache.lookup('T1');
    cache.invalidate();
    f.held.splice(0).forEach((r) => r());
    await a;
    expect(cache.size).toBe(0);
  });

  it('expires entries after ttlMs and keeps at most maxEntries, oldest dropped first', async () => {
    let now = 1_000;
    const table = new Map([
      ['T1', inst(1)],
      ['T2', inst(2)],
      ['T3', inst(3)],
    ]);
    const f = fakeFind(table);
    const cache = new ClaimedInstallsCache({ find: f.find, ttlMs: 100, maxEntries: 2, now: () => now });
    cache.setLive(true);
    await cache.lookup('T1');
    now += 50;
    await cache.lookup('T1');
    expect(f.calls).toEqual(['T1']);
    now += 51;
    await cache.lookup('T1');
    expect(f.calls).toEqual(['T1', 'T1']);
    await cache.lookup('T2');
    await cache.lookup('T3');
    expect(cache.size).toBe(2);
    await cache.lookup('T1');
    expect(f.calls.filter((t) => t === 'T1')).toHaveLength(3);
  });
});
