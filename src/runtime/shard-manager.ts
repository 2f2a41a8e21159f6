/**
 * Shard ownership through KV leases (ARCHITECTURE.md "Actors": **must** at most one live
 * activation of an actor key in the cluster, so two nodes never both run a shard's work).
 *
 * Protocol (nats-server >= 2.9; nothing newer is used):
 * - Lease = key `leaseKey(shard)` in `leaseBucket`, whose bucket TTL is the lease TTL.
 *   Acquire = `kv.create` (create-if-absent, also over a delete marker). Renew =
 *   `kv.update` at the last revision (CAS). A renew refused by the CAS means someone else
 *   holds the key now: the shard is lost and its work stops at once.
 * - Self-fencing: the server keeps a renewed key for at least TTL after the renew was
 *   *sent*. If no renew has succeeded for FENCE_FRACTION of the TTL since the send time of
 *   the last good one (monotonic clock), the work stops locally, well before the key can
 *   expire and another node create it. Work starts only after `create` succeeded.
 * - Heartbeat = key `nodeKey(nodeId)` in `nodeBucket` (same TTL), rewritten each round;
 *   the live nodes are the keys present. Each node aims at its share of `shareTable`
 *   (rebalance.ts): above it releases (work first, then the lease), below it creates free
 *   leases, starting from a hash of its id.
 * - `stop()` releases every shard and deletes its lease, so others take over at once.
 * - Renewal and fencing run on their own timer (lease-keeper.ts), never behind a slow
 *   listener call or a round waiting on KV.
 * - Takeover (INTERFACE §8.24: a dead node's actors answer within the lease TTL + 2 s): rounds
 *   come every renewal period, but a round that sees another node's heartbeat expire before
 *   the next one runs the next round just after that expiry (from the server's put times, so
 *   clocks apart do not matter), and a node still below its share runs rounds every 200 ms
 *   for one TTL, while the dead node's last leases expire. So a shard is taken within a
 *   fraction of a second of its lease's expiry, whatever the TTL.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from '../log.js';
import { checkServerVersion } from './nats.js';
import { openShardBuckets } from './shard-buckets.js';
import type { ShardManagerOptions, ShardStats } from './shard-ports.js';
import { pickExtras, pickFree, releaseBatch, roundWaitMs, targetShare } from './rebalance.js';
import { keepLeases, type Lease } from './lease-keeper.js';
import type { EntryLister, KeyLister } from './kv-keys.js';
import { isWrongSequence } from './shard-kv.js';

/** Work stops once this fraction of the TTL passed without a successful renew. */
const FENCE_FRACTION = 0.6;
/** Between rounds while below this node's share (for one TTL), and the least wait for a foreseen expiry. */
const TAKEOVER_ROUND_MS = 200;
/** After a heartbeat's foreseen expiry, before the round that counts it gone. */
const EXPIRY_MARGIN_MS = 50;

export class ShardManager {
  onChange?: (owned: number[]) => void;

  private readonly o: ShardManagerOptions;
  private readonly log: Logger;
  private readonly nodeKey: string;
  private readonly shardByKey = new Map<string, number>();
  private readonly held = new Map<number, Lease>();
  private readonly pending = new Set<Promise<void>>();
  private ttlMs: number;
  private renewEveryMs: number;
  private leases: KV | null = null;
  private nodes: KV | null = null;
  private leaseKeys: KeyLister = async () => [];
  private nodeEntries: EntryLister = async () => [];
  /** Wait before the next round (the renewal period unless a takeover is under way). */
  private nextRoundMs = 0;
  /** performance.now() since when this node has been below its share; null: at or above it. */
  private belowSince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private loopDone: Promise<void> = Promise.resolve();
  private starting: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;
  private roundFailing = false;
  private liveNodes = 0;
  private target = 0;

  constructor(opts: ShardManagerOptions) {
    if (!Number.isInteger(opts.shards) || opts.shards < 1)
      throw new Error(`shards must be a positive integer, got ${opts.shards}`);
    if (!(opts.leaseTtlMs >= 300)) throw new Error(`leaseTtlMs must be at least 300, got ${opts.leaseTtlMs}`);
    if (opts.renewEveryMs !== undefined && !(opts.renewEveryMs > 0 && opts.renewEveryMs <= opts.leaseTtlMs / 3)) {
      throw new Error(`renewEveryMs must be in (0, leaseTtlMs/3], got ${opts.renewEveryMs}`);
    }
    this.o = opts;
    this.log = opts.log.child({ component: 'shards' });
    this.nodeKey = opts.names.nodeKey(opts.nodeId);
    for (let s = 0; s < opts.shards; s++) this.shardByKey.set(opts.names.leaseKey(s), s);
    this.ttlMs = opts.leaseTtlMs;
    this.renewEveryMs = opts.renewEveryMs ?? Math.floor(opts.leaseTtlMs / 3);
  }

  start(): Promise<void> {
    if (this.starting) throw new Error('ShardManager.start() called twice');
    this.starting = this.doStart();
    return this.starting;
  }

  /** Shards whose work is currently running on this node (acquire resolved, release not yet called). */
  owned(): number[] {
    return [...this.held.values()]
      .filter((l) => l.phase === 'running')
      .map((l) => l.shard)
      .sort((a, b) => a - b);
  }

  stats(): ShardStats {
    const now = performance.now();
    let oldest: number | null = null;
    for (const l of this.held.values()) {
      if (l.phase === 'starting' || l.phase === 'running') oldest = Math.max(oldest ?? 0, now - l.renewedAt);
    }
    return { owned: this.owned().length, liveNodes: this.liveNodes, target: this.target, lastRenewAgeMs: oldest };
  }

  /** Graceful: release every shard, delete its lease (others take over at once), drop the heartbeat. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private get fenceMs(): number {
    return this.ttlMs * FENCE_FRACTION;
  }

  private async doStart(): Promise<void> {
    const { nc } = this.o;
    checkServerVersion(nc);
    // A renew answered late is still good up to the fence (it counts from its send time): a
    // shorter wait would throw away a renew that landed, on a loaded node, and fence for nothing.
    const buckets = await openShardBuckets(nc, { ...this.o, opTimeoutMs: this.fenceMs, log: this.log });
    this.leases = buckets.leases;
    this.nodes = buckets.nodes;
    this.leaseKeys = buckets.leaseKeys;
    this.nodeEntries = buckets.nodeEntries;
    if (buckets.ttlMs !== this.ttlMs) {
      this.ttlMs = buckets.ttlMs;
      this.renewEveryMs = Math.min(this.renewEveryMs, Math.floor(this.ttlMs / 3));
    }
    const tickMs = Math.max(10, Math.min(250, Math.floor(this.renewEveryMs / 4)));
    // Every few ms: fence overdue leases, renew those due (lease-keeper.ts; never awaited).
    const keep = {
      kv: this.leases,
      fenceMs: this.fenceMs,
      renewEveryMs: this.renewEveryMs,
      lose: (l: Lease, why: string) => this.lose(l, why),
    };
    this.timer = setInterval(() => keepLeases(this.held.values(), keep), tickMs);
    await this.runRound();
    this.loopDone = this.loop();
  }

  private async doStop(): Promise<void> {
    if (!this.starting) return;
    await this.starting.catch(() => undefined);
    this.wake?.();
    await this.loopDone;
    await Promise.all([...this.held.values()].map((l) => this.giveUp(l, 'stop')));
    await Promise.all(this.pending);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.nodes
      ?.delete(this.nodeKey)
      .catch((err: unknown) => this.log.debug({ err }, 'heartbeat delete failed; it expires by TTL'));
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.nextRoundMs || this.renewEveryMs);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
      if (this.stopping) return;
      await this.runRound();
    }
  }

  private async runRound(): Promise<void> {
    this.nextRoundMs = this.renewEveryMs;
    try {
      await this.round();
      if (this.roundFailing) this.log.info('shard rounds succeed again');
      this.roundFailing = false;
    } catch (err) {
      // Warn once per outage; leases fence themselves on their own timer meanwhile.
      if (!this.roundFailing) this.log.warn({ err }, 'shard round failed; retrying every renewal period');
      this.roundFailing = true;
    }
  }

  /** Heartbeat, count live nodes, then move one step toward this node's share. */
  private async round(): Promise<void> {
    const { nodeId, shards } = this.o;
    const nodes = this.nodes!;
    await nodes.put(this.nodeKey, JSON.stringify({ node: nodeId, at: new Date().toISOString() }));
    const heard = await this.nodeEntries();
    const live = heard.map((e) => e.key);
    // A heartbeat expiring before the next round (its node stopped): the next round comes just after it.
    this.nextRoundMs = roundWaitMs(heard, this.nodeKey, {
      ttlMs: this.ttlMs,
      renewMs: this.nextRoundMs,
      marginMs: EXPIRY_MARGIN_MS,
      pastDueMs: TAKEOVER_ROUND_MS,
    });
    this.target = targetShare(shards, live, this.nodeKey);
    this.liveNodes = new Set([...live, this.nodeKey]).size;
    if (this.stopping) return;

    const mine = [...this.held.values()].filter((l) => l.phase === 'running').map((l) => l.shard);
    if (mine.length > this.target) {
      const extras = pickExtras(shards, mine, nodeId, releaseBatch(mine.length, this.target));
      await Promise.all(extras.map((s) => this.giveUp(this.held.get(s)!, 'rebalance')));
    } else if (mine.length < this.target) {
      const taken = new Set<number>(this.held.keys());
      for (const k of await this.leaseKeys()) {
        const s = this.shardByKey.get(k);
        if (s !== undefined) taken.add(s);
      }
      const want = pickFree(shards, taken, nodeId, this.target - mine.length);
      const got = await Promise.all(want.map((s) => this.acquireShard(s)));
      // One line per round, not one per shard: a first start acquires every shard at once.
      const acquired = want.filter((_, i) => got[i]);
      if (acquired.length > 0) {
        this.log.info({ shards: acquired, held: mine.length + acquired.length, of: shards }, 'shards acquired');
      }
      if (mine.length + acquired.length < this.target) {
        // A dead node's leases expire within a TTL of its heartbeat: look often meanwhile.
        this.belowSince ??= performance.now();
        if (performance.now() - this.belowSince < this.ttlMs)
          this.nextRoundMs = Math.min(this.nextRoundMs, TAKEOVER_ROUND_MS);
        return;
      }
    }
    this.belowSince = null;
  }

  /** True when the shard is now running here. */
  private async acquireShard(shard: number): Promise<boolean> {
    const key = this.o.names.leaseKey(shard);
    const value = JSON.stringify({ node: this.o.nodeId, acquired_at: new Date().toISOString() });
    const sentAt = performance.now();
    let rev: number;
    try {
      rev = await this.leases!.create(key, value);
    } catch (err) {
      if (!isWrongSequence(err)) this.log.warn({ err, shard }, 'lease create failed');
      return false;
    }
    const l: Lease = { shard, key, value, rev, renewedAt: sentAt, phase: 'starting', renewing: null, retry: false };
    this.held.set(shard, l);
    if (this.stopping || performance.now() - sentAt > this.fenceMs) {
      // Shutting down, or the create took so long the lease may be near expiry: hand it back unused.
      await this.drop(l);
      return false;
    }
    try {
      await this.o.listener.acquire(shard);
    } catch (err) {
      this.log.error({ err, shard }, 'shard work failed to start; giving the lease back');
      await this.callRelease(shard);
      await this.drop(l);
      return false;
    }
    if (l.phase === 'starting') {
      l.phase = 'running';
      this.log.debug({ shard }, 'shard acquired');
      this.changed();
      return true;
    }
    // Lost while starting (renew overdue or taken): stop the work that just started.
    await this.callRelease(shard);
    await this.drop(l);
    return false;
  }

  /** Graceful hand-back: stop the work while still holding the lease, then delete the lease. */
  private async giveUp(l: Lease, reason: string): Promise<void> {
    if (l.phase !== 'running') return;
    l.phase = 'releasing';
    this.changed();
    await this.callRelease(l.shard);
    await this.drop(l);
    this.log.info({ shard: l.shard, reason }, 'shard released');
  }

  /** The lease can no longer be trusted: stop the shard's work now. */
  private lose(l: Lease, why: string): void {
    const was = l.phase;
    if (was === 'lost' || was === 'dropping') return;
    l.phase = 'lost';
    this.log.warn({ shard: l.shard, why, renewAgeMs: Math.round(performance.now() - l.renewedAt) }, 'shard lost');
    if (was !== 'running') return; // starting: acquireShard releases; releasing: giveUp finishes
    this.changed();
    const p = this.callRelease(l.shard).then(() => this.drop(l));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Work is stopped: delete the lease if it is still ours (CAS), and forget it. */
  private async drop(l: Lease): Promise<void> {
    l.phase = 'dropping';
    await l.renewing;
    await this.leases!.delete(l.key, { previousSeq: l.rev }).catch((err: unknown) => {
      // Wrong sequence: someone else holds it now. Anything else: it expires by TTL.
      if (!isWrongSequence(err)) this.log.debug({ err, shard: l.shard }, 'lease delete failed; it expires by TTL');
    });
    if (this.held.get(l.shard) === l) this.held.delete(l.shard);
  }

  private async callRelease(shard: number): Promise<void> {
    await this.o.listener
      .release(shard)
      .catch((err: unknown) => this.log.error({ err, shard }, 'shard release failed'));
  }

  private changed(): void {
    try {
      this.onChange?.(this.owned());
    } catch (err) {
      this.log.warn({ err }, 'onChange listener threw');
    }
  }
}
