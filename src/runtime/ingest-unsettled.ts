/**
 * Events a shard's earlier owner received and never settled (ARCHITECTURE.md "Inbound":
 * each install's order holds also across failures).
 *
 * An owner killed with SIGKILL leaves the events it had pulled unacked; the server hands
 * them out again only after the consumer's ack wait, while newer events of the same
 * installs reach the next owner at once. The next owner therefore looks them up before it
 * pulls, and blocks their lanes until they come back (ingest-lanes.ts).
 *
 * With work-queue retention the stream holds unacked events only, so every message of the
 * shard's subjects between the consumer's ack floor and its last delivered sequence is one
 * that was delivered and not settled (in someone's hands, or nak'd and due back).
 * `next_by_subj` on STREAM.MSG.GET exists since nats-server 2.9.0.
 *
 * Each comes with its event's key when its `Nats-Msg-Id` shows it (`<install_id>:<event
 * id>`, ingest-stream.ts), so the new owner can ask which ones were committed already
 * (ingest-takeover.ts).
 */
import type { JetStreamManager, MsgRequest } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { eventIdOfMsgId } from './ingest-stream.js';
import { installIdOfIngestSubject, type Names } from './names.js';

/** Far above max_ack_pending; a range this long means something else is wrong. */
const SCAN_LIMIT = 10_000;

export interface UnsettledEvent {
  seq: number;
  subject: string;
  /** The install of its subject; null when the subject is malformed. */
  installId: string | null;
  /** The upstream event id, from its Nats-Msg-Id; null when that does not show it. */
  eventId: string | null;
}

export async function findUnsettled(
  jsm: JetStreamManager,
  names: Names,
  shard: number,
  log: Logger,
): Promise<UnsettledEvent[]> {
  const info = await jsm.consumers.info(names.ingestStream, names.ingestConsumer(shard));
  const last = info.delivered.stream_seq;
  const out: UnsettledEvent[] = [];
  for (let seq = info.ack_floor.stream_seq + 1; seq <= last;) {
    if (out.length >= SCAN_LIMIT) {
      log.warn(
        { shard, from: seq, to: last },
        'too many unsettled ingest events to order; the rest keep only their delivery order',
      );
      break;
    }
    const m = await nextOnSubject(jsm, names.ingestStream, names.ingestShardFilter(shard), seq);
    if (m === null || m.seq > last) break;
    const installId = installIdOfIngestSubject(m.subject);
    const eventId = eventIdOfMsgId(installId, m.header?.get('Nats-Msg-Id'));
    out.push({ seq: m.seq, subject: m.subject, installId, eventId });
    seq = m.seq + 1;
  }
  return out;
}

/** The stream's first message at or after `seq` on `subject` (STREAM.MSG.GET `next_by_subj`), or null. */
export function nextOnSubject(jsm: JetStreamManager, stream: string, subject: string, seq: number) {
  // The client types the request without next_by_subj, but sends the query as given.
  const query = { seq, next_by_subj: subject } as unknown as MsgRequest;
  return jsm.streams.getMessage(stream, query);
}
