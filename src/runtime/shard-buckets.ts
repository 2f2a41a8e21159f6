/**
 * The shard manager's KV buckets (ARCHITECTURE.md "Actors"): meta (the deployment's fixed
 * shard count), leases and node heartbeats, both with the lease TTL as the bucket TTL.
 * The TTL a lease bucket really has was fixed by whichever node created it, so fencing
 * uses that one when it differs from this node's setting.
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { natsDescription, type Names } from './names.js';
import { openKv } from './nats.js';
import { ensureShardCount } from './shard-kv.js';

export interface ShardBuckets {
  leases: KV;
  nodes: KV;
  /** The lease bucket's TTL; fencing and renewal follow it. */
  ttlMs: number;
}

export async function openShardBuckets(
  nc: NatsConnection,
  o: { names: Names; shards: number; leaseTtlMs: number; renewEveryMs: number; replicas?: number; log: Logger },
): Promise<ShardBuckets> {
  const { names } = o;
  const kvOf = (name: string) => ({ replicas: o.replicas ?? 1, description: natsDescription(names.ns, name) });
  const meta = await openKv(nc, names.metaBucket, { history: 1, ...kvOf(names.metaBucket) });
  await ensureShardCount(meta, o.shards);
  const timeoutMs = Math.min(5_000, Math.max(250, o.renewEveryMs));
  const ttlMs = o.leaseTtlMs;
  const leases = await openKv(nc, names.leaseBucket, { ttlMs, timeoutMs, ...kvOf(names.leaseBucket) });
  const nodes = await openKv(nc, names.nodeBucket, { ttlMs, timeoutMs, ...kvOf(names.nodeBucket) });
  const bucketTtl = (await leases.status()).ttl;
  if (!(bucketTtl > 0))
    throw new Error(
      `KV bucket ${names.leaseBucket} has no TTL, so a dead node's leases would never expire; ` +
        'delete it while all nodes are stopped',
    );
  if (bucketTtl !== o.leaseTtlMs) {
    o.log.warn(
      { bucketTtlMs: bucketTtl, configuredTtlMs: o.leaseTtlMs },
      'lease bucket TTL differs from SERVICE_LEASE_TTL_S; fencing on the shorter one',
    );
  }
  return { leases, nodes, ttlMs: Math.min(bucketTtl, o.leaseTtlMs) };
}
