/**
 * What the shard manager (shard-manager.ts) is given and what it reports: the listener
 * that starts and stops a shard's work, its options, and its figures for metrics; and the
 * work an owned shard runs besides its actor requests (shard-host.ts).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import type { Names } from './names.js';

export interface ShardListener {
  /** Start this shard's work (actor subscription + ingest consumer). */
  acquire(shard: number): Promise<void>;
  /** Stop it completely (drain, passivate actors); called before the lease is given up. */
  release(shard: number): Promise<void>;
}

/** Per-shard work besides actor requests: the shard's ingest consumer (ingest/node-ingest.ts). */
export interface ShardWork {
  start(shard: number, log: Logger): Promise<void>;
  /** Stop the shard's work and wait for it to settle; a shard not started is a no-op. */
  stop(shard: number): Promise<void>;
}

export interface ShardManagerOptions {
  nc: NatsConnection;
  names: Names;
  nodeId: string;
  shards: number;
  leaseTtlMs: number;
  log: Logger;
  listener: ShardListener;
  /** Default leaseTtlMs / 3; at most that, so one missed renew does not fence. */
  renewEveryMs?: number;
  /** INTERFACE §9.2 `SERVICE_NATS_REPLICAS` for the meta, lease and node buckets (default 1). */
  replicas?: number;
}

export interface ShardStats {
  /** Shards whose work runs here. */
  owned: number;
  liveNodes: number;
  target: number;
  /** Age of the oldest lease's last successful renew (by send time); null when none. */
  lastRenewAgeMs: number | null;
}
