/**
 * The durable inbound path, publisher side (ARCHITECTURE.md "Inbound (nothing lost,
 * nothing twice)", step 1): the edge publishes each verified event to JetStream and answers
 * 2xx only after the stream's ack; a retry of the same event inside the duplicate window is
 * absorbed by `Nats-Msg-Id`, and later ones by the install actor's unique key in Postgres.
 */
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { AppError, Internal, Unavailable } from '../errors.js';
import { encodeBlobRef, encodeEvent } from './ingest-envelope.js';
import { digest, installKey, natsDescription, shardOf, type Names } from './names.js';
import { alignStream, explainReplicaRefusal } from './nats.js';
import type { BlobPort, IngestEvent } from './ports.js';
import type { Seal } from './seal.js';

/**
 * A webhook retry inside this window is a JetStream duplicate, never a second event. Slack
 * retries an unanswered event three times over about 5 minutes (issue 12, item 2), and the
 * chat edge keeps no dedup key of its own: 6 minutes covers the whole schedule. Past it, the
 * events table's `(install_id, id)` key absorbs the retry.
 */
export const DUPLICATE_WINDOW_MS = 6 * 60_000;
/** Msg ids longer than this are digested: they are kept in server memory per window. */
const MAX_MSG_ID = 200;
/** max_payload covers headers and body; leave room for Nats-Msg-Id and framing. */
const HEADROOM_BYTES = 1024;

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
 */
export async function ensureIngestStream(
  jsm: JetStreamManager,
  names: Names,
  limits: IngestStreamLimits = {},
): Promise<void> {
  const replicas = limits.replicas ?? 1;
  const tunable = {
    max_bytes: limits.maxBytes ?? DEFAULT_MAX_BYTES,
    discard: DiscardPolicy.New,
    // In `tunable` so an existing stream made with a shorter window is brought to this one.
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    description: natsDescription(names.ns, names.ingestStream),
  };
  const cfg: Partial<StreamConfig> & { name: string } = {
    ...tunable,
    name: names.ingestStream,
    subjects: [names.ingestSubjects],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    num_replicas: replicas,
  };
  const existing = await streamInfo(jsm, names.ingestStream);
  if (existing === null) {
    try {
      await jsm.streams.add(cfg);
      return;
    } catch (err) {
      // Another node created it between our info and add; fall through and check it.
      if ((await streamInfo(jsm, names.ingestStream)) === null) {
        throw explainReplicaRefusal(err, `stream ${names.ingestStream}`, replicas);
      }
      return ensureIngestStream(jsm, names, limits);
    }
  }
  if (existing.retention !== RetentionPolicy.Workqueue) {
    // Retention cannot be changed in place; an operator must delete or rename the stream.
    throw new Internal(
      `stream ${names.ingestStream} exists with ${existing.retention} retention; it must be workqueue`,
    );
  }
  await alignStream(jsm, names.ingestStream, {
    replicas,
    what: `stream ${names.ingestStream}`,
    extra: tunable,
  });
}

async function streamInfo(jsm: JetStreamManager, name: string): Promise<StreamConfig | null> {
  try {
    return (await jsm.streams.info(name)).config;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null;
    throw err;
  }
}

const PAYLOAD_KEY = Buffer.from(',"payload":');
const CLOSE = Buffer.from('}}');

/**
 * The message body: `encodeEvent`'s envelope. With `payloadJson`, the payload's text is
 * spliced in as received (`{"type":"event","event":{…,"payload":<text>}}`), which the
 * consumer decodes to the same event, at the cost of one copy instead of a re-encoding.
 */
export function encodeIngestMessage(ev: IngestEvent): Uint8Array {
  if (ev.payloadJson === undefined) return encodeEvent(ev);
  const { payloadJson, payload: _parsed, ...rest } = ev;
  // `rest` always has fields, so its envelope ends in `}}`: the payload goes before them.
  const head = JSON.stringify({ type: 'event', event: rest });
  return Buffer.concat([Buffer.from(head.slice(0, -2)), PAYLOAD_KEY, payloadJson, CLOSE]);
}

/** `Nats-Msg-Id` of an event: `<install_id>:<event id>`, digested when long. */
export function ingestMsgId(installId: string, id: string): string {
  const raw = `${installId}:${id}`;
  // A digest contains no ':', so it can never equal the raw form of another event.
  return raw.length > MAX_MSG_ID ? digest(raw) : raw;
}

/**
 * The event id in `Nats-Msg-Id` `<install_id>:<event id>` (ingestMsgId, above). A digested id
 * has no ':' and a replayed dead letter's (`replay:...`) names no install: both give null.
 */
export function eventIdOfMsgId(installId: string | null, msgId: string | null | undefined): string | null {
  if (installId === null || !msgId) return null;
  const prefix = `${installId}:`;
  return msgId.startsWith(prefix) && msgId.length > prefix.length ? msgId.slice(prefix.length) : null;
}

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
    let ack;
    try {
      ack = await this.js.publish(subject, body, {
        msgID: ingestMsgId(ev.installId, ev.id),
        ...(this.seal ? { headers: this.seal.headers(body) } : {}),
      });
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
