/**
 * How this deployment opens each of its KV buckets: INTERFACE §9.2's replicas and a
 * description on every one, and, on a NATS cluster still electing its leaders, the
 * creation retried for a while (js-admin-retry.ts). The node's buckets (node/nats-setup.ts)
 * and the shard buckets (shard-buckets.ts) open through it.
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../log.js';
import { retryJsAdmin } from './js-admin-retry.js';
import { natsDescription, type Names } from './names.js';
import { openKv, type OpenKvOptions } from './nats.js';

/** Opens (or creates) one of the deployment's buckets; replicas and description are its own. */
export type KvOpener = (name: string, opts: Omit<OpenKvOptions, 'replicas' | 'description'>) => Promise<KV>;

export function deploymentKvOpener(nc: NatsConnection, names: Names, replicas: number, log: Logger): KvOpener {
  return (name, opts) =>
    retryJsAdmin(
      `KV bucket ${name}`,
      () => openKv(nc, name, { ...opts, replicas, description: natsDescription(names.ns, name) }),
      log,
    );
}
