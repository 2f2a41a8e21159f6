/**
 * The durable inbound path, publisher side (ARCHITECTURE.md "Inbound (nothing lost,
 * nothing twice)", step 1): the edge publishes each verified event to JetStream and answers
 * 2xx only after the stream's ack; a retry of the same event inside the duplicate window is
 * absorbed by `Nats-Msg-Id` (message.ts, stream.ts), and later ones by the events table's
 * unique key in Postgres (transaction.ts).
 */
import type { JetStreamClient } from '@nats-io/jetstream';
import { AppError, Unavailable } from '../errors.js';
import { installKey, shardOf, type Names } from '../runtime/names.js';
import type { BlobPort, IngestEvent } from '../runtime/ports.js';
import type { Seal } from '../runtime/seal.js';
import { withTraceHeaders } from '../telemetry/nats-trace.js';
import { inSpan, SpanKind, tracingOn } from '../telemetry/tracing.js';
import { eventAttributes } from './trace-attributes.js';
import { encodeBlobRef, encodeIngestMessage, ingestMsgId } from './message.js';
import { spending } from '../wait-budget.js';

/** max_payload covers headers and body; leave room for Nats-Msg-Id and framing. */
const HEADROOM_BYTES = 1024;

export class IngestPublisher {
  private readonly js: JetStreamClient;
  private readonly names: Names;
  private readonly shards: number;
  private readonly blobs: BlobPort;
  private readonly maxBody: number;
  /** Resolves in the check phase of the current turn of the event loop (see `publish`). */
  private turn: Promise<void> | null = null;

  /** Publish → stream ack time of each publish, and whether it was acknowledged (metrics). */
  private readonly observe: ((connectorId: string, seconds: number, acked: boolean) => void) | undefined;
  private readonly seal: Seal | null;

  constructor(opts: {
    js: JetStreamClient;
    names: Names;
    shards: number;
    blobs: BlobPort;
    maxPayload: number;
    observe?: (connectorId: string, seconds: number, acked: boolean) => void;
    /** INTERFACE §9.4: seals every message so consumers can tell this deployment's own. */
    seal?: Seal | null;
  }) {
    this.observe = opts.observe;
    this.seal = opts.seal ?? null;
    this.js = opts.js;
    this.names = opts.names;
    this.shards = opts.shards;
    this.blobs = opts.blobs;
    this.maxBody = opts.maxPayload - HEADROOM_BYTES;
  }

  /**
   * Publish one event and wait for the stream's ack. `duplicate: true` means JetStream
   * already holds this event (same install and id within the window): the caller answers
   * 2xx all the same. Throws `Unavailable` (retryable) when the ack does not come.
   *
   * Batching: every publish asked during one turn of the event loop (e.g. the webhooks read
   * from many sockets in one poll phase) is handed to the client together, in the check
   * phase, so they leave in one socket write (nats.js flushes its outbound buffer once per
   * microtask checkpoint). Each still awaits its own ack: nothing is acknowledged upstream
   * before its own message is durable.
   */
  async publish(ev: IngestEvent): Promise<{ seq: number; duplicate: boolean }> {
    if (!tracingOn()) return this.send(ev);
    // INTERFACE §10.7: the message carries this span's trace to the shard consumer.
    return inSpan('ingest.publish', { kind: SpanKind.PRODUCER, attributes: eventAttributes(ev) }, async (span) => {
      const r = await this.send(ev);
      span.setAttributes({ 'ingest.stream_seq': r.seq, 'ingest.duplicate': r.duplicate });
      return r;
    });
  }

  private async send(ev: IngestEvent): Promise<{ seq: number; duplicate: boolean }> {
    const subject = this.names.ingestSubject(
      shardOf(installKey(ev.installId), this.shards),
      ev.connectorId,
      ev.installId,
    );
    let body = encodeIngestMessage(ev);
    let ref: string | null = null;
    if (body.length > this.maxBody) {
      ref = await this.putBlob(body, ev.tenantId);
      body = encodeBlobRef(ref);
    }
    const started = performance.now();
    await this.nextTurn();
    const headers = withTraceHeaders(this.seal?.headers(body));
    let ack;
    try {
      // INTERFACE §9.3: on a request's path the ack is awaited only as long as its budget lasts.
      ack = await spending(
        (timeoutMs) =>
          this.js.publish(subject, body, {
            msgID: ingestMsgId(ev.installId, ev.id),
            ...(headers ? { headers } : {}),
            ...(Number.isFinite(timeoutMs) ? { timeout: timeoutMs } : {}),
          }),
        Infinity,
        'JetStream',
      );
    } catch (err) {
      this.observe?.(ev.connectorId, (performance.now() - started) / 1000, false);
      // The blob stays: the message may have been stored with only its ack lost.
      throw new Unavailable('JetStream did not acknowledge the event; retry', { cause: err });
    }
    this.observe?.(ev.connectorId, (performance.now() - started) / 1000, true);
    if (ack.duplicate && ref !== null) {
      // The stored original carries its own ref (refs are never shared, see BlobPort).
      await this.blobs.delete(ref).catch(() => undefined);
    }
    return { seq: ack.seq, duplicate: ack.duplicate };
  }

  private nextTurn(): Promise<void> {
    return (this.turn ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.turn = null;
        resolve();
      }),
    ));
  }

  private async putBlob(body: Uint8Array, tenantId: string): Promise<string> {
    try {
      return await this.blobs.put(body, tenantId);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new Unavailable('blob store did not take the event payload; retry', { cause: err });
    }
  }
}
