/**
 * One housekeeping pass (INTERFACE §10.5): every retention applied in bounded batches, each
 * batch a statement (or a transaction) of its own that deletes at most `batchSize` rows
 * (src/store/retention.ts), with a pause between batches so the commits of ingest always find
 * the database free. A pass deletes at most `maxBatches` batches per retention and leaves the
 * rest to the next pass, so a large backlog (a first pass over years of events) is worked
 * off over several periods, never in one long burst. Times come from `now` (a test's clock).
 * The housekeeping actor (src/actors/housekeeping.ts) runs it as its `pass`
 * (src/wiring/housekeeping.ts); it sits in the graph layer because an expired install's
 * nodes go through the graph (delete-nodes.ts: each deletion is a change of the feed).
 */
import type pg from 'pg';
import {
  expiredUninstalls,
  oldestKept,
  pruneBlobsBefore,
  pruneDeadLetters,
  pruneEvents,
  pruneFinishedEffects,
  pruneIdempotencyKeys,
  pruneInstallRows,
} from '../store/retention.js';
import { IDEMPOTENCY_TTL_HOURS } from '../store/idempotency-keys.js';
import { deleteNodesBatch } from './delete-nodes.js';

const DAY_MS = 86_400_000;

/** Rows a pass deleted, by table (a table with none is absent): the actor's `PassOutcome`. */
type DeletedRows = Record<string, number>;

/** What a pass deletes and when (config.ts `retention`). */
interface RetentionPolicy {
  /** SERVICE_EVENTS_RETENTION_DAYS: stored events, finished effects, dead letters. */
  eventsDays: number;
  /** SERVICE_UNINSTALLED_RETENTION_DAYS: an uninstalled install's events, graph, effects. */
  uninstalledDays: number;
}

/** A table pruned by the bounded functions of other modules (the change log's, say). */
interface ExtraPrune {
  table: string;
  prune(now: Date, limit: number): Promise<number>;
}

export interface PassPorts {
  pool: pg.Pool;
  policy: RetentionPolicy;
  now(): number;
  /** Rows per batch. Default 1 000. */
  batchSize?: number;
  /** Batches per retention and pass. Default 100. */
  maxBatches?: number;
  /** Between two batches. Default 20 ms. */
  pause?(): Promise<void>;
  extra?: readonly ExtraPrune[];
  signal?: AbortSignal;
}

/** Rows per batch, batches per retention and pass, and the pause between batches (bench/retention reads them). */
export const PASS_DEFAULTS = { batch_size: 1_000, max_batches: 100, pause_ms: 20 } as const;
const DEFAULT_BATCH_SIZE = PASS_DEFAULTS.batch_size;
const DEFAULT_MAX_BATCHES = PASS_DEFAULTS.max_batches;
/** Dead letters' blobs are stored before them, by at most the consumer's redeliveries (hours). */
const BLOB_MARGIN_MS = DAY_MS;

const defaultPause = () => new Promise<void>((resolve) => setTimeout(resolve, PASS_DEFAULTS.pause_ms));

export async function housekeepingPass(ports: PassPorts): Promise<DeletedRows> {
  const limit = ports.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxBatches = ports.maxBatches ?? DEFAULT_MAX_BATCHES;
  const pause = ports.pause ?? defaultPause;
  const now = ports.now();
  const before = (ms: number) => new Date(now - ms);
  const eventsCutoff = before(ports.policy.eventsDays * DAY_MS);
  const out: DeletedRows = {};
  const add = (table: string, n: number) => {
    if (n > 0) out[table] = (out[table] ?? 0) + n;
  };

  /** Batches of one retention until one comes back short or the pass's share is spent. */
  const drain = async (table: string, batch: () => Promise<number>) => {
    for (let i = 0; i < maxBatches; i++) {
      ports.signal?.throwIfAborted();
      const n = await batch();
      add(table, n);
      if (n < limit) return;
      await pause();
    }
  };

  const { pool } = ports;
  await drain('events', () => pruneEvents(pool, eventsCutoff, limit));
  await drain('effects', () => pruneFinishedEffects(pool, eventsCutoff, limit));
  await drain('dead_letters', () => pruneDeadLetters(pool, eventsCutoff, limit));
  await drain('ingest_blobs', () =>
    pruneBlobsBefore(pool, before(ports.policy.eventsDays * DAY_MS + BLOB_MARGIN_MS), limit),
  );
  await drain('idempotency_keys', () => pruneIdempotencyKeys(pool, before(IDEMPOTENCY_TTL_HOURS * 3_600_000), limit));
  for (const x of ports.extra ?? []) await drain(x.table, () => x.prune(new Date(now), limit));

  const expired = await expiredUninstalls(pool, before(ports.policy.uninstalledDays * DAY_MS));
  let batches = 0;
  for (const install of expired) {
    for (;;) {
      ports.signal?.throwIfAborted();
      if (batches++ >= maxBatches) return out;
      const rows = await pruneInstallRows(pool, install.install_id, limit);
      const entries = Object.entries(rows);
      if (entries.length === 0) {
        const graph = await deleteNodesBatch(
          pool,
          { tenantId: install.tenant_id, installId: install.install_id },
          limit,
        );
        if (graph.graph_nodes === 0) break;
        add('graph_nodes', graph.graph_nodes);
        add('graph_edges', graph.graph_edges);
      }
      for (const [table, n] of entries) add(table, n ?? 0);
      await pause();
    }
  }
  return out;
}

/** Seconds since the oldest row each retention keeps (a gauge per table; absent: none kept). */
export async function oldestAges(pool: pg.Pool, now: number): Promise<Record<string, number>> {
  const oldest = await oldestKept(pool);
  const out: Record<string, number> = {};
  for (const [table, at] of Object.entries(oldest)) {
    if (at !== null) out[table] = Math.max(0, (now - at.getTime()) / 1000);
  }
  return out;
}
