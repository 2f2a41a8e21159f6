/**
 * The keys of a KV bucket whose last operation is a put, listed without a consumer
 * (ARCHITECTURE.md "Actors": shard rounds count live nodes and taken leases, /readyz
 * counts owned shards, INTERFACE §9.3).
 *
 * `kv.keys()` makes an ordered consumer on the bucket's stream. On a NATS cluster before
 * nats-server 2.12 (we support 2.9.10) that consumer can be placed on a server that just
 * died, and the listing then times out for a minute or more after a kill -9 (measured on
 * a 3-node 2.9.10 cluster: every shard round failed and /readyz flapped for over 60 s).
 * Here the stream leader names the subjects that hold a message (STREAM.INFO with
 * `subjects_filter`), and a get of each (direct get, any replica answers) tells a put from
 * a delete marker, which stays in the stream until the bucket's TTL removes it. Both are
 * plain requests with their own timeout, so a listing is bounded.
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

/** Lists the keys of one bucket; every call is one bounded round of requests. */
export type KeyLister = () => Promise<string[]>;

/** A key with the server's time of its last put (ms since the epoch, the NATS server's clock). */
export interface KeyEntry {
  key: string;
  putAtMs: number;
}
/** Lists the keys of one bucket with the time of each one's put. */
export type EntryLister = () => Promise<KeyEntry[]>;

export function entryLister(nc: NatsConnection, kv: KV, bucket: string, timeoutMs: number): EntryLister {
  const prefix = `$KV.${bucket}.`;
  let jsm: Promise<JetStreamManager> | null = null;
  return async () => {
    // No API check at creation: it would be one more request that may time out.
    jsm ??= jetstreamManager(nc, { timeout: timeoutMs, checkAPI: false });
    const info = await (await jsm).streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
    const keys = Object.keys(info.state.subjects ?? {}).map((s) => s.slice(prefix.length));
    const entries = await Promise.all(keys.map((k) => kv.get(k)));
    return entries.flatMap((e) =>
      e !== null && e.operation === 'PUT' ? [{ key: e.key, putAtMs: e.created.getTime() }] : [],
    );
  };
}

export function keyLister(nc: NatsConnection, kv: KV, bucket: string, timeoutMs: number): KeyLister {
  const list = entryLister(nc, kv, bucket, timeoutMs);
  return async () => (await list()).map((e) => e.key);
}
