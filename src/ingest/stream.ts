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
 *
 * Then the stream of the consumers' max-deliveries advisories (max-deliveries.ts), before
 * any consumer exists, so no advisory is raised while nothing keeps it.
 */
export async function ensureIngestStream(
  jsm: JetStreamManager,
  names: Names,
  limits: IngestStreamLimits = {},
): Promise<void> {
  const replicas = limits.replicas ?? 1;
  await ensureWorkQueue(jsm, names.ingestStream, names.ingestSubjects, replicas, {
    max_bytes: limits.maxBytes ?? DEFAULT_MAX_BYTES,
    discard: DiscardPolicy.New,
    // In `tunable` so an existing stream made with a shorter window is brought to this one.
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    description: natsDescription(names.ns, names.ingestStream),
  });
  await ensureMaxedStream(jsm, names, replicas);
}

/** The stream keeping the ingest consumers' max-deliveries advisories (max-deliveries.ts). */
export function ensureMaxedStream(jsm: JetStreamManager, names: Names, replicas = 1): Promise<void> {
  return ensureWorkQueue(jsm, names.ingestMaxedStream, names.ingestMaxedSubjects, replicas, {
    max_bytes: MAXED_MAX_BYTES,
    discard: DiscardPolicy.New,
    description: natsDescription(names.ns, names.ingestMaxedStream),
  });
}

/** An advisory is about 350 bytes: room for some 190,000 messages waiting to be dead-lettered. */
const MAXED_MAX_BYTES = 64 * 1024 * 1024;

async function ensureWorkQueue(
  jsm: JetStreamManager,
  name: string,
  subject: string,
  replicas: number,
  tunable: Partial<StreamConfig>,
): Promise<void> {
  const cfg: Partial<StreamConfig> & { name: string } = {
    ...tunable,
    name,
    subjects: [subject],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    num_replicas: replicas,
  };
  const existing = await streamInfo(jsm, name);
  if (existing === null) {
    try {
      await jsm.streams.add(cfg);
      return;
    } catch (err) {
      // Another node created it between our info and add; fall through and check it.
      if ((await streamInfo(jsm, name)) === null) throw explainReplicaRefusal(err, `stream ${name}`, replicas);
      return ensureWorkQueue(jsm, name, subject, replicas, tunable);
    }
  }
  if (existing.retention !== RetentionPolicy.Workqueue) {
    // Retention cannot be changed in place; an operator must delete or rename the stream.
    throw new Internal(`stream ${name} exists with ${existing.retention} retention; it must be workqueue`);
  }
  await alignStream(jsm, name, { replicas, what: `stream ${name}`, extra: tunable as Record<string, unknown> });
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
 * Deliveries of one ingest message, at most, on the server. The consumer dead-letters an
 * event itself after its `maxDeliver` real attempts (8, counted across owners, attempts.ts,
 * about two minutes of backoff), so for an event it can attempt this bound never comes
 * first: the server also counts each hand-back at a shard move and each ack wait that ran
 * out after a kill, and 64 leaves room for 56 of those. What it ends is what the consumer
 * never gets to settle: a message that takes its owner down before its attempt is counted,
 * or one whose terminate never arrived. The server then stops delivering it and raises a
 * MAX_DELIVERIES advisory, and the shard's owner dead-letters it from there
 * (max-deliveries.ts), whole and replayable: a message that was merely slow is not lost.
 */
export const SERVER_MAX_DELIVER = 64;

/**
 * Create the shard's durable pull consumer, or bring the tunable limits of an existing one
 * up to date. Its filter `<ns>.ingest.<shard>.>` never overlaps another shard's, as
 * work-queue retention requires.
 */
export async function ensureIngestConsumer(
  jsm: JetStreamManager,
  names: Names,
  shard: number,
  limits: { ackWaitMs: number; maxAckPending: number; maxDeliver?: number },
): Promise<void> {
  const durable = names.ingestConsumer(shard);
  const tunable = {
    ack_wait: nanos(limits.ackWaitMs),
    max_ack_pending: limits.maxAckPending,
    max_deliver: limits.maxDeliver ?? SERVER_MAX_DELIVER,
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
  await ensureDurable(jsm, names.ingestStream, durable, cfg, tunable);
  // Its advisories' consumer: one shard's subject of the advisory stream.
  const maxed = names.ingestMaxedConsumer(shard);
  const maxedTunable = {
    ack_wait: nanos(MAXED_ACK_WAIT_MS),
    // Retried until the dead letter is stored (Postgres may be away for a while).
    max_deliver: -1,
    description: natsDescription(names.ns, maxed),
  };
  await ensureDurable(
    jsm,
    names.ingestMaxedStream,
    maxed,
    {
      ...maxedTunable,
      durable_name: maxed,
      filter_subject: names.ingestMaxedSubject(shard),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      replay_policy: ReplayPolicy.Instant,
    },
    maxedTunable,
  );
}

/** How long an advisory's dead-lettering may take before the server offers it again. */
const MAXED_ACK_WAIT_MS = 30_000;

async function ensureDurable(
  jsm: JetStreamManager,
  stream: string,
  durable: string,
  cfg: Partial<ConsumerConfig>,
  tunable: Partial<ConsumerConfig>,
): Promise<void> {
  let current: ConsumerConfig;
  try {
    current = (await jsm.consumers.info(stream, durable)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
    await jsm.consumers.add(stream, cfg);
    return;
  }
  const stale = Object.entries(tunable).some(([k, v]) => (current as unknown as Record<string, unknown>)[k] !== v);
  if (stale) await jsm.consumers.update(stream, durable, tunable);
}

/** The stream's first message at or after `seq` on `subject` (STREAM.MSG.GET `next_by_subj`), or null. */
export function nextOnSubject(jsm: JetStreamManager, stream: string, subject: string, seq: number) {
  // The client types the request without next_by_subj, but sends the query as given.
  const query = { seq, next_by_subj: subject } as unknown as MsgRequest;
  return jsm.streams.getMessage(stream, query);
}
