/**
 * What the failover test watches from the outside, without touching the nodes: the shard
 * lease bucket (who holds which shard, and when a dead node's shards were re-created by a
 * survivor) and each node's /metrics (delivery counters, which die with a killed process,
 * so the last scrape of every incarnation is kept).
 */
import { Kvm } from '@nats-io/kv';
import { jetstream, jetstreamManager, type MsgRequest } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Names } from '../../src/runtime/names.js';
import { until } from './until.js';

export interface LeaseWrite {
  shard: number;
  /** Holder named in the lease value; null for a delete. */
  node: string | null;
  /** Server time of the write (epoch ms). */
  at: number;
}

/** Every write to the lease bucket since `start`, in order. */
export class LeaseWatcher {
  readonly writes: LeaseWrite[] = [];
  private readonly current = new Map<number, string | null>();
  private stopFn: (() => void) | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly names: Names,
  ) {}

  async start(): Promise<void> {
    const kv = await new Kvm(jetstream(this.nc)).open(this.names.leaseBucket);
    const it = await kv.watch();
    this.stopFn = () => it.stop();
    void (async () => {
      for await (const e of it) {
        const shard = Number(e.key.replace(/^shard\./, ''));
        if (!Number.isInteger(shard)) continue;
        let node: string | null = null;
        if (e.operation === 'PUT') node = (JSON.parse(e.string()) as { node: string }).node;
        this.current.set(shard, node);
        this.writes.push({ shard, node, at: e.created.getTime() });
      }
    })();
  }

  stop(): void {
    this.stopFn?.();
  }

  /** Shards whose latest lease write names `node` (a lease that expired still counts). */
  heldBy(node: string): number[] {
    return [...this.current]
      .filter(([, n]) => n === node)
      .map(([s]) => s)
      .sort((a, b) => a - b);
  }

  /** node → number of shards it holds now. */
  distribution(): Map<string, number> {
    const d = new Map<string, number>();
    for (const n of this.current.values()) if (n !== null) d.set(n, (d.get(n) ?? 0) + 1);
    return d;
  }

  /**
   * After `sinceMs`, when each of `shards` was first written by a node other than `dead`;
   * null for a shard not taken over yet.
   */
  takenOver(shards: number[], dead: string, sinceMs: number): Map<number, number | null> {
    const out = new Map<number, number | null>(shards.map((s) => [s, null]));
    for (const w of this.writes) {
      if (w.at < sinceMs || !out.has(w.shard) || out.get(w.shard) !== null) continue;
      if (w.node !== null && w.node !== dead) out.set(w.shard, w.at);
    }
    return out;
  }
}

/**
 * Poll a node's `connector_service_ingest_in_flight` until it holds events (so a kill lands while it
 * has events in hand); returns the last value seen, 0 when it never held any in time.
 */
export async function waitForEventsInHand(url: string, timeoutMs: number): Promise<number> {
  let last = 0;
  // A chance, not a condition: the kill goes ahead (and says so in its figures) when none came.
  await until(
    'the node holding ingest events',
    async () => {
      const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => r.text(),
        () => '',
      );
      const m = /^connector_service_ingest_in_flight ([0-9.eE+-]+)$/m.exec(text);
      last = m ? Number(m[1]) : 0;
      return last > 0;
    },
    { timeoutMs },
  ).catch(() => undefined);
  return last;
}

/** Counters read from one node's /metrics; a sample per scrape, the last one kept. */
export interface NodeCounters {
  delivered: number;
  redeliveries: number;
  deadLetters: number;
}

const COUNTERS: Record<keyof NodeCounters, string> = {
  delivered: 'connector_service_ingest_delivered_total',
  redeliveries: 'connector_service_ingest_redeliveries_total',
  deadLetters: 'connector_service_ingest_dead_letters_total',
};

function parseCounters(text: string): NodeCounters {
  const read = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  return {
    delivered: read(COUNTERS.delivered),
    redeliveries: read(COUNTERS.redeliveries),
    deadLetters: read(COUNTERS.deadLetters),
  };
}

/**
 * Scrapes each registered incarnation (one per process start) every `everyMs`. A killed
 * node's counters are its last scrape: a lower bound of what it really did.
 */
export class MetricsScraper {
  private readonly last = new Map<string, NodeCounters>();
  private readonly targets = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly everyMs = 250) {}

  /** `incarnation` must be unique per process (e.g. node id + pid). */
  add(incarnation: string, url: string): void {
    this.targets.set(incarnation, url);
  }

  /** Scrape `incarnation` one last time (before a graceful stop) and stop scraping it. */
  async retire(incarnation: string): Promise<void> {
    await this.scrape(incarnation);
    this.targets.delete(incarnation);
  }

  /** A dead process: stop scraping, keep its last sample. */
  forget(incarnation: string): void {
    this.targets.delete(incarnation);
  }

  start(): void {
    this.timer = setInterval(() => {
      for (const id of this.targets.keys()) void this.scrape(id);
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.targets.keys()].map((id) => this.scrape(id)));
  }

  totals(): NodeCounters {
    const t: NodeCounters = { delivered: 0, redeliveries: 0, deadLetters: 0 };
    for (const c of this.last.values()) {
      t.delivered += c.delivered;
      t.redeliveries += c.redeliveries;
      t.deadLetters += c.deadLetters;
    }
    return t;
  }

  private async scrape(id: string): Promise<void> {
    const url = this.targets.get(id);
    if (!url) return;
    const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => (r.ok ? r.text() : null),
      () => null,
    );
    // Only while the same process is still the target (a restart reuses the port).
    if (text !== null && this.targets.get(id) === url) this.last.set(id, parseCounters(text));
  }
}

/**
 * For a failure report: the shard consumer's state and the first events of one install
 * still in the stream (with work-queue retention, exactly its unacknowledged ones).
 */
export async function describeBacklog(
  nc: NatsConnection,
  names: Names,
  shard: number,
  installSubject: string,
): Promise<string> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.consumers
    .info(names.ingestStream, names.ingestConsumer(shard))
    .catch((err: Error) => err.message);
  const held: number[] = [];
  for (let seq = 1; held.length < 5;) {
    const query = { seq, next_by_subj: installSubject } as unknown as MsgRequest;
    const m = await jsm.streams.getMessage(names.ingestStream, query).catch(() => null);
    if (!m) break;
    held.push(m.seq);
    seq = m.seq + 1;
  }
  const state =
    typeof info === 'string'
      ? info
      : JSON.stringify({
          num_pending: info.num_pending,
          num_ack_pending: info.num_ack_pending,
          num_redelivered: info.num_redelivered,
          num_waiting: info.num_waiting,
          ack_floor: info.ack_floor.stream_seq,
          delivered: info.delivered.stream_seq,
        });
  return `shard ${shard} consumer ${state}; first seqs still in the stream for ${installSubject}: ${held.join(', ')}`;
}
