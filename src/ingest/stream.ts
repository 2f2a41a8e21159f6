/**
 * The ingest stream and its shard consumers as the server holds them (ARCHITECTURE.md
 * "Inbound"): created at start, brought to the configured limits when they exist, and read
 * message by message where an owner must look past its consumer (takeover.ts, sweep.ts).
 */
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type MsgRequest,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { Internal } from '../errors.js';
import { natsDescription, type Names } from '../runtime/names.js';
import { alignStream, explainReplicaRefusal } from '../runtime/nats.js';

/**
 * A webhook retry inside this window is a JetStream duplicate, never a second event. Slack
 * retries an unanswered event three times over about 5 minutes (issue 12, item 2), and the
 * chat edge keeps no dedup key of its own: 6 minutes covers the whole schedule. Past it, the
 * events table's `(install_id, id)` key absorbs the retry.
 */
const DUPLICATE_WINDOW_MS = 6 * 60_000;

export interface IngestStreamLimits {
  /** INTERFACE §9.2 `SERVICE_NATS_REPLICAS` (default 1). */
  replicas?: number;
  /** INTERFACE §9.2 `SERVICE_INGEST_MAX_BYTES` (default 1 GiB). */
  maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * Create the ingest stream, or bring the one that exists to the configured replicas, byte
 * limit, duplicate window and description. Work-queue retention: each message is removed once acked, which
 * requires one consumer per subject; the per-shard durables filter on
 * `<ns>.ingest.<shard>.>`, which never overlap. Discard-new (INTERFACE §9.2): a full
 * stream refuses the publish, so the edge answers 503 and the platform retries; nothing
 * stored is ever discarded to make room.
 */
export async function ensureIngestStream(
  jsm: JetStreamManager,
  names: Names,
  limits: IngestStreamLimits = {},
): Promise<void> {
  const replicas = limits.replicas ?? 1;
  const tunable = {
    max_bytes: limits.maxBytes ?? DEFAULT_MAX_BYTES,
    discard: DiscardPolicy.New,
    // In `tunable` so an existing stream made with a shorter window is brought to this one.
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    description: natsDescription(names.ns, names.ingestStream),
  };
  const cfg: Partial<StreamConfig> & { name: string } = {
    ...tunable,
    name: names.ingestStream,
    subjects: [names.ingestSubjects],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    num_replicas: replicas,
  };
  const existing = await streamInfo(jsm, names.ingestStream);
  if (existing === null) {
    try {
      await jsm.streams.add(cfg);
      return;
    } catch (err) {
      // Another node created it between our info and add; fall through and check it.
      if ((await streamInfo(jsm, names.ingestStream)) === null) {
        throw explainReplicaRefusal(err, `stream ${names.ingestStream}`, replicas);
      }
      return ensureIngestStream(jsm, names, limits);
    }
  }
  if (existing.retention !== RetentionPolicy.Workqueue) {
    // Retention cannot be changed in place; an operator must delete or rename the stream.
    throw new Internal(
      `stream ${names.ingestStream} exists with ${existing.retention} retention; it must be workqueue`,
    );
  }
  await alignStream(jsm, names.ingestStream, {
    replicas,
    what: `stream ${names.ingestStream}`,
    extra: tunable,
  });
}

async function streamInfo(jsm: JetStreamManager, name: string): Promise<StreamConfig | null> {
  try {
    return (await jsm.streams.info(name)).config;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null;
    throw err;
  }
}

/**
 * Create the shard's durable pull consumer, or bring the tunable limits of an existing one
 * up to date. Its filter `<ns>.ingest.<shard>.>` never overlaps another shard's, as
 * work-queue retention requires.
 */
export async function ensureIngestConsumer(
  jsm: JetStreamManager,
  names: Names,
  shard: number,
  limits: { ackWaitMs: number; maxAckPending: number },
): Promise<void> {
  const durable = names.ingestConsumer(shard);
  const tunable = {
    ack_wait: nanos(limits.ackWaitMs),
    max_ack_pending: limits.maxAckPending,
    // Unlimited on the server: the consumer dead-letters at its own maxDeliver, also for
    // an event that timed out every time (a crash loop), which a server limit would strand.
    max_deliver: -1,
    description: natsDescription(names.ns, durable),
  };
  const cfg: Partial<ConsumerConfig> = {
    ...tunable,
    durable_name: durable,
    filter_subject: names.ingestShardFilter(shard),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
  };
  let current: ConsumerConfig;
  try {
    current = (await jsm.consumers.info(names.ingestStream, durable)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
    await jsm.consumers.add(names.ingestStream, cfg);
    return;
  }
  if (
    current.ack_wait !== tunable.ack_wait ||
    current.max_ack_pending !== tunable.max_ack_pending ||
    current.max_deliver !== -1 ||
    current.description !== tunable.description
  ) {
    await jsm.consumers.update(names.ingestStream, durable, tunable);
  }
}

/** The stream's first message at or after `seq` on `subject` (STREAM.MSG.GET `next_by_subj`), or null. */
export function nextOnSubject(jsm: JetStreamManager, stream: string, subject: string, seq: number) {
  // The client types the request without next_by_subj, but sends the query as given.
  const query = { seq, next_by_subj: subject } as unknown as MsgRequest;
  return jsm.streams.getMessage(stream, query);
}
