/**
 * One line of `bench/results/retention.jsonl`: one `npm run bench:retention` run
 * (bench/retention/run.ts), the figures docs/performance.md shows ("Ingest while retention
 * purges", rendered by `npm run docs:figures`).
 */
import { z } from 'zod';
import { Machine } from './ingest-result.js';

const n = z.number().nullable();

export const RetentionRow = z
  .object({
    round: z.number().int().positive(),
    /** `quiet`: nothing purged; `purging`: the housekeeping pass ran throughout. */
    phase: z.enum(['quiet', 'purging']),
    load: z.enum(['saturated', 'paced']),
    rate: n,
    accepted_per_s: n,
    ack_p50_ms: n,
    ack_p99_ms: n,
    committed_per_s: n,
    e2c_p50_ms: n,
    e2c_p99_ms: n,
    /** Purging: expired rows deleted from the load's start to the end of its drain, and per second. */
    purged_rows: n,
    purged_per_s: n,
    /** Purging: expired rows still there at the end (0: the purge ran out of work before the load ended). */
    backlog_left: n,
  })
  .strict();
export type RetentionRow = z.infer<typeof RetentionRow>;

export const RetentionResult = z
  .object({
    bench: z.literal('retention'),
    started_at: z.iso.datetime(),
    ended_at: z.iso.datetime().nullable(),
    machine: Machine,
    command: z.string(),
    note: z.string().nullable(),
    source: z.string(),
    settings: z
      .object({
        expired: z.number().int(),
        rounds: z.number().int(),
        duration_s: z.number(),
        rate: z.number(),
        connections: z.number().int(),
        shards: z.number().int(),
        events_retention_days: z.number().int(),
        batch_size: z.number().int(),
        max_batches: z.number().int(),
        pause_ms: z.number(),
      })
      .strict(),
    rows: z.array(RetentionRow),
  })
  .strict();
export type RetentionResult = z.infer<typeof RetentionResult>;
