/**
 * KV reads and writes the shard manager needs besides leases: the deployment's fixed shard
 * count and telling a CAS refusal from a transport failure.
 */
import { JetStreamApiError, JetStreamApiCodes } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';

/** Key in the meta bucket holding S, written by the first node ever started. */
const SHARDS_META_KEY = 'shards';

/**
 * This node was configured with another S than the deployment: refusing to start, since
 * keys would hash to other shards and two nodes could then run the same actor.
 */
class ShardCountMismatch extends Error {
  readonly code = 'shard_count_mismatch';
  constructor(
    readonly stored: number,
    readonly configured: number,
  ) {
    super(
      `SERVICE_SHARDS=${configured} but this deployment was created with ${stored} shards; ` +
        `set SERVICE_SHARDS=${stored} (the shard count is fixed per deployment)`,
    );
    this.name = 'ShardCountMismatch';
  }
}

/** Store S on first start; afterwards refuse any other S. */
export async function ensureShardCount(meta: KV, shards: number): Promise<void> {
  try {
    await meta.create(SHARDS_META_KEY, String(shards));
    return;
  } catch (err) {
    if (!isWrongSequence(err)) throw err;
  }
  // Someone stored it first (maybe a node starting at the same moment): compare.
  const e = await meta.get(SHARDS_META_KEY);
  const stored = e !== null && e.operation === 'PUT' ? Number(e.string()) : Number.NaN;
  if (stored !== shards) throw new ShardCountMismatch(stored, shards);
}

/** The CAS of a create/update/delete was refused: the key is not at the revision we expected. */
export function isWrongSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
