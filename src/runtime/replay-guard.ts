/**
 * No replay of sealed actor requests (issue 32 item 3, INTERFACE §9.4).
 *
 * The seal (seal.ts) proves that a node of this deployment made a request, not that it
 * made it now: a client of the deployment's NATS that captured a sealed emit on
 * `<ns>.actor.<shard>.install-writes.<id>` could publish it again before its deadline and
 * post twice. So every request carries an id (`rid`, inside the sealed body, so it cannot
 * be changed), and the node serving it records the id in a KV bucket before acting on it,
 * create-if-absent: the second delivery of an id finds it and is refused, on this node or
 * on the shard's next owner after a failover (a node-local memory would miss that one).
 *
 * How long an id is remembered. nats-server 2.9.10 has no per-message TTL, so each bucket
 * has a max age, and there are two: ids of asks of up to a minute (emits, health, buckets)
 * in `<ns>_replay` (3 minutes), longer ones (ticks of up to 15 minutes) in
 * `<ns>_replay_long` (33 minutes), so the busy bucket holds only a few minutes of ids. The
 * asker picks the bucket from its timeout (the id's first letter); the server refuses an id
 * whose deadline lies further ahead than its bucket covers, less a margin for clocks apart,
 * so an id outlives every moment it could be replayed at (a request past its deadline is
 * refused anyway). A resend by the router (a shard moved, an idempotent ask unanswered) is
 * a new request with a new id.
 *
 * A node of an earlier release sends no id: the body's digest stands in (the body holds its
 * deadline to the millisecond and the edge's request id), so a replay of such a request is
 * refused too; only that node's own resend of the same body would be, during the roll.
 *
 * The asker may withdraw an attempt left unanswered (`withdrawer`, router.ts): it creates the
 * id itself, marked withdrawn. Created, the id proves that no node had admitted the attempt,
 * and none ever will (a late delivery is refused as a second one), so the asker may send it
 * again, as a new attempt, without any risk of running it twice: that is how a request caught
 * by a node killed before it read the request reaches the shard's next owner. Refused, the id
 * says a node admitted the attempt and may have acted on it: it is never sent again.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { BadRequest, notStarted } from '../errors.js';
import type { Logger } from '../log.js';
import type { KvOpener } from './deployment-kv.js';
import type { Names } from './names.js';
import { isWrongSequence } from './shard-kv.js';
import { logEvery } from './log-every.js';

/**
 * Per bucket: the longest ask it serves, how far ahead a deadline it accepts (the ask plus
 * the asker's clock running ahead), and its max age (that plus the serving nodes' and the
 * NATS servers' clocks apart).
 */
const WINDOWS = {
  s: { askMs: 60_000, acceptMs: 90_000, ttlMs: 3 * 60_000 },
  l: { askMs: 30 * 60_000, acceptMs: 31 * 60_000, ttlMs: 33 * 60_000 },
} as const;
type Tier = keyof typeof WINDOWS;

/** The longest timeout an ask may have: its id must be remembered until its deadline. */
const MAX_ASK_MS = WINDOWS.l.askMs;
/** A KV write that takes longer answers "not started": the asker resends with a new id. */
const STORE_TIMEOUT_MS = 2_000;
/** Refused replays are logged at most this often per node (a flood must not flood the log). */
const LOG_EVERY_MS = 10_000;

const RID = /^[sl][A-Za-z0-9_-]{22}$/;
const EMPTY = new Uint8Array(0);
/** The value of an id its asker withdrew (an admitted id holds nothing). */
const WITHDRAWN = new TextEncoder().encode('withdrawn');

/** A fresh id for one attempt of an ask of `timeoutMs` (128 random bits behind the bucket letter). */
export function newRequestId(timeoutMs: number): string {
  if (timeoutMs > MAX_ASK_MS) throw new RangeError(`an ask may wait at most ${MAX_ASK_MS} ms`);
  const tier: Tier = timeoutMs <= WINDOWS.s.askMs ? 's' : 'l';
  return tier + randomBytes(16).toString('base64url');
}

export interface ReplayGuard {
  /**
   * Records a request's id: true on its first delivery, false when it was delivered before.
   * `rid` absent: the request came from an earlier release and `body`'s digest stands in.
   * Throws `BadRequest` for a malformed id or a deadline beyond the id's bucket, and
   * `ActorUnavailable` (not started) when the bucket does not answer in time.
   */
  admit(rid: unknown, body: Uint8Array, deadline: number): Promise<boolean>;
}

export interface ReplayBuckets {
  short: KV;
  long: KV;
}

export async function openReplayBuckets(open: KvOpener, names: Names): Promise<ReplayBuckets> {
  const opts = (tier: Tier) => ({ ttlMs: WINDOWS[tier].ttlMs, timeoutMs: STORE_TIMEOUT_MS });
  return { short: await open(names.replayBucket, opts('s')), long: await open(names.replayLongBucket, opts('l')) };
}

export function replayGuard(
  buckets: ReplayBuckets,
  opts: { log: Logger; onReplay?: () => void; now?: () => number },
): ReplayGuard {
  const now = opts.now ?? Date.now;
  const tellReplay = logEvery(LOG_EVERY_MS, now);
  return {
    async admit(rid, body, deadline) {
      let id: string;
      let tier: Tier;
      if (rid === undefined) {
        id = `d${createHash('sha256').update(body).digest('base64url')}`;
        tier = 'l';
      } else {
        if (typeof rid !== 'string' || !RID.test(rid)) throw new BadRequest('actor request id is malformed');
        id = rid;
        tier = rid[0] as Tier;
      }
      if (deadline - now() > WINDOWS[tier].acceptMs)
        throw new BadRequest("actor request deadline lies beyond its id's window (are the nodes' clocks apart?)");
      const bucket = tier === 's' ? buckets.short : buckets.long;
      try {
        await bucket.create(id, EMPTY);
        return true;
      } catch (err) {
        if (!isWrongSequence(err)) throw notStarted('the replay fence did not answer; resend', err);
      }
      // Withdrawn by its asker, which resends it as a new attempt: nothing replays anything.
      if (rid !== undefined && (await withdrawnId(bucket, id)))
        throw notStarted('the asker withdrew this request and sends it again');
      opts.onReplay?.();
      tellReplay((refused) =>
        opts.log.warn(
          { refused },
          'sealed actor request delivered a second time refused: something replays captured requests',
        ),
      );
      return false;
    },
  };
}

/**
 * The asker's side: `withdraw(rid)` is true when the attempt `rid` is withdrawn (no node
 * admitted it, and none will), false when a node admitted it (it may have acted). Throws when
 * the bucket does not answer: the attempt's fate is then unknown, and it stays sent.
 */
export type Withdraw = (rid: string) => Promise<boolean>;

export function withdrawer(buckets: ReplayBuckets): Withdraw {
  return async (rid) => {
    if (!RID.test(rid)) throw new RangeError('not a request id');
    try {
      await (rid[0] === 's' ? buckets.short : buckets.long).create(rid, WITHDRAWN);
      return true;
    } catch (err) {
      if (isWrongSequence(err)) return false;
      throw err;
    }
  };
}

async function withdrawnId(bucket: KV, id: string): Promise<boolean> {
  const e = await bucket.get(id).catch(() => null);
  return e !== null && e.operation === 'PUT' && e.string() === 'withdrawn';
}
