/**
 * Ingest messages the server stopped delivering (issue 32 item 2): the shard consumer has a
 * finite `max_deliver` (stream.ts SERVER_MAX_DELIVER). A message past it is never delivered
 * again and stays in the stream, unacked; the server raises a MAX_DELIVERIES advisory, which
 * the stream `<ns>_INGEST_MAXED` keeps (a plain subscription would miss those raised while
 * the shard has no owner). The shard's owner reads its consumer's advisories here and, for
 * each, reads the message by sequence and
 *
 * - dead-letters it with its cause when it carries this deployment's seal: whole, so it is
 *   replayable (INTERFACE §9.1), and once (store/dead-letters.ts), then deletes it from the
 *   stream;
 * - deletes it, refused and counted (refusals.ts), when it does not: a forged message is
 *   never dead-lettered, a replay would launder it;
 * - finds nothing when the message is gone already (a late ack, an earlier run of this).
 *
 * The advisory is acked only after that; one that fails (Postgres away) comes back after a
 * growing delay, for as long as it takes. Its sweep (sweep.ts) deletes nothing while the
 * shard has advisories waiting here, since such a message lies below the consumer's ack floor
 * without having been acked.
 *
 * What an advisory cannot tell is the last error: the consumer logs each failed attempt
 * (settle.ts), and the dead letter names the deliveries and what ends in this path.
 */
import type { Consumer, ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { JetStreamApiError } from '@nats-io/jetstream';
import { backoffMs } from '../backoff.js';
import type { Logger } from '../log.js';
import { installIdOfIngestSubject, type Names } from '../runtime/names.js';
import type { DeadLetterPort } from '../runtime/ports.js';
import { SEAL_HEADER, type Seal } from '../runtime/seal.js';
import type { RefusalLog } from './refusals.js';

export interface MaxedDeadLettererOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  shard: number;
  log: Logger;
  deadLetters: DeadLetterPort;
  seal: Seal | null;
  refusals: RefusalLog;
  /** A message dead-lettered here, for metrics. */
  onDeadLettered?: () => void;
}

/** Waits between failed attempts at one advisory, and between failed starts of the reader. */
const RETRY = { firstMs: 1_000, capMs: 60_000 };
/** How long a pull for advisories lasts; an idle shard costs one request this often. */
const EXPIRES_MS = 30_000;

export class MaxedDeadLetterer {
  private messages: ConsumerMessages | null = null;
  private stopping = false;
  private run: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;

  constructor(private readonly o: MaxedDeadLettererOptions) {}

  /** Reads the shard's advisories until `stop`; failures are logged and retried. */
  start(): void {
    this.run = this.loop();
  }

  /** Stops reading; the advisory under way is finished or left to come back. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.messages?.close();
    await this.run;
  }

  private async loop(): Promise<void> {
    const { js, names, shard, log } = this.o;
    for (let failures = 0; !this.stopping;) {
      try {
        const consumer: Consumer = await js.consumers.get(names.ingestMaxedStream, names.ingestMaxedConsumer(shard));
        this.messages = await consumer.consume({ max_messages: 16, expires: EXPIRES_MS });
        if (this.stopping) await this.messages.close();
        for await (const m of this.messages) {
          failures = 0;
          await this.handle(m);
        }
      } catch (err) {
        failures++;
        if (!this.stopping) log.warn({ err, failures }, 'reading max-deliveries advisories failed; retrying');
      } finally {
        this.messages = null;
      }
      if (!this.stopping) await this.pause(backoffMs(RETRY, Math.max(1, failures)));
    }
  }

  /** Dead-letter (or drop, if forged) the message one advisory names; then ack the advisory. */
  async handle(m: JsMsg): Promise<void> {
    const { jsm, names, log } = this.o;
    const advisory = parseAdvisory(m.data);
    if (advisory === null || advisory.stream !== names.ingestStream) {
      log.warn({ subject: m.subject }, 'max-deliveries advisory not understood; dropped');
      m.term();
      return;
    }
    const { seq, deliveries } = advisory;
    try {
      const msg = await jsm.streams.getMessage(names.ingestStream, { seq });
      if (msg !== null) {
        if (this.o.seal && !this.o.seal.verify(msg.data, msg.header?.get(SEAL_HEADER))) {
          this.o.refusals.refused(msg.subject);
        } else {
          const installId = installIdOfIngestSubject(msg.subject);
          const error =
            `delivered ${deliveries} times and never settled (the ingest consumer's max_deliver): ` +
            'each delivery was handed back at a shard move, timed out, or took its owner down before it ' +
            'was counted; replay it once the cause is fixed';
          await this.o.deadLetters.record({
            stream: names.ingestStream,
            streamSeq: seq,
            subject: msg.subject,
            msgId: msg.header?.get('Nats-Msg-Id') || null,
            installId,
            deliveries,
            error,
            payload: msg.data,
          });
          this.o.onDeadLettered?.();
          log.error({ seq, installId, deliveries }, 'ingest event dead-lettered; replay it from the dead-letter store');
        }
        await deleteQuietly(jsm, names.ingestStream, seq);
      }
      m.ack();
    } catch (err) {
      const delay = backoffMs(RETRY, m.info.deliveryCount);
      log.warn({ err, seq, retryInMs: delay }, 'ingest message past max_deliver not dead-lettered yet; retrying');
      m.nak(delay);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** `{stream, stream_seq, deliveries}` of an `io.nats.jetstream.advisory.v1.max_deliver` advisory, or null. */
function parseAdvisory(data: Uint8Array): { stream: string; seq: number; deliveries: number } | null {
  try {
    const a = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>;
    const seq = a.stream_seq;
    if (a.type !== 'io.nats.jetstream.advisory.v1.max_deliver' || typeof a.stream !== 'string') return null;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq <= 0) return null;
    const deliveries = typeof a.deliveries === 'number' ? a.deliveries : 0;
    return { stream: a.stream, seq, deliveries };
  } catch {
    return null;
  }
}

/** Delete one message; the server's refusal (gone meanwhile) is no failure, as in sweep.ts. */
async function deleteQuietly(jsm: JetStreamManager, stream: string, seq: number): Promise<void> {
  try {
    await jsm.streams.deleteMessage(stream, seq, false);
  } catch (err) {
    if (!(err instanceof JetStreamApiError)) throw err;
  }
}
