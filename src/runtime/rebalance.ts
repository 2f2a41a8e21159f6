/**
 * Pure arithmetic of shard rebalancing (ARCHITECTURE.md "Nodes rebalance toward an even
 * share"). The shard manager feeds it what it read from KV; nothing here touches NATS.
 *
 * Every node computes the same table from the same list of live nodes: sorted by id, the
 * first `S mod N` nodes get `ceil(S/N)` shards and the others `floor(S/N)`. The targets
 * sum to exactly S, so once the nodes agree on who is alive no shard is wanted by two
 * nodes and none is left over: no node gives up a shard that another then gives back.
 */
import type { KeyEntry } from './kv-keys.js';
import { shardOf } from './names.js';

/** Target shard count of every node in `nodes` (duplicates ignored). */
export function shareTable(shards: number, nodes: readonly string[]): Map<string, number> {
  const sorted = [...new Set(nodes)].sort();
  const table = new Map<string, number>();
  if (sorted.length === 0) return table;
  const base = Math.floor(shards / sorted.length);
  const rem = shards % sorted.length;
  sorted.forEach((n, i) => table.set(n, i < rem ? base + 1 : base));
  return table;
}

/**
 * This node's target. `self` counts as live even when its own heartbeat is not yet
 * visible in the list (first round, or a read that raced the write).
 */
export function targetShare(shards: number, nodes: readonly string[], self: string): number {
  return shareTable(shards, nodes.includes(self) ? nodes : [...nodes, self]).get(self) ?? 0;
}

/**
 * The order in which a node prefers shards: all of them, starting from a hash of its id.
 * Nodes starting together then reach for different shards instead of all racing for 0.
 */
export function preferenceOrder(shards: number, nodeId: string): number[] {
  const start = shardOf(`node/${nodeId}`, shards);
  return Array.from({ length: shards }, (_, i) => (start + i) % shards);
}

/** Up to `count` shards not in `taken`, in this node's preference order. */
export function pickFree(shards: number, taken: ReadonlySet<number>, nodeId: string, count: number): number[] {
  if (count <= 0) return [];
  const out: number[] = [];
  for (const s of preferenceOrder(shards, nodeId)) {
    if (out.length >= count) break;
    if (!taken.has(s)) out.push(s);
  }
  return out;
}

/**
 * How many of `owned` shards to give up this round when above `target`: half the excess,
 * at least one. A membership flap (a node seen alive for a round, then gone) then leaves
 * few shards ownerless at a time, and a join still converges in log2(excess) rounds.
 */
export function releaseBatch(owned: number, target: number): number {
  const excess = owned - target;
  return excess <= 0 ? 0 : Math.ceil(excess / 2);
}

/** The `count` owned shards this node likes least (the last in its preference order). */
export function pickExtras(shards: number, owned: readonly number[], nodeId: string, count: number): number[] {
  if (count <= 0) return [];
  const mine = new Set(owned);
  return preferenceOrder(shards, nodeId)
    .reverse()
    .filter((s) => mine.has(s))
    .slice(0, count);
}

/**
 * Ms until the first heartbeat of another node expires (its put time plus the TTL), counted
 * on the NATS server's clock: `self`'s own heartbeat, just written, stands for the server's
 * now, so nodes' clocks apart do not matter. Infinity when no other node is heard.
 */
export function untilHeartbeatExpiry(heard: readonly KeyEntry[], self: string, ttlMs: number): number {
  const own = heard.find((e) => e.key === self);
  const serverNow = own?.putAtMs ?? Math.max(0, ...heard.map((e) => e.putAtMs));
  let soonest = Infinity;
  for (const e of heard) if (e.key !== self) soonest = Math.min(soonest, e.putAtMs + ttlMs - serverNow);
  return soonest;
}

/**
 * The wait before the next round, given the heartbeats just heard: `renewMs`, or `marginMs`
 * after another node's heartbeat expires when that comes sooner. A heartbeat already past its
 * expiry but still listed (the server removes it a little late, or its bucket keeps entries
 * longer than `ttlMs`, a TTL changed since the bucket was made) is looked at again after
 * `pastDueMs`, the least wait: rounds `marginMs` apart would go on for as long as it stays.
 */
export function roundWaitMs(
  heard: readonly KeyEntry[],
  self: string,
  o: { ttlMs: number; renewMs: number; marginMs: number; pastDueMs: number },
): number {
  const untilExpiry = untilHeartbeatExpiry(heard, self, o.ttlMs);
  return Math.min(o.renewMs, untilExpiry > 0 ? untilExpiry + o.marginMs : o.pastDueMs);
}
