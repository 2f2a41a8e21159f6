/**
 * How many times an ingest event was really attempted, across shard owners (INTERFACE §9:
 * only an event that cannot be stored goes to dead letters).
 *
 * The server's delivery count is not that number: every graceful shard move hands the
 * events queued behind the running one back (nak), every kill -9 leaves its held events to
 * come back after the ack wait, and both count as deliveries. Under sustained load with
 * many moves (the chaos suite's node kills and rebalances) a backlog event then reached
 * `maxDeliver` without ever being tried and was dead-lettered unstored. The consumer still
 * needs a count that survives owners, so that an event crashing its owner every time is
 * dead-lettered in the end: attempts of redelivered events are recorded here before they
 * run. A first delivery is not recorded (the hot path pays nothing) and is counted as one
 * attempt whether it ran or not, which errs towards dead-lettering a crash loop sooner.
 *
 * Records live in the dedup KV bucket (TTL 10 minutes, renewed by every attempt; retries
 * of a failing event are at most 60 s apart plus the ack wait).
 */
import type { KvPort } from '../runtime/ports.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
/** Compare-and-set rounds before giving up; two owners never run one event at once. */
const CAS_ROUNDS = 5;

export interface IngestAttemptsPort {
  /** Record one more attempt of the event at `streamSeq`; returns the attempts so far, this one included. */
  begin(streamSeq: number, deliveryCount: number): Promise<number>;
  /** The event settled: its record is no longer needed (best effort, it expires anyway). */
  settled(streamSeq: number, deliveryCount: number): void;
}

export function ingestAttempts(kv: KvPort, stream: string): IngestAttemptsPort {
  const key = (seq: number) => `ingest-attempts.${stream}.${seq}`;
  return {
    async begin(seq, dc) {
      if (dc <= 1) return 1;
      for (let round = 0; round < CAS_ROUNDS; round++) {
        const cur = await kv.get(key(seq));
        if (cur === null) {
          // The first delivery counts as one attempt, this one as the second.
          if ((await kv.create(key(seq), enc.encode('2'))) !== null) return 2;
          continue;
        }
        const next = (Number(dec.decode(cur.value)) || 1) + 1;
        if ((await kv.update(key(seq), enc.encode(String(next)), cur.revision)) !== null) return next;
      }
      throw new Error(`ingest attempt record of ${seq} kept changing under us`);
    },
    settled(seq, dc) {
      if (dc > 1) void kv.delete(key(seq)).catch(() => undefined);
    },
  };
}
