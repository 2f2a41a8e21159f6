/**
 * Acknowledged ingest messages the stream kept: removed by the shard's owner.
 *
 * With work-queue retention the server deletes a message once its consumer acked it, but
 * it writes those deletes to its store asynchronously: a nats-server killed with SIGKILL
 * comes back with some acked messages still stored, below the consumer's ack floor, where
 * nothing will deliver or delete them (README "Chaos": 11–155 such messages after five
 * kills). They count against the stream's byte limit (`SERVICE_INGEST_MAX_BYTES`) for ever.
 *
 * Every message of the shard's subjects at or below its consumer's ack floor was acked (the
 * floor only moves past acked messages, and the consumer never gives up on one: its
 * `max_deliver` is unlimited, ensure-ingest-consumer.ts); the floor only grows, so a stale
 * reading removes less, never more. They are found with STREAM.MSG.GET `next_by_subj` and
 * deleted one by one. Not with a purge by filter and sequence: on nats-server 2.9 a purge
 * that matches a consumer's filter drops that consumer's whole pending state, so the events
 * it had delivered and not settled would never be redelivered (test/integration/ingest-sweep.test.ts
 * showed it). Deleting a message below the floor touches no consumer state.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type MsgRequest } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import type { Names } from './names.js';

/** How often an owner sweeps its shard; a restarted nats-server leaves such messages rarely. */
export const SWEEP_EVERY_MS = 10 * 60_000;
/** Deletes per sweep at most, and its time (each request has the client's own timeout); the rest wait for the next. */
const SWEEP_MAX = 1_000;
const SWEEP_FOR_MS = 30_000;

/** Delete the shard's messages at or below its consumer's ack floor; returns how many it deleted. */
export async function sweepAcked(
  jsm: JetStreamManager,
  names: Names,
  shard: number,
  max = SWEEP_MAX,
  forMs = SWEEP_FOR_MS,
): Promise<number> {
  const until = Date.now() + forMs;
  const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
  const floor = info.ack_floor.stream_seq;
  let removed = 0;
  for (let seq = 1; seq <= floor && removed < max && Date.now() < until;) {
    // The client types the request without next_by_subj, but sends the query as given (as ingest-unsettled.ts).
    const query = { seq, next_by_subj: names.ingestShardFilter(shard) } as unknown as MsgRequest;
    const m = await jsm.streams.getMessage(names.ingestStream, query);
    if (m === null || m.seq > floor) break;
    try {
      if (await jsm.streams.deleteMessage(names.ingestStream, m.seq, false)) removed++;
    } catch (err) {
      // Deleted meanwhile (the server caught up): nothing to do.
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound)) throw err;
    }
    seq = m.seq + 1;
  }
  return removed;
}

/** Sweeps one shard at once and then every `everyMs` until `stop`; failures are logged and tried again next time. */
export class AckedSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly o: { jsm: JetStreamManager; names: Names; shard: number; log: Logger; everyMs?: number },
  ) {}

  start(): void {
    if (this.timer) return;
    this.sweep();
    this.timer = setInterval(() => this.sweep(), this.o.everyMs ?? SWEEP_EVERY_MS);
    this.timer.unref();
  }

  /**
   * No more sweeps. One under way is not waited for: a shard's hand-back must not wait on it,
   * and a sweep is safe whoever owns the shard when it lands.
   */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private sweep(): void {
    if (this.running) return;
    const { jsm, names, shard, log } = this.o;
    this.running = sweepAcked(jsm, names, shard)
      .then((removed) => {
        if (removed > 0) {
          log.warn(
            { removed },
            'removed acknowledged ingest messages the stream had kept (a nats-server restart loses its last deletes)',
          );
        }
      })
      .catch((err: unknown) => log.warn({ err }, 'ingest sweep failed; trying again later'))
      .finally(() => {
        this.running = null;
      });
  }
}
