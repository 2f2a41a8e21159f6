/**
 * The shard manager's KV buckets (ARCHITECTURE.md "Actors"): meta (the deployment's fixed
 * shard count), leases and node heartbeats, both with the lease TTL as the bucket TTL.
 * The TTL a lease bucket really has was fixed by whichever node created it, so fencing
 * uses that one when it differs from this node's setting.
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { deploymentKvOpener } from './deployment-kv.js';
import { retryJsAdmin } from './js-admin-retry.js';
import type { Names } from './names.js';
import { entryLister, keyLister, type EntryLister, type KeyLister } from './kv-keys.js';
import { ensureShardCount } from './shard-kv.js';

export interface ShardBuckets {
  leases: KV;
  nodes: KV;
  /** The lease bucket's TTL; fencing and renewal follow it. */
  ttlMs: number;
  /** Held leases and live nodes, listed without a consumer (kv-keys.ts). */
  leaseKeys: KeyLister;
  /** Live nodes' heartbeats, with the server's time of each (a silent node's expiry is foreseen). */
  nodeEntries: EntryLister;
}

export async function openShardBuckets(
  nc: NatsConnection,
  o: { names: Names; shards: number; leaseTtlMs: number; opTimeoutMs: number; replicas?: number; log: Logger },
): Promise<ShardBuckets> {
  const { names } = o;
  const open = deploymentKvOpener(nc, names, o.replicas ?? 1, o.log);
  const meta = await open(names.metaBucket, { history: 1 });
  await retryJsAdmin('the shard count', () => ensureShardCount(meta, o.shards), o.log);
  const timeoutMs = Math.max(250, o.opTimeoutMs);
  const ttlMs = o.leaseTtlMs;
  const leases = await open(names.leaseBucket, { ttlMs, timeoutMs });
  const nodes = await open(names.nodeBucket, { ttlMs, timeoutMs });
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
  return {
    leases,
    nodes,
    ttlMs: Math.min(bucketTtl, o.leaseTtlMs),
    leaseKeys: keyLister(nc, leases, names.leaseBucket, timeoutMs),
    nodeEntries: entryLister(nc, nodes, names.nodeBucket, timeoutMs),
  };
}
