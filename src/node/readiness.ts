/**
 * `/readyz` for this node's own roles (INTERFACE §9.3), each check bounded so the answer
 * comes within 3 s: an edge-only node is ready when it reaches NATS and Postgres, an actor
 * host also when every shard has an owner.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../config.js';
import { keyLister, type KeyLister } from '../runtime/kv-keys.js';
import type { Names } from '../runtime/names.js';
import type { NodeNats } from './nats-setup.js';
import type { Pool } from './postgres.js';

/** INTERFACE §9.3: `/readyz` answers within 3 s. */
const READY_BUDGET_MS = 2_500;

export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
}

interface ReadinessDeps {
  nc: NatsConnection;
  requestPool: Pool;
  /** Lists the shard lease bucket's held leases, when this node hosts actors. */
  leaseKeys: KeyLister | null;
  shards: number;
}

function readinessCheck(d: ReadinessDeps): () => Promise<Readiness> {
  const bounded = (p: Promise<unknown>) =>
    Promise.race([
      p.then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), READY_BUDGET_MS).unref()),
    ]);
  return async () => {
    const leaseKeys = d.leaseKeys;
    const [natsOk, postgres, shardsOk] = await Promise.all([
      bounded(d.nc.isClosed() ? Promise.reject(new Error('closed')) : d.nc.rtt()),
      bounded(d.requestPool.query('select 1')),
      leaseKeys
        ? bounded(
            leaseKeys().then((k) => {
              if (k.length < d.shards) throw new Error('shards without an owner');
            }),
          )
        : Promise.resolve(null),
    ]);
    const checks: Record<string, boolean> = { nats: natsOk, postgres };
    if (shardsOk !== null) checks.shards = shardsOk;
    return { ready: Object.values(checks).every(Boolean), checks };
  };
}

/** Requests of its own bounded below /readyz's 3 s (INTERFACE §9.3). */
const READY_REQUEST_MS = 2_000;

/** The node's readiness check: an actor host also lists the shard lease bucket. */
export async function nodeReadiness(p: {
  config: Readonly<Config>;
  names: Names;
  nats: NodeNats;
  requestPool: Pool;
  hostsActors: boolean;
}): Promise<() => Promise<Readiness>> {
  const { config, names: n, nats } = p;
  const leases = await nats.bucket(n.leaseBucket, { ttlMs: config.leaseTtlMs, timeoutMs: READY_REQUEST_MS });
  return readinessCheck({
    nc: nats.nc,
    requestPool: p.requestPool,
    leaseKeys: p.hostsActors ? keyLister(nats.nc, leases, n.leaseBucket, READY_REQUEST_MS) : null,
    shards: config.shards,
  });
}
