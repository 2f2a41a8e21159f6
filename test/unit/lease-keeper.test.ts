/**
 * Unit: the lease keeper's renew and fence decisions (runtime/lease-keeper.ts, ARCHITECTURE
 * "Actors"), on a time the test moves and an in-memory KV that answers a CAS update like
 * JetStream: no sleeping, each decision at its exact boundary.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { describe, expect, it } from 'vitest';
import { keepLeases, type KeepOptions, type Lease } from '../../src/runtime/lease-keeper.js';

/** One key's revisions, updated by CAS; `hold` keeps the next update unanswered until released. */
class FakeLeaseKv {
  rev = 1;
  value = 'mine';
  updates = 0;
  refuse = false;
  private held: Array<() => void> = [];
  hold = false;

  update(_key: string, value: string, rev: number): Promise<number> {
    this.updates++;
    const answer = (): Promise<number> => {
      if (this.refuse || rev !== this.rev) {
        return Promise.reject(
          new JetStreamApiError({
            err_code: JetStreamApiCodes.StreamWrongLastSequence,
            code: 400,
            description: 'wrong last sequence',
          }),
        );
      }
      this.value = value;
      return Promise.resolve(++this.rev);
    };
    if (!this.hold) return answer();
    return new Promise((resolve, reject) => this.held.push(() => answer().then(resolve, reject)));
  }

  async get(): Promise<{ operation: string; revision: number; string(): string } | null> {
    return { operation: 'PUT', revision: this.rev, string: () => this.value };
  }

  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

function setup() {
  let t = 10_000;
  const kv = new FakeLeaseKv();
  const lost: Array<{ shard: number; why: string }> = [];
  const lease: Lease = {
    shard: 3,
    key: 'lease.3',
    value: 'mine',
    rev: 1,
    renewedAt: t,
    phase: 'running',
    renewing: null,
    retry: false,
  };
  const o: KeepOptions = {
    kv: kv as unknown as KV,
    fenceMs: 1_800,
    renewEveryMs: 1_000,
    lose: (l, why) => {
      l.phase = 'lost';
      lost.push({ shard: l.shard, why });
    },
    now: () => t,
    // What the node reads before judging an overdue lease (setImmediate in the node).
    afterIo: (fn) => void settle().then(fn),
  };
  const at = async (ms: number) => {
    t = 10_000 + ms;
    keepLeases([lease], o);
    await settle();
    await settle();
  };
  /** The node's loop wakes at `ms` after a stall; `io` is what arrived meanwhile, read before the fence is judged. */
  const wakeAt = async (ms: number, io: () => void) => {
    t = 10_000 + ms;
    keepLeases([lease], { ...o, afterIo: (fn) => (io(), void settle().then(fn)) });
    await settle();
    await settle();
  };
  return { kv, lost, lease, at, wakeAt };
}

describe('lease keeper (renew by CAS, fence before expiry)', () => {
  it('renews only once renewEveryMs passed since the last good renew was sent, then from that send time', async () => {
    const { kv, lease, at } = setup();
    await at(999);
    expect(kv.updates).toBe(0);
    await at(1_000);
    expect(kv.updates).toBe(1);
    expect(lease).toMatchObject({ rev: 2, renewedAt: 11_000, renewing: null });
    await at(1_999);
    expect(kv.updates).toBe(1);
    await at(2_000);
    expect(kv.updates).toBe(2);
  });

  it('fences a lease whose renews hang: lost just after fenceMs, with no second renew sent meanwhile', async () => {
    const { kv, lost, lease, at } = setup();
    kv.hold = true;
    await at(1_000);
    await at(1_500);
    expect(kv.updates).toBe(1); // one renew in flight is never doubled
    await at(1_800);
    expect(lost).toEqual([]);
    await at(1_801);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.why).toMatch(/safety window/);
    expect(lease.phase).toBe('lost');
    await at(5_000);
    expect(kv.updates).toBe(1); // a lost lease is never renewed
  });

  it('a refused CAS whose key holds another value loses the lease at once', async () => {
    const { kv, lost, at } = setup();
    kv.refuse = true;
    kv.value = 'other node';
    await at(1_000);
    expect(lost).toEqual([{ shard: 3, why: 'lease expired or taken by another node' }]);
  });

  it('a renew that landed but was refused on retry adopts the revision, not a newer renew time', async () => {
    const { kv, lost, lease, at } = setup();
    // The key still holds our value at a newer revision: an earlier renew that timed out had landed.
    kv.refuse = true;
    kv.rev = 7;
    await at(1_000);
    expect(lost).toEqual([]);
    expect(lease).toMatchObject({ rev: 7, renewedAt: 10_000, retry: true });
    kv.refuse = false;
    await at(1_100); // retried on the next tick, not after another renewEveryMs
    expect(lease).toMatchObject({ rev: 8, renewedAt: 11_100, retry: false });
  });

  it('a renew answered during a stall counts: the fence is judged after the waiting I/O is read', async () => {
    const { kv, lost, lease, at, wakeAt } = setup();
    kv.hold = true;
    await at(1_000); // renew sent at 11 000
    // The loop stalls 1.5 s; the answer arrived meanwhile and waits in the socket.
    await wakeAt(2_500, () => kv.release());
    expect(lost).toEqual([]);
    expect(lease).toMatchObject({ phase: 'running', rev: 2, renewedAt: 11_000 });
    // Without an answer the same wake-up fences, and the window still counts from the last good send.
    await at(2_700); // the next renew, held
    await wakeAt(2_801 + 1_000, () => undefined);
    expect(lost).toHaveLength(1);
  });
});
