/**
 * Which of the events a lane took go into one delivery (ingest-consumer.ts): each is admitted
 * (ingest-settle.ts: decoded, checked, its blob read) in stream order until one of these ends
 * the batch, and the events after that point go back to the lane's queue for its next batch.
 */
import type { IngestSettler, Ready, Tracked } from './ingest-settle.js';

/** Attempts after which an unsettled event runs alone (a first retry still batches). */
const SUSPECT_AFTER = 2;

export interface AdmittedBatch {
  /** What to deliver, in order (possibly nothing). */
  ready: Ready[];
  /** Not admitted: back to the lane's queue, in order. */
  rest: Tracked[];
}

/**
 * - Full by size: once the events admitted reach `maxBytes` (blobs counted at their size),
 *   the rest waits, not admitted (admitting counts an attempt).
 * - An event to retry (its blob unreadable) blocks its lane: the events after it wait for it.
 * - An event attempted twice and never settled may be what killed its owners: it runs alone,
 *   so a crash loop dead-letters it and not the neighbours of its batch.
 */
export async function admitBatch(
  settler: Pick<IngestSettler, 'admit'>,
  batch: Tracked[],
  maxBytes: number,
): Promise<AdmittedBatch> {
  const ready: Ready[] = [];
  let bytes = 0;
  for (const [i, t] of batch.entries()) {
    if (ready.length > 0 && bytes >= maxBytes) return { ready, rest: batch.slice(i) };
    const r = await settler.admit(t);
    if (r === 'settled') continue;
    if (r === 'retry') return { ready, rest: batch.slice(i + 1) };
    if (r.tries <= SUSPECT_AFTER) {
      ready.push(r);
      bytes += r.bytes;
      continue;
    }
    // A suspect: alone in its own batch, now if it comes first, else next time.
    if (ready.length > 0) return { ready, rest: batch.slice(i) };
    return { ready: [r], rest: batch.slice(i + 1) };
  }
  return { ready, rest: [] };
}
