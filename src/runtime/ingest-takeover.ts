/**
 * Which of a dead owner's unsettled events must hold their install's lane at takeover
 * (ARCHITECTURE.md "Inbound": each install's order holds also across failures).
 *
 * An unsettled event (ingest-unsettled.ts) comes back only after the ack wait. Most of
 * them after a kill -9 were committed already and only their ack died with the node (group
 * commit acks after COMMIT, without waiting for the server's confirmation): the events table
 * holds them, their redelivery inserts nothing (ON CONFLICT, install actor), so newer events
 * of their install need not wait ~10 s for them. Only an event that is not stored can be
 * overtaken by a later one, and only those block.
 *
 * The store is asked once, bounded: an answer that does not come, or an error, blocks every
 * unsettled event, as before this lookup existed. An event whose id its message does not
 * show (a digested Nats-Msg-Id, a replayed dead letter) always blocks.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { laneOf, type InstallLanes } from './ingest-lanes.js';
import { findUnsettled, type UnsettledEvent } from './ingest-unsettled.js';
import type { Names } from './names.js';
import type { StoredEventKey, StoredEventsPort } from './ports.js';
import { within } from './within.js';

/** How long the store may take to answer before the new owner blocks everything instead. */
export const STORED_LOOKUP_TIMEOUT_MS = 3_000;

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
 * owner's events) and when deliveries went missing (ingest-pull.ts). Returns the counts.
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
