/**
 * One line of `bench/results/chaos.jsonl`: one `npm run chaos` run, the figures docs/chaos.md
 * shows (`npm run docs:figures` renders them). The run appends a line with `--results FILE`;
 * lines whose `source` is not `chaos` were transcribed from an earlier page, with `null` for
 * every figure it did not give.
 */
import { z } from 'zod';
import { Machine } from './ingest-result.js';

const n = z.number().nullable();

const ChaosRow = z
  .object({
    scenario: z.enum(['a', 'b', 'c', 'd', 'e']),
    fault: z.string(),
    sent: n,
    /** 2xx on the first attempt. */
    acknowledged: n,
    stored: n,
    /** Acknowledged and never stored. */
    lost: n,
    duplicated: n,
    /** First attempt failed, stored after a redelivery. */
    recovered_by_reconciliation: n,
    not_recovered: n,
    /** Per node kill; a transcribed line may know only the range. */
    takeover_ms: z.union([z.array(z.number()), z.object({ min: z.number(), max: z.number() }).strict()]).nullable(),
    max_ack_ms: n,
    /** Write-backs (slash replies) GitHub received during the fault, whatever it answered. */
    upstream_writes_during_fault: n,
  })
  .strict();
export type ChaosRow = z.infer<typeof ChaosRow>;

export const ChaosResult = z
  .object({
    bench: z.literal('chaos'),
    started_at: z.iso.datetime(),
    ended_at: z.iso.datetime().nullable(),
    machine: Machine,
    command: z.string(),
    quick: z.boolean(),
    rate: n,
    installs: n,
    slash_every: n,
    /** What each fault did: kills of (a) and (b), seconds of (c), (d) and (e). */
    scale: z.object({ node_kills: n, nats_kills: n, pg_stall_s: n, github_outage_s: n, all_down_s: n }).strict(),
    note: z.string().nullable(),
    /** `chaos`, or where a transcribed line's figures were read. */
    source: z.string(),
    dead_letters: n,
    /** Messages still in the ingest stream that no consumer will deliver again. */
    left_in_stream: n,
    undrained_consumers: z
      .array(z.object({ consumer: z.string(), pending: z.number(), ack_pending: z.number() }).strict())
      .nullable(),
    rows: z.array(ChaosRow),
  })
  .strict();
export type ChaosResult = z.infer<typeof ChaosResult>;
