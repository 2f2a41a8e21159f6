/**
 * The durable inbound path, consumer side (ARCHITECTURE.md "Inbound", step 2): the shard
 * owner pulls its slice of the ingest stream and hands each event to `deliver` (the install
 * actor, which commits it to Postgres); the message is acked only after that resolved.
 *
 * - Order: events of one install are delivered one after another in stream order, also
 *   across failures (see ingest-lanes.ts) and across a previous owner's crash (events it
 *   left unsettled block their lanes until they come back, see ingest-unsettled.ts);
 *   different installs run concurrently.
 * - Failure: nak with a delay growing with the delivery count; at `maxDeliver` the event
 *   goes to the dead-letter port and is acked so the install's later events flow. The
 *   server-side max_deliver stays unlimited so an event whose handler crashed the process
 *   every time is still dead-lettered (on its next delivery) instead of stuck unacked.
 * - Acks are confirmed (ackAck, one round trip per event, on the lane's path only), so a
 *   blob is deleted only once its message is surely gone.
 * - nats-server 2.9 may redeliver an acked event after a server crash, and any crash
 *   between commit and ack replays: `deliver` must be idempotent (ON CONFLICT DO NOTHING).
 */
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { ensureIngestConsumer } from './ensure-ingest-consumer.js';
import { decodeEnvelope, resolveEnvelope, UndecodableMessage } from './ingest-envelope.js';
import type { IngestAttemptsPort } from './ingest-attempts.js';
import { InstallLanes } from './ingest-lanes.js';
import { findUnsettled } from './ingest-unsettled.js';
import type { BlobPort, DeadLetterPort, IngestEvent } from './ports.js';
import { untoken, type Names } from './names.js';
import { SEAL_HEADER, type Seal } from './seal.js';

export interface IngestDeliveryMeta {
  deliveryCount: number;
  streamSeq: number;
  /** When the stream stored the message (epoch ms): the start of event-to-committed latency. */
  storedAtMs: number;
}

export interface ShardIngestConsumerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  shard: number;
  log: Logger;
  blobs: BlobPort;
  deadLetters: DeadLetterPort;
  deliver: (ev: IngestEvent, meta: IngestDeliveryMeta) => Promise<void>;
  maxDeliver?: number;
  /**
   * Server-side ack wait: how long events a dead owner held stay out before the next owner
   * gets them. A live owner keeps its events with +WPI, so this bounds no delivery's time.
   */
  ackWaitMs?: number;
  maxAckPending?: number;
  /** First nak delay; doubles per delivery up to 60 s. Default 1000. */
  nakBaseMs?: number;
  /** INTERFACE §9.4: when set, a message without this deployment's seal is refused. */
  seal?: Seal | null;
  /** A refused (unsealed or forged) message, for metrics. */
  onRefused?: (installId: string | null) => void;
  /** Real attempts across owners (ingest-attempts.ts); without it, the delivery count stands in. */
  attempts?: IngestAttemptsPort | null;
}

interface Tracked {
  /** The newest delivery of this stream sequence: acks go to it. */
  msg: JsMsg;
  lane: string;
  installId: string | null;
}

const NAK_MAX_MS = 60_000;
const ACK_CONFIRM_TIMEOUT_MS = 5_000;

export class ShardIngestConsumer {
  private readonly o: Required<ShardIngestConsumerOptions>;
  private readonly log: Logger;
  private readonly lanes: InstallLanes;
  /** Every event in our hands (queued, held or delivering), by stream sequence. */
  private readonly tracked = new Map<number, Tracked>();
  private readonly headRuns = new Set<Promise<void>>();
  private messages: ConsumerMessages | null = null;
  private pump: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private readonly counts = { delivered: 0, redeliveries: 0, deadLettered: 0, lastAckLatencyMs: 0 };

  constructor(opts: ShardIngestConsumerOptions) {
    this.o = {
      maxDeliver: 8,
      ackWaitMs: 10_000,
      maxAckPending: 512,
      nakBaseMs: 1_000,
      seal: null,
      onRefused: () => undefined,
      attempts: null,
      ...opts,
    };
    this.log = opts.log.child({ shard: opts.shard, consumer: opts.names.ingestConsumer(opts.shard) });
    this.lanes = new InstallLanes((err) => this.log.error({ err }, 'ingest lane task failed'));
  }

  async start(): Promise<void> {
    const { js, names, shard, maxAckPending, ackWaitMs } = this.o;
    await ensureIngestConsumer(this.o.jsm, names, shard, { ackWaitMs, maxAckPending });
    // Before pulling: events an earlier owner left unsettled come back only after the ack
    // wait, so newer events of their installs must wait for them.
    const due = Date.now() + ackWaitMs;
    for (const u of await findUnsettled(this.o.jsm, names, shard, this.log)) {
      this.lanes.block(installIdOf(u.subject) ?? `?${u.seq}`, u.seq, due);
    }
    const consumer = await js.consumers.get(names.ingestStream, names.ingestConsumer(shard));
    const messages = await consumer.consume({ max_messages: Math.min(100, maxAckPending) });
    this.messages = messages;
    this.pump = (async () => {
      try {
        for await (const m of messages) this.dispatch(m);
      } catch (err) {
        this.log.error({ err }, 'ingest consumer failed');
      }
      // Unacked events come back after ack_wait to whoever consumes next.
      if (!this.stopping) this.log.error('ingest consumer stopped pulling; release and re-acquire the shard');
    })();
    void (async () => {
      for await (const s of messages.status()) {
        if (
          s.type === 'heartbeats_missed' ||
          s.type === 'consumer_deleted' ||
          s.type === 'consumer_not_found' ||
          s.type === 'stream_not_found'
        ) {
          this.log.warn({ status: s }, 'ingest consumer is not receiving; it retries by itself');
        }
      }
    })();
    // +WPI for what we hold, so a slow delivery or a held event is not redelivered meanwhile.
    this.timer = setInterval(() => this.keepAlive(), Math.max(250, Math.floor(ackWaitMs / 3)));
    this.timer.unref();
  }

  /** Stop pulling, let running deliveries settle, hand every other event back (nak). */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      await this.messages?.close();
      await this.pump;
      this.lanes.releaseAll();
      await Promise.allSettled([...this.lanes.tails(), ...this.headRuns]);
      if (this.timer) clearInterval(this.timer);
    })();
    return this.stopped;
  }

  stats(): {
    inFlight: number;
    delivered: number;
    redeliveries: number;
    deadLettered: number;
    lastAckLatencyMs: number;
  } {
    return { inFlight: this.tracked.size, ...this.counts };
  }

  private dispatch(m: JsMsg): void {
    if (m.info.deliveryCount > 1) this.counts.redeliveries++;
    const known = this.tracked.get(m.seq);
    if (known) {
      // The server resent what we still hold (e.g. after a reconnect): keep one run, ack the newest.
      known.msg = m;
      return;
    }
    const installId = installIdOf(m.subject);
    const t: Tracked = { msg: m, installId, lane: installId ?? `?${m.seq}` };
    this.tracked.set(m.seq, t);
    if (this.stopping) return this.handBack(t);
    if (this.lanes.isHead(t.lane, m.seq)) {
      // A blocking event skips the queue (it waits for it) but not an earlier blocking one.
      const p = this.lanes
        .waitTurn(t.lane, m.seq, () => this.stopping)
        .then(() => (this.stopping ? this.handBack(t) : this.run(t)))
        .catch((err) => this.log.error({ err, seq: m.seq }, 'ingest delivery crashed'))
        .finally(() => this.headRuns.delete(p));
      this.headRuns.add(p);
      return;
    }
    void this.lanes.enqueue(t.lane, async () => {
      await this.lanes.waitTurn(t.lane, m.seq, () => this.stopping);
      if (this.stopping) return this.handBack(t);
      await this.run(t);
    });
  }

  /** Deliver one event and settle its message: ack, nak (retry later) or dead-letter. */
  private async run(t: Tracked): Promise<void> {
    const { seq } = t.msg;
    const dc = t.msg.info.deliveryCount;
    let ev: IngestEvent;
    let blobRef: string | null;
    let tries = dc;
    if (this.o.seal && !this.o.seal.verify(t.msg.data, t.msg.headers?.get(SEAL_HEADER))) return this.refuse(t);
    try {
      const env = decodeEnvelope(t.msg.data);
      // Hand-backs on shard moves count as deliveries; only real attempts may dead-letter.
      if (this.o.attempts) tries = await this.o.attempts.begin(seq, dc);
      if (tries > this.o.maxDeliver)
        return this.deadLetter(t, `not settled after ${tries - 1} attempts (timed out or crashed)`);
      ({ event: ev, blobRef } = await resolveEnvelope(env, this.o.blobs));
      if (ev.installId !== t.installId) throw new UndecodableMessage('event install does not match its subject');
    } catch (err) {
      if (err instanceof UndecodableMessage) return this.deadLetter(t, err.message);
      return this.retryLater(t, err);
    }
    try {
      await this.o.deliver(ev, {
        deliveryCount: dc,
        streamSeq: seq,
        storedAtMs: Math.floor(t.msg.info.timestampNanos / 1e6),
      });
    } catch (err) {
      if (tries >= this.o.maxDeliver) return this.deadLetter(t, errorText(err));
      return this.retryLater(t, err);
    }
    this.counts.delivered++;
    const acked = await this.ack(t);
    if (acked) this.o.attempts?.settled(seq, dc);
    if (acked && blobRef !== null) {
      await this.o.blobs
        .delete(blobRef)
        .catch((err) => this.log.warn({ err, seq }, 'blob of an acked event not deleted'));
    }
  }

  private retryLater(t: Tracked, err: unknown): void {
    const dc = t.msg.info.deliveryCount;
    const ceiling = Math.min(NAK_MAX_MS, this.o.nakBaseMs * 2 ** (dc - 1));
    const delay = Math.round(ceiling * (0.8 + Math.random() * 0.2));
    // Block the lane before the nak leaves, so the redelivery finds itself the head.
    this.lanes.block(t.lane, t.msg.seq, Date.now() + delay);
    this.tracked.delete(t.msg.seq);
    t.msg.nak(delay);
    this.log.warn(
      { err, seq: t.msg.seq, installId: t.installId, deliveryCount: dc, retryInMs: delay },
      'ingest delivery failed; retrying',
    );
  }

  private async deadLetter(t: Tracked, error: string): Promise<void> {
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

  /**
   * INTERFACE §9.4: a message this deployment did not seal was published by something
   * that is not one of its nodes (webhook signatures skipped). It is terminated, never
   * stored nor dead-lettered (a replay would launder it), and counted.
   */
  private refuse(t: Tracked): void {
    this.tracked.delete(t.msg.seq);
    this.lanes.unblock(t.lane, t.msg.seq);
    t.msg.term('not sealed by this deployment');
    this.o.onRefused(t.installId);
    this.log.warn(
      { seq: t.msg.seq, subject: t.msg.subject },
      'ingest message without a valid seal refused: something other than this deployment publishes on its subjects',
    );
  }

  /** Confirmed ack; unblocks the lane either way (an unconfirmed ack may replay, which is safe). */
  private async ack(t: Tracked): Promise<boolean> {
    const started = performance.now();
    try {
      await t.msg.ackAck({ timeout: ACK_CONFIRM_TIMEOUT_MS });
      this.counts.lastAckLatencyMs = performance.now() - started;
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
  private handBack(t: Tracked): void {
    this.tracked.delete(t.msg.seq);
    t.msg.nak();
  }

  private keepAlive(): void {
    for (const t of this.tracked.values()) t.msg.working();
    for (const { key, seq } of this.lanes.overdue(Date.now(), this.o.ackWaitMs * 2)) {
      this.log.warn({ seq, lane: key }, 'blocked ingest event never came back; releasing the events behind it');
      this.lanes.unblock(key, seq);
    }
  }
}

/** Install id from `<ns>.ingest.<shard>.<connector>.<install>`; null if malformed. */
function installIdOf(subject: string): string | null {
  const parts = subject.split('.');
  const last = parts[parts.length - 1];
  return parts.length === 5 && last ? untoken(last) : null;
}

/**
 * INTERFACE §9.4: a dead letter keeps the real cause. Kernel and boundary wrappers
 * ("Internal: internal error") say nothing, so the cause chain is followed to what threw.
 */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    if (text !== 'Internal: internal error') parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.length > 0 ? parts.join(' <- caused by ') : 'Internal: internal error';
}
