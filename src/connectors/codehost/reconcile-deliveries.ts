/**
 * One pass of GitHub delivery reconciliation (INTERFACE §9.4; ARCHITECTURE "Inbound" 5).
 * GitHub never retries a failed webhook delivery, so the service goes and gets what it
 * missed: list the App's deliveries newest first back to the checkpoint, and for each one
 * that failed (`status_code` not 2xx) and whose guid was never stored, request a
 * redelivery. Deciding only; the listing, the store and the marker are ports.
 *
 * At most once per failure: a redelivery request first claims a marker keyed by the
 * failed delivery's id (create-if-absent in KV), so overlapping passes, a pass that was
 * cut short and a pass on another node after a shard move never ask twice. A redelivery
 * that fails again is a new delivery with a new id, and is asked for again, at most
 * `MAX_REDELIVERIES` times per guid: a delivery the service keeps failing (a payload it
 * refuses, a fault that lasts) is then left alone, counted and logged, not asked for on
 * every pass for as long as GitHub keeps it.
 */
import type { HookDelivery } from './hook-deliveries.js';

export interface ReconcileCheckpoint {
  /** `delivered_at` and id of the newest delivery a completed pass saw. */
  newestAt: string;
  newestId: number;
}

export interface ReconcilePorts {
  /** Pages of deliveries, newest first. */
  pages: AsyncIterable<HookDelivery[]>;
  /** Which of these guids are stored as an event of some code-host install. */
  storedGuids(guids: string[]): Promise<Set<string>>;
  /** Create-if-absent marker for a delivery id; false when it was claimed before. */
  claim(deliveryId: number): Promise<boolean>;
  /** Drop a claim whose request did not go through, so a later pass asks again. */
  release(deliveryId: number): Promise<void>;
  /** Takes one of the guid's `MAX_REDELIVERIES` requests; false when none is left. */
  takeRequest(guid: string): Promise<boolean>;
  /** Gives back the request of a redelivery that did not get through. */
  returnRequest(guid: string): Promise<void>;
  redeliver(deliveryId: number): Promise<void>;
  now(): number;
}

export interface ReconcileOutcome {
  /** Null while no delivery was ever seen. Unchanged when a request failed (the next pass looks again). */
  checkpoint: ReconcileCheckpoint | null;
  examined: number;
  /** Failed deliveries first seen by this pass whose guid was not stored. */
  foundFailed: number;
  redelivered: number;
  /** Redelivery requests GitHub refused or that did not get through (retried next pass). */
  requestErrors: number;
  /** Guids of failed deliveries left alone: asked for `MAX_REDELIVERIES` times already. */
  givenUp: string[];
}

/** Redelivery requests per delivery guid (each failed redelivery is asked for again, up to this). */
export const MAX_REDELIVERIES = 5;

/**
 * GitHub lists a delivery once it finished, and a slow one (up to its 10 s timeout) may be
 * listed after a newer one: every pass looks this far behind its checkpoint again (the
 * claim markers live 10 minutes, longer than this, so nothing is asked twice).
 */
export const OVERLAP_MS = 60_000;
/** Without a checkpoint (first pass of a deployment), how far back to look. */
export const FIRST_LOOKBACK_MS = 60 * 60_000;

const ok = (d: HookDelivery) => d.status_code >= 200 && d.status_code < 300;

export async function reconcileDeliveries(
  ports: ReconcilePorts,
  checkpoint: ReconcileCheckpoint | null,
): Promise<ReconcileOutcome> {
  const floor = checkpoint ? Date.parse(checkpoint.newestAt) - OVERLAP_MS : ports.now() - FIRST_LOOKBACK_MS;
  const seen: HookDelivery[] = [];
  outer: for await (const page of ports.pages) {
    for (const d of page) {
      if (Date.parse(d.delivered_at) < floor) break outer;
      seen.push(d);
    }
  }

  // A guid delivered with 2xx at any attempt reached the edge, which stored or dropped it as it should.
  const delivered = new Set(seen.filter(ok).map((d) => d.guid));
  const failedByGuid = new Map<string, HookDelivery>();
  for (const d of seen) {
    if (!ok(d) && !delivered.has(d.guid) && !failedByGuid.has(d.guid)) failedByGuid.set(d.guid, d);
  }
  const stored = failedByGuid.size > 0 ? await ports.storedGuids([...failedByGuid.keys()]) : new Set<string>();

  let foundFailed = 0;
  let redelivered = 0;
  let requestErrors = 0;
  const givenUp: string[] = [];
  for (const [guid, d] of failedByGuid) {
    if (stored.has(guid)) continue;
    if (checkpoint === null || d.id > checkpoint.newestId) foundFailed++;
    if (!(await ports.claim(d.id))) continue;
    // The claim stays: this failed attempt is judged once, given up or asked for.
    if (!(await ports.takeRequest(guid))) {
      givenUp.push(guid);
      continue;
    }
    try {
      await ports.redeliver(d.id);
      redelivered++;
    } catch {
      requestErrors++;
      await ports.returnRequest(guid).catch(() => undefined);
      await ports.release(d.id).catch(() => undefined);
    }
  }

  const newest = seen[0];
  const next =
    requestErrors > 0 || newest === undefined ? checkpoint : { newestAt: newest.delivered_at, newestId: newest.id };
  return { checkpoint: next, examined: seen.length, foundFailed, redelivered, requestErrors, givenUp };
}
