/**
 * How the shard ingest consumer settles the messages in its hands (consumer.ts):
 * ack after commit, nak with a growing delay (blocking the install's lane so the events
 * behind wait for the redelivery), dead-letter, or hand back on stop. Every path removes
 * the message from `tracked`, whose members are kept alive with +WPI meanwhile. An unsealed
 * message never enters `tracked`: `refuse` ends it as it arrives.
 */
import { backoffMs } from '../backoff.js';
import type { JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import type { BlobPort, DeadLetterPort, IngestEvent } from '../runtime/ports.js';
import { SEAL_HEADER, type Seal } from '../runtime/seal.js';
import { contextOfHeaders } from '../telemetry/nats-trace.js';
import { tracingOn, type Context } from '../telemetry/tracing.js';
import type { IngestAttemptsPort } from './attempts.js';
import type { InstallLanes } from './lanes.js';
import { decodeEnvelope, resolveEnvelope, UndecodableMessage } from './message.js';
import type { RefusalLog } from './refusals.js';

export interface Tracked {
  /** The newest delivery of this stream sequence: acks go to it. */
  msg: JsMsg;
  lane: string;
  installId: string | null;
}

export interface IngestDeliveryMeta {
  deliveryCount: number;
  streamSeq: number;
  /** When the stream stored the message (epoch ms): the start of event-to-committed latency. */
  storedAtMs: number;
  /** The trace the message carries (its publisher's span), when tracing runs (INTERFACE §10.7). */
  trace?: Context;
}

export interface Ready {
  t: Tracked;
  ev: IngestEvent;
  blobRef: string | null;
  /** Bytes of the encoded event: its message's data, or its blob's. */
  bytes: number;
  meta: IngestDeliveryMeta;
  /** Real attempts so far, this one included (attempts.ts); decides dead-lettering. */
  tries: number;
}

export interface SettleCounts {
  delivered: number;
  redeliveries: number;
  deadLettered: number;
}

export interface IngestSettlerOptions {
  log: Logger;
  lanes: InstallLanes;
  /** Every event in the consumer's hands, by stream sequence. */
  tracked: Map<number, Tracked>;
  counts: SettleCounts;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  nakBaseMs: number;
  maxDeliver: number;
  /** Attempts of redelivered events across owners; null counts deliveries instead. */
  attempts: IngestAttemptsPort | null;
  seal: Seal | null;
  refusals: RefusalLog;
}

const NAK_MAX_MS = 60_000;
const ACK_CONFIRM_TIMEOUT_MS = 5_000;

export class IngestSettler {
  private readonly log: Logger;
  private readonly lanes: InstallLanes;
  private readonly tracked: Map<number, Tracked>;
  private readonly counts: SettleCounts;
  private readonly acks = new Set<Promise<void>>();

  constructor(private readonly o: IngestSettlerOptions) {
    this.log = o.log;
    this.lanes = o.lanes;
    this.tracked = o.tracked;
    this.counts = o.counts;
  }

  /** Decode, check and resolve one event for delivery; or settle it here (dead-lettered) or retry it. */
  async admit(t: Tracked): Promise<Ready | 'settled' | 'retry'> {
    const dc = t.msg.info.deliveryCount;
    try {
      const env = decodeEnvelope(t.msg.data);
      // Hand-backs on shard moves count as deliveries; only real attempts may dead-letter.
      const tries = this.o.attempts ? await this.o.attempts.begin(t.msg.seq, dc) : dc;
      if (tries > this.o.maxDeliver) {
        await this.deadLetter(t, `not settled after ${tries - 1} attempts (timed out or crashed)`);
        return 'settled';
      }
      const { event: ev, blobRef, blobBytes } = await resolveEnvelope(env, this.o.blobs);
      if (ev.installId !== t.installId) throw new UndecodableMessage('event install does not match its subject');
      const meta: IngestDeliveryMeta = {
        deliveryCount: dc,
        streamSeq: t.msg.seq,
        storedAtMs: Math.floor(t.msg.info.timestampNanos / 1e6),
      };
      if (tracingOn()) meta.trace = contextOfHeaders(t.msg.headers);
      return { t, ev, blobRef, bytes: blobBytes ?? t.msg.data.length, meta, tries };
    } catch (err) {
      if (err instanceof UndecodableMessage) {
        await this.deadLetter(t, err.message);
        return 'settled';
      }
      this.retryLater(t, err);
      return 'retry';
    }
  }

  /** Confirmed acks still under way (awaited on stop). */
  pendingAcks(): Promise<void>[] {
    return [...this.acks];
  }

  /**
   * Committed: the lane may go on at once. An event without a blob is acked without waiting
   * for confirmation (a lost ack only replays it, which the events table absorbs); one with
   * a blob has its ack confirmed meanwhile, then the blob goes.
   */
  settle(t: Tracked, blobRef: string | null): void {
    this.lanes.unblock(t.lane, t.msg.seq);
    this.o.attempts?.settled(t.msg.seq, t.msg.info.deliveryCount);
    if (blobRef === null) {
      this.tracked.delete(t.msg.seq);
      t.msg.ack();
      return;
    }
    const p = this.ack(t).then(async (acked) => {
      if (!acked) return;
      await this.o.blobs
        .delete(blobRef)
        .catch((err) => this.log.warn({ err, seq: t.msg.seq }, 'blob of an acked event not deleted'));
    });
    this.acks.add(p);
    void p.finally(() => this.acks.delete(p));
  }

  retryLater(t: Tracked, err: unknown): void {
    const dc = t.msg.info.deliveryCount;
    // At least 80 % of the first wait, so a failing event never comes back at once.
    const delay = backoffMs({ firstMs: this.o.nakBaseMs, capMs: NAK_MAX_MS, minMs: this.o.nakBaseMs * 0.8 }, dc);
    // Block the lane before the nak leaves, so the redelivery finds itself the head.
    this.lanes.block(t.lane, t.msg.seq, Date.now() + delay);
    this.tracked.delete(t.msg.seq);
    t.msg.nak(delay);
    this.log.warn(
      { err, seq: t.msg.seq, installId: t.installId, deliveryCount: dc, retryInMs: delay },
      'ingest delivery failed; retrying',
    );
  }

  async deadLetter(t: Tracked, error: string): Promise<void> {
    const m = t.msg;
    try {
      await this.o.deadLetters.record({
        stream: m.info.stream,
        streamSeq: m.seq,
        subject: m.subject,
        msgId: m.headers?.get('Nats-Msg-Id') || null,
        installId: t.installId,
        deliveries: m.info.deliveryCount,
        error,
        payload: m.data,
      });
    } catch (err) {
      this.log.error({ err, seq: m.seq }, 'dead-letter store failed; the event stays in the stream');
      return this.retryLater(t, err);
    }
    this.counts.deadLettered++;
    this.log.error(
      { seq: m.seq, installId: t.installId, deliveries: m.info.deliveryCount, error },
      'ingest event dead-lettered; replay it from the dead-letter store',
    );
    await this.ack(t);
  }

  /** Whether `m` carries this deployment's seal (always, when no seal is configured). */
  sealed(m: JsMsg): boolean {
    return this.o.seal === null || this.o.seal.verify(m.data, m.headers?.get(SEAL_HEADER));
  }

  /**
   * INTERFACE §9.4: a message this deployment did not seal was published by something
   * that is not one of its nodes (webhook signatures skipped). It is ended at once, never
   * stored nor dead-lettered (a replay would launder it), counted and logged (refusals.ts).
   *
   * A plain `+TERM`: nats-server 2.9 reads a terminate only without a reason (it ignores
   * `+TERM <reason>`, added in 2.10, and so redelivered the message after every ack wait
   * for ever, issue 32); 2.10 and later read both. On the work-queue stream a terminate
   * is an ack, so the server deletes the message and it holds no room of the stream.
   */
  refuse(m: JsMsg): void {
    m.term();
    this.o.refusals.refused(m.subject);
  }

  /** Confirmed ack; unblocks the lane either way (an unconfirmed ack may replay, which is safe). */
  async ack(t: Tracked): Promise<boolean> {
    try {
      await t.msg.ackAck({ timeout: ACK_CONFIRM_TIMEOUT_MS });
      return true;
    } catch (err) {
      this.log.warn({ err, seq: t.msg.seq }, 'ack not confirmed; the event may be delivered again');
      return false;
    } finally {
      this.tracked.delete(t.msg.seq);
      this.lanes.unblock(t.lane, t.msg.seq);
    }
  }

  /**
   * On stop: return an undelivered event to the stream for the next owner at once. The
   * order survives the handover because the next owner blocks every unsettled event of
   * the shard before it pulls (see `start`), this one and any failed head before it.
   */
  handBack(t: Tracked): void {
    this.tracked.delete(t.msg.seq);
    t.msg.nak();
  }
}
