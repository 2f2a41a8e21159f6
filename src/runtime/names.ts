/**
 * Every NATS subject, stream, consumer and KV bucket this deployment owns, derived from
 * `SERVICE_NAMESPACE` (INTERFACE.md §1, §7). Nothing else in the code spells a subject.
 * The README's NATS table is checked against `describeNames()` by a unit test.
 *
 * Ids that go into subjects or KV keys pass through `token()`: an id of the safe alphabet
 * is used as is; anything else (a `.`, `*`, `>`, space, unicode...) is base64url-encoded
 * behind a `=` prefix, which the safe alphabet cannot produce, so an id can never widen
 * a subscription or collide with another id.
 */
import { createHash } from 'node:crypto';

const SAFE = /^[A-Za-z0-9_-]{1,200}$/;

export function token(id: string): string {
  if (SAFE.test(id)) return id;
  return `=${Buffer.from(id, 'utf8').toString('base64url')}`;
}

export function untoken(t: string): string {
  return t.startsWith('=') ? Buffer.from(t.slice(1), 'base64url').toString('utf8') : t;
}

/** An actor address: `{kind}/{id parts...}` (ARCHITECTURE.md "Actors"). */
export interface ActorKey {
  kind: string;
  id: string[];
}

export function keyString(k: ActorKey): string {
  return [k.kind, ...k.id].join('/');
}

export function parseKey(s: string): ActorKey {
  const [kind, ...id] = s.split('/');
  return { kind: kind ?? '', id };
}

/**
 * Shard of an actor key: FNV-1a over the key string, modulo S. Stable across nodes and
 * versions (S is fixed per deployment and stored in KV at first start).
 */
export function shardOf(key: string | ActorKey, shards: number): number {
  const s = typeof key === 'string' ? key : keyString(key);
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

/** The shard that owns an install's actor also runs the ingest consumer for its events. */
export function installKey(installId: string): ActorKey {
  return { kind: 'install', id: [installId] };
}

/** The install's emits and health, apart from its ingest mailbox (actors/install-writes.ts). */
export function installWritesKey(installId: string): ActorKey {
  return { kind: 'install-writes', id: [installId] };
}

export interface Names {
  ns: string;
  /** JetStream stream holding inbound events durably. */
  ingestStream: string;
  ingestSubjects: string;
  ingestSubject(shard: number, connectorId: string, installId: string): string;
  ingestShardFilter(shard: number): string;
  /** Durable pull consumer of one shard's slice of the ingest stream. */
  ingestConsumer(shard: number): string;
  /**
   * Stream keeping the ingest consumers' MAX_DELIVERIES advisories (server subjects
   * `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`) until the message each
   * names is dead-lettered (ingest/max-deliveries.ts).
   */
  ingestMaxedStream: string;
  ingestMaxedSubjects: string;
  /** The advisory subject of one shard's consumer. */
  ingestMaxedSubject(shard: number): string;
  /** Durable consumer of one shard's advisories, run by the shard's owner. */
  ingestMaxedConsumer(shard: number): string;
  actorSubject(shard: number, key: ActorKey): string;
  actorShardWildcard(shard: number): string;
  /** KV: shard leases (TTL = lease TTL). */
  leaseBucket: string;
  leaseKey(shard: number): string;
  /** KV: node heartbeats (TTL = lease TTL). */
  nodeBucket: string;
  nodeKey(nodeId: string): string;
  /** KV: deployment facts fixed at first start (shard count). */
  metaBucket: string;
  /** KV: backfill cursors (max value 100 KB, spec §8). */
  cursorBucket: string;
  cursorKey(key: ActorKey): string;
  /** KV: short-lived dedup keys and single-flight locks (TTL). */
  dedupBucket: string;
  /** KV: ids of sealed actor requests already delivered (replay-guard.ts): asks up to a minute, and longer ones. */
  replayBucket: string;
  replayLongBucket: string;
  /** Public change feed (INTERFACE §7). */
  graphChanged(tenantId: string): string;
  graphChangedAll: string;
  /**
   * INTERFACE §10.1: after a commit that advanced a tenant's change feed, `{"seq"}` (its new
   * head), so the edges' long-polls, SSE streams and the webhook actors read again at once.
   */
  feedAdvanced(tenantId: string): string;
  feedAdvancedAll: string;
}

/** nats-server's advisory subject prefix for a consumer's message past its max_deliver (2.2+). */
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES';

export function names(ns: string): Names {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(ns)) throw new Error(`invalid SERVICE_NAMESPACE`);
  return {
    ns,
    ingestStream: `${ns}_INGEST`,
    ingestSubjects: `${ns}.ingest.>`,
    ingestSubject: (shard, connectorId, installId) => `${ns}.ingest.${shard}.${token(connectorId)}.${token(installId)}`,
    ingestShardFilter: (shard) => `${ns}.ingest.${shard}.>`,
    ingestConsumer: (shard) => `${ns}_ingest_${shard}`,
    ingestMaxedStream: `${ns}_INGEST_MAXED`,
    ingestMaxedSubjects: `${MAX_DELIVERIES}.${ns}_INGEST.*`,
    ingestMaxedSubject: (shard) => `${MAX_DELIVERIES}.${ns}_INGEST.${ns}_ingest_${shard}`,
    ingestMaxedConsumer: (shard) => `${ns}_ingest_maxed_${shard}`,
    actorSubject: (shard, key) => `${ns}.actor.${shard}.${token(key.kind)}.${key.id.map(token).join('.')}`,
    actorShardWildcard: (shard) => `${ns}.actor.${shard}.>`,
    leaseBucket: `${ns}_leases`,
    leaseKey: (shard) => `shard.${shard}`,
    nodeBucket: `${ns}_nodes`,
    nodeKey: (nodeId) => `node.${token(nodeId)}`,
    metaBucket: `${ns}_meta`,
    cursorBucket: `${ns}_cursors`,
    cursorKey: (key) => `${token(key.kind)}.${key.id.map(token).join('.')}`,
    dedupBucket: `${ns}_dedup`,
    replayBucket: `${ns}_replay`,
    replayLongBucket: `${ns}_replay_long`,
    graphChanged: (tenantId) => `${ns}.graph.${token(tenantId)}.changed`,
    graphChangedAll: `${ns}.graph.*.changed`,
    feedAdvanced: (tenantId) => `${ns}.feed.${token(tenantId)}.advanced`,
    feedAdvancedAll: `${ns}.feed.*.advanced`,
  };
}

/** The README's table of NATS names, for the docs check. */
export function describeNames(ns = '<ns>'): Array<{ name: string; what: string; watch: string }> {
  return [
    {
      name: `${ns}_INGEST`,
      what: `stream on ${ns}.ingest.> (inbound events, work-queue)`,
      watch: `nats stream info ${ns}_INGEST`,
    },
    {
      name: `${ns}.ingest.<shard>.<connector>.<install_id>`,
      what: 'subject of one inbound event',
      watch: `nats sub '${ns}.ingest.>'`,
    },
    {
      name: `${ns}_ingest_<shard>`,
      what: 'durable consumer of one shard',
      watch: `nats consumer info ${ns}_INGEST ${ns}_ingest_0`,
    },
    {
      name: `${ns}_INGEST_MAXED`,
      what:
        `stream on ${MAX_DELIVERIES}.${ns}_INGEST.* (work-queue): ` +
        'ingest messages past max_deliver, each kept until it is dead-lettered',
      watch: `nats stream info ${ns}_INGEST_MAXED`,
    },
    {
      name: `${ns}_ingest_maxed_<shard>`,
      what: "durable consumer of one shard's max-deliveries advisories",
      watch: `nats consumer info ${ns}_INGEST_MAXED ${ns}_ingest_maxed_0`,
    },
    { name: `${ns}.actor.<shard>.<kind>.<id...>`, what: 'actor request/reply', watch: `nats sub '${ns}.actor.>'` },
    { name: `${ns}_leases`, what: 'KV: shard leases', watch: `nats kv watch ${ns}_leases` },
    { name: `${ns}_nodes`, what: 'KV: node heartbeats', watch: `nats kv watch ${ns}_nodes` },
    { name: `${ns}_meta`, what: 'KV: shard count fixed at first start', watch: `nats kv get ${ns}_meta shards` },
    {
      name: `${ns}_cursors`,
      what:
        'KV: backfill cursors, rate gates, write holds, ' +
        'the chat edge heartbeat `chatapp.edge-heartbeat` (no expiry)',
      watch: `nats kv watch ${ns}_cursors`,
    },
    { name: `${ns}_dedup`, what: 'KV: dedup keys and single-flight locks', watch: `nats kv watch ${ns}_dedup` },
    {
      name: `${ns}_replay`,
      what: 'KV: ids of actor requests served, asks up to 1 min (3 min TTL; a second delivery is refused)',
      watch: `nats kv info ${ns}_replay`,
    },
    {
      name: `${ns}_replay_long`,
      what: 'KV: ids of actor requests served, longer asks (33 min TTL)',
      watch: `nats kv info ${ns}_replay_long`,
    },
    { name: `${ns}.graph.<tenant_id>.changed`, what: 'public change feed', watch: `nats sub '${ns}.graph.*.changed'` },
    {
      name: `${ns}.feed.<tenant_id>.advanced`,
      what: "a tenant's change feed advanced (wakes feed readers)",
      watch: `nats sub '${ns}.feed.*.advanced'`,
    },
  ];
}

/** A short stable digest, for Nats-Msg-Id values longer than is sensible. */
export function digest(s: string): string {
  return createHash('sha256').update(s).digest('base64url').slice(0, 32);
}

/**
 * The description set on a stream, consumer or KV bucket this deployment creates
 * (INTERFACE §9.2), taken from the README table so `nats stream ls` says what each one is.
 */
export function natsDescription(ns: string, name: string): string {
  const generic = `<ns>${name.slice(ns.length)}`
    .replace(/_ingest_\d+$/, '_ingest_<shard>')
    .replace(/_ingest_maxed_\d+$/, '_ingest_maxed_<shard>');
  const what = describeNames().find((r) => r.name === generic)?.what ?? 'state';
  return `connector-service ${ns}: ${what}`;
}

/** Install id from `<ns>.ingest.<shard>.<connector>.<install>`; null if malformed. */
export function installIdOfIngestSubject(subject: string): string | null {
  const parts = subject.split('.');
  const last = parts[parts.length - 1];
  return parts.length === 5 && last ? untoken(last) : null;
}
