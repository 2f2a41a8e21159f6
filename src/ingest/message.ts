/**
 * An ingest message on the wire: its body holds the event itself, or a ref to a blob
 * holding the encoded event when it would not fit under the server's max_payload; its
 * `Nats-Msg-Id` names the install and the event, so the stream absorbs a retry.
 */
import { digest } from '../runtime/names.js';
import type { BlobPort, IngestEvent } from '../runtime/ports.js';

export type IngestEnvelope = { type: 'event'; event: IngestEvent } | { type: 'blob-ref'; ref: string };

/** A body that is not an envelope: such a message is dead-lettered, never retried. */
export class UndecodableMessage extends Error {
  override readonly name = 'UndecodableMessage';
}

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeEvent(event: IngestEvent): Uint8Array {
  return enc.encode(JSON.stringify({ type: 'event', event } satisfies IngestEnvelope));
}

export function encodeBlobRef(ref: string): Uint8Array {
  return enc.encode(JSON.stringify({ type: 'blob-ref', ref } satisfies IngestEnvelope));
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

export function decodeEnvelope(data: Uint8Array): IngestEnvelope {
  let v: unknown;
  try {
    v = JSON.parse(dec.decode(data));
  } catch (err) {
    throw new UndecodableMessage('ingest message is not UTF-8 JSON', { cause: err });
  }
  const o = v as Record<string, unknown> | null;
  if (o?.type === 'blob-ref' && typeof o.ref === 'string') return { type: 'blob-ref', ref: o.ref };
  if (o?.type === 'event' && isEvent(o.event)) return { type: 'event', event: o.event };
  throw new UndecodableMessage('ingest message is not an event envelope');
}

/**
 * The event an envelope stands for, fetching its blob when it has one (`blobBytes`: the
 * blob's size). A missing blob is undecodable (dead letter); a blob store that throws is
 * transient (the caller retries).
 */
export async function resolveEnvelope(
  env: IngestEnvelope,
  blobs: BlobPort,
): Promise<{ event: IngestEvent; blobRef: string | null; blobBytes: number | null }> {
  if (env.type === 'event') return { event: env.event, blobRef: null, blobBytes: null };
  const data = await blobs.get(env.ref);
  if (data === null) throw new UndecodableMessage(`blob ${env.ref} is missing`);
  const inner = decodeEnvelope(data);
  if (inner.type !== 'event') throw new UndecodableMessage(`blob ${env.ref} does not hold an event`);
  return { event: inner.event, blobRef: env.ref, blobBytes: data.length };
}

/** Msg ids longer than this are digested: they are kept in server memory per window. */
const MAX_MSG_ID = 200;

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

function isEvent(v: unknown): v is IngestEvent {
  const e = v as Record<string, unknown> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.installId === 'string' &&
    typeof e.tenantId === 'string' &&
    typeof e.connectorId === 'string' &&
    typeof e.id === 'string' &&
    typeof e.kind === 'string' &&
    (e.occurredAt === null || typeof e.occurredAt === 'string') &&
    'payload' in e
  );
}
