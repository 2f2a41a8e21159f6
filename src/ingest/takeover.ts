/**
 * A shard's takeover: which events an earlier owner left unsettled, and which of them must
 * hold their install's lane until they come back (ARCHITECTURE.md "Inbound": each install's
 * order holds also across failures).
 *
 * An owner killed with SIGKILL leaves the events it had pulled unacked; the server hands
 * them out again only after the consumer's ack wait, while newer events of the same
 * installs reach the next owner at once. The next owner therefore looks them up before it
 * pulls (`findUnsettled`), and blocks their lanes until they come back (lanes.ts).
 *
 * With work-queue retention the stream holds unacked events only, so every message of the
 * shard's subjects between the consumer's ack floor and its last delivered sequence is one
 * that was delivered and not settled (in someone's hands, or nak'd and due back).
 * `next_by_subj` on STREAM.MSG.GET exists since nats-server 2.9.0. Each comes with its
 * event's key when its `Nats-Msg-Id` shows it (`<install_id>:<event id>`, message.ts).
 *
 * Most unsettled events after a kill -9 were committed already and only their ack died with
 * the node (group commit acks after COMMIT, without waiting for the server's confirmation):
 * the events table holds them, their redelivery inserts nothing (ON CONFLICT), so newer events
 * of their install need not wait ~10 s for them. Only an event that is not stored can be
 * overtaken by a later one, and only those block.
 *
 * The store is asked once, bounded: an answer that does not come, or an error, blocks every
 * unsettled event, as before this lookup existed. An event whose id its message does not
 * show (a digested Nats-Msg-Id, a replayed dead letter) always blocks.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { installIdOfIngestSubject, type Names } from '../runtime/names.js';
import type { StoredEventKey, StoredEventsPort } from '../runtime/ports.js';
import { within } from '../runtime/within.js';
import { laneOf, type InstallLanes } from './lanes.js';
import { eventIdOfMsgId } from './message.js';
import { nextOnSubject } from './stream.js';

/** Far above max_ack_pending; a range this long means something else is wrong. */
const SCAN_LIMIT = 10_000;

/** How long the store may take to answer before the new owner blocks everything instead. */
const STORED_LOOKUP_TIMEOUT_MS = 3_000;

export interface UnsettledEvent {
  seq: number;
  subject: string;
  /** The install of its subject; null when the subject is malformed. */
  installId: string | null;
  /** The upstream event id, from its Nats-Msg-Id; null when that does not show it. */
  eventId: string | null;
}

/** Events of the shard delivered and not settled, in stream order. */
async function findUnsettled(
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

export interface TakeoverDecision {
  /** Not stored, or not known to be: their lanes wait for their redelivery. */
  block: UnsettledEvent[];
  /** Committed already: their redelivery is a no-op, nothing waits for it. */
  stored: UnsettledEvent[];
}

export async function decideTakeover(
  unsettled: readonly UnsettledEvent[],
  port: StoredEventsPort | null,
  log: Logger,
  timeoutMs = STORED_LOOKUP_TIMEOUT_MS,
): Promise<TakeoverDecision> {
  const known = unsettled.filter((u) => u.installId !== null && u.eventId !== null);
  if (port === null || known.length === 0) return { block: [...unsettled], stored: [] };
  const keys: StoredEventKey[] = known.map((u) => ({ installId: u.installId!, id: u.eventId! }));
  let answer: boolean[];
  try {
    answer = await within(port.whichStored(keys), timeoutMs, 'the stored-events lookup');
    if (answer.length !== keys.length) throw new Error(`${answer.length} answers for ${keys.length} events`);
  } catch (err) {
    log.warn(
      { err, unsettled: unsettled.length },
      "could not tell which unsettled ingest events are stored; all of them hold their installs' lanes",
    );
    return { block: [...unsettled], stored: [] };
  }
  const stored = new Set(known.filter((_, i) => answer[i] === true));
  return { block: unsettled.filter((u) => !stored.has(u)), stored: unsettled.filter((u) => stored.has(u)) };
}

/**
 * Block, until it comes back, the lane of every event delivered and not settled that is not
 * in our hands (`held`), not blocked already and not stored: at a takeover (an earlier
 * owner's events) and when deliveries went missing (pull.ts). Returns the counts.
 */
export async function blockUnsettled(o: {
  jsm: JetStreamManager;
  names: Names;
  shard: number;
  log: Logger;
  storedEvents: StoredEventsPort | null;
  lanes: InstallLanes;
  held: (seq: number) => boolean;
  ackWaitMs: number;
}): Promise<{ unsettled: number; stored: number }> {
  const due = Date.now() + o.ackWaitMs;
  const found = await findUnsettled(o.jsm, o.names, o.shard, o.log);
  const missing = found.filter((u) => !o.held(u.seq) && !o.lanes.isHead(laneOf(u.installId, u.seq), u.seq));
  const { block, stored } = await decideTakeover(missing, o.storedEvents, o.log);
  for (const u of block) o.lanes.block(laneOf(u.installId, u.seq), u.seq, due);
  return { unsettled: missing.length, stored: stored.length };
}
