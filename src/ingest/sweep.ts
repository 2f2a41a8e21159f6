/**
 * Acknowledged ingest messages the stream kept: removed by the shard's owner.
 *
 * With work-queue retention the server deletes a message once its consumer acked it, but
 * it writes those deletes to its store asynchronously: a nats-server killed with SIGKILL
 * comes back with some acked messages still stored, below the consumer's ack floor, where
 * nothing will deliver or delete them (README "Chaos": 11–155 such messages after five
 * kills). They count against the stream's byte limit (`SERVICE_INGEST_MAX_BYTES`) for ever.
 *
 * Every message a consumer's ack floor has passed was acked, or was given up by the server at
 * the consumer's `max_deliver` (stream.ts): nats-server 2.9 drops such a message from the
 * consumer's pending set without an ack, so the floor passes it while the stream keeps it.
 * Each of those raised a MAX_DELIVERIES advisory, kept in `<ns>_INGEST_MAXED` until its
 * message is dead-lettered and deleted (max-deliveries.ts). So a sweep reads the floor, waits
 * a moment (the server queues an advisory internally before storing it), and deletes nothing
 * while the shard has advisories waiting; with none, every message at or below that floor
 * was acked. A floor that went back (a restarted server, a new leader of a replicated
 * consumer) only deletes less. The messages of the shard's subjects at or below the floor are
 * deleted one by one, each found with STREAM.MSG.GET
 * `next_by_subj` on one exact subject (an install's), which the server answers from its
 * per-block subject index; a wildcard `next_by_subj` would read every block of other shards'
 * backlog. The subjects come from STREAM.INFO `subjects_filter`; a stream whose first message
 * is above the floor holds none, which is the usual answer and costs one request.
 *
 * Not a purge by filter and sequence: on nats-server 2.9 a purge that matches a consumer's
 * filter drops that consumer's whole pending state, so the events it had delivered and not
 * settled would never be redelivered (test/integration/ingest-sweep.test.ts showed it).
 * Deleting a message below the floor touches no consumer state.
 */
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import type { Names } from '../runtime/names.js';
import { nextOnSubject } from './stream.js';

/** How often an owner sweeps its shard (±25 %); a restarted nats-server leaves such messages rarely. */
const SWEEP_EVERY_MS = 10 * 60_000;
/** The first sweep comes within this long of taking the shard, so a node's shards do not all ask at once. */
const FIRST_SWEEP_WITHIN_MS = 30_000;
/** Deletes per sweep at most, and its time (each request has the client's own timeout); the rest wait for the next. */
const SWEEP_MAX = 1_000;
const SWEEP_FOR_MS = 30_000;
/** Between reading the floor and looking for advisories: what the server raised by then is stored. */
const ADVISORY_SETTLE_MS = 1_000;

/** Whether the shard has max-deliveries advisories not handled yet (max-deliveries.ts). */
async function advisoriesWaiting(jsm: JetStreamManager, names: Names, shard: number): Promise<boolean> {
  const subject = names.ingestMaxedSubject(shard);
  const info = await jsm.streams.info(names.ingestMaxedStream, { subjects_filter: subject });
  return (info.state.subjects?.[subject] ?? 0) > 0;
}

/** Delete the shard's messages at or below its consumer's ack floor; returns how many it deleted. */
export async function sweepAcked(
  jsm: JetStreamManager,
  names: Names,
  shard: number,
  max = SWEEP_MAX,
  forMs = SWEEP_FOR_MS,
): Promise<number> {
  const until = Date.now() + forMs;
  const consumer = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
  const floor = consumer.ack_floor.stream_seq;
  if (floor <= 0) return 0;
  await new Promise((r) => setTimeout(r, ADVISORY_SETTLE_MS));
  if (await advisoriesWaiting(jsm, names, shard)) return 0;
  const stream = await jsm.streams.info(names.ingestStream, { subjects_filter: names.ingestShardFilter(shard) });
  if (stream.state.first_seq > floor) return 0;
  let removed = 0;
  for (const subject of Object.keys(stream.state.subjects ?? {})) {
    for (let seq = stream.state.first_seq; seq <= floor;) {
      if (removed >= max || Date.now() >= until) return removed;
      const m = await nextOnSubject(jsm, names.ingestStream, subject, seq);
      if (m === null || m.seq > floor) break;
      try {
        if (await jsm.streams.deleteMessage(names.ingestStream, m.seq, false)) removed++;
      } catch (err) {
        // Gone meanwhile (the server caught up, or another owner swept), or not deletable now:
        // the next sweep sees it again if it is still there.
        if (!(err instanceof JetStreamApiError)) throw err;
      }
      seq = m.seq + 1;
    }
  }
  return removed;
}

/**
 * Sweeps one shard soon after `start`, then every `everyMs` or so until `stop` (each sweep is
 * scheduled when the one before ended, so two never overlap); failures are logged and tried again next time.
 */
export class AckedSweeper {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly o: {
      jsm: JetStreamManager;
      names: Names;
      shard: number;
      log: Logger;
      everyMs?: number;
      /** The first sweep comes at a random moment within this long; default FIRST_SWEEP_WITHIN_MS. */
      firstWithinMs?: number;
    },
  ) {}

  start(): void {
    if (this.timer || this.stopped) return;
    this.schedule(Math.random() * (this.o.firstWithinMs ?? FIRST_SWEEP_WITHIN_MS));
  }

  /**
   * No more sweeps. One under way is not waited for: a shard's hand-back must not wait on it,
   * and a sweep is safe whoever owns the shard when it lands.
   */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => void this.sweep(), ms);
    this.timer.unref();
  }

  private async sweep(): Promise<void> {
    if (this.stopped) return;
    const { jsm, names, shard, log } = this.o;
    try {
      const removed = await sweepAcked(jsm, names, shard);
      if (removed > 0) {
        log.warn(
          { removed },
          'removed acknowledged ingest messages the stream had kept (a nats-server restart loses its last deletes)',
        );
      }
    } catch (err) {
      if (!this.stopped) log.warn({ err }, 'ingest sweep failed; trying again later');
    } finally {
      if (!this.stopped) this.schedule((this.o.everyMs ?? SWEEP_EVERY_MS) * (0.75 + Math.random() / 2));
    }
  }
}
