/**
 * The durable pull consumer of one shard's slice of the ingest stream. Its filter
 * `<ns>.ingest.<shard>.>` never overlaps another shard's, as work-queue retention requires.
 */
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  type ConsumerConfig,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { natsDescription, type Names } from './names.js';

/** Create the shard's durable, or bring the tunable limits of an existing one up to date. */
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
