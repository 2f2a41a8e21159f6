/** Unit: one reconciliation pass (INTERFACE §9.4) over an in-memory delivery log. */
import { describe, expect, it } from 'vitest';
import type { HookDelivery } from '../../src/connectors/codehost/hook-deliveries.js';
import {
  FIRST_LOOKBACK_MS,
  MAX_REDELIVERIES,
  OVERLAP_MS,
  reconcileDeliveries,
  type ReconcilePorts,
} from '../../src/connectors/codehost/reconcile-deliveries.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const at = (msAgo: number) => new Date(NOW - msAgo).toISOString();
let nextId = 1;
const d = (guid: string, status: number, msAgo: number): HookDelivery => ({
  id: nextId++,
  guid,
  delivered_at: at(msAgo),
  redelivery: false,
  status_code: status,
  event: 'issues',
  installation_id: 1,
});

function ports(
  log: HookDelivery[],
  stored: string[] = [],
  failOn: number[] = [],
  requests: Map<string, number> = new Map(),
  claims: Set<number> = new Set(),
) {
  const asked: number[] = [];
  const listedPages: number[] = [];
  const p: ReconcilePorts = {
    pages: (async function* () {
      const newest = [...log].sort((a, b) => b.id - a.id);
      for (let i = 0; i < newest.length; i += 2) {
        listedPages.push(i / 2);
        yield newest.slice(i, i + 2);
      }
    })(),
    storedGuids: async (guids) => new Set(guids.filter((g) => stored.includes(g))),
    claim: async (id) => !claims.has(id) && (claims.add(id), true),
    release: async (id) => void claims.delete(id),
    takeRequest: async (guid) => {
      const n = requests.get(guid) ?? 0;
      if (n >= MAX_REDELIVERIES) return false;
      requests.set(guid, n + 1);
      return true;
    },
    returnRequest: async (guid) => void requests.set(guid, (requests.get(guid) ?? 1) - 1),
    redeliver: async (id) => {
      if (failOn.includes(id)) throw new Error('502');
      asked.push(id);
    },
    now: () => NOW,
  };
  return { p, asked, claims, listedPages };
}

describe('reconcileDeliveries', () => {
  it('asks for failed deliveries whose guid is neither stored nor delivered since', async () => {
    const ok = d('a', 202, 5000);
    const failedThenOk = d('b', 0, 4000);
    const bOk = d('b', 202, 3000);
    const failedStored = d('c', 504, 2000);
    const failedTwice = d('e', 0, 1500);
    const failedAgain = { ...d('e', 503, 1000), redelivery: true };
    const { p, asked } = ports([ok, failedThenOk, bOk, failedStored, failedTwice, failedAgain], ['c']);
    const out = await reconcileDeliveries(p, null);
    expect(asked).toEqual([failedAgain.id]); // the newest failure of a guid, once
    expect(out).toMatchObject({ examined: 6, foundFailed: 1, redelivered: 1, requestErrors: 0 });
    expect(out.checkpoint).toEqual({ newestAt: failedAgain.delivered_at, newestId: failedAgain.id });
  });

  it('pages back only to the checkpoint (minus the overlap) and never asks twice', async () => {
    const old = d('old', 0, OVERLAP_MS + 60_000);
    const inOverlap = d('mid', 0, 30_000 + OVERLAP_MS - 1000);
    const cp = d('cp', 202, 30_000);
    const fresh = d('new', 0, 1000);
    const { p, asked, claims } = ports([old, inOverlap, cp, fresh]);
    const checkpoint = { newestAt: cp.delivered_at, newestId: cp.id };
    const out = await reconcileDeliveries(p, checkpoint);
    expect(asked.sort()).toEqual([inOverlap.id, fresh.id].sort());
    expect(out.foundFailed).toBe(1); // only `fresh` is newer than the checkpoint
    const again = ports([old, inOverlap, cp, fresh]);
    for (const id of claims) await again.p.claim(id);
    expect((await reconcileDeliveries(again.p, checkpoint)).redelivered).toBe(0);
  });

  it('keeps the checkpoint and the claim when a request fails, so the next pass asks again', async () => {
    const f = d('f', 0, 1000);
    const { p, claims } = ports([f], [], [f.id]);
    const out = await reconcileDeliveries(p, null);
    expect(out).toMatchObject({ checkpoint: null, redelivered: 0, requestErrors: 1 });
    expect(claims.has(f.id)).toBe(false);
  });

  it('asks for a delivery that keeps failing a bounded number of times, then gives it up', async () => {
    const requests = new Map<string, number>();
    const claims = new Set<number>(); // claim markers outlive a pass (10 minutes in KV)
    const log: HookDelivery[] = [d('stuck', 400, 1000)];
    let checkpoint = null;
    let asked = 0;
    const givenUp: string[] = [];
    for (let pass = 0; pass < MAX_REDELIVERIES + 3; pass++) {
      const r = ports(log, [], [], requests, claims);
      const out = await reconcileDeliveries(r.p, checkpoint);
      checkpoint = out.checkpoint;
      asked += r.asked.length;
      givenUp.push(...out.givenUp);
      // Each redelivery GitHub makes fails again: a new delivery of the same guid, newer.
      log.push(...r.asked.map(() => ({ ...d('stuck', 400, 500 - pass), redelivery: true })));
    }
    expect(asked).toBe(MAX_REDELIVERIES);
    expect(givenUp).toEqual(['stuck']);
  });

  it('a request that does not get through does not count against the bound', async () => {
    const requests = new Map<string, number>();
    const f = d('flaky', 0, 1000);
    const out = await reconcileDeliveries(ports([f], [], [f.id], requests).p, null);
    expect(out.requestErrors).toBe(1);
    expect(requests.get('flaky')).toBe(0);
  });

  it('looks back one hour on the first pass', async () => {
    const tooOld = d('x', 0, FIRST_LOOKBACK_MS + 1000);
    const { p, asked } = ports([tooOld]);
    expect((await reconcileDeliveries(p, null)).examined).toBe(0);
    expect(asked).toEqual([]);
  });
});
