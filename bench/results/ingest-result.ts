/**
 * One line of `bench/results/ingest.jsonl`: one `npm run bench` run, the figures docs/performance.md
 * shows (`npm run docs:figures` renders them). The bench appends a line with `--results FILE`;
 * lines whose `source` is not `bench` were transcribed from an earlier page, with `null` for
 * every figure it did not give.
 */
import { z } from 'zod';
import type { BenchFigures } from '../ingest/report.js';
import type { Machine as BenchMachine } from '../ingest/machine.js';

const n = z.number().nullable();

export const Machine = z
  .object({
    /** What the figures were measured on, as the docs name it (`BENCH_MACHINE`, else CPUs and model). */
    name: z.string().nullable(),
    cpus: n,
    cpu_model: z.string().nullable(),
    memory_gib: n,
    node: z.string().nullable(),
    nats_server: z.string().nullable(),
    postgres: z.string().nullable(),
    load_avg_1m: n,
  })
  .strict();
export type Machine = z.infer<typeof Machine>;

const Commits = z
  .object({
    transactions: z.number(),
    events_per_transaction: z.number(),
    installs_per_transaction: z.number(),
    ms_per_transaction: z.number(),
    in_flight: z.number(),
  })
  .strict()
  .nullable();

const TOPOLOGIES = ['baseline', 'alone', 'edge1', 'edge2', 'split'] as const;

const IngestRow = z
  .object({
    route: z.enum(['github', 'slack']),
    topology: z.enum(TOPOLOGIES),
    installs: z.number().int().positive(),
    load: z.enum(['saturated', 'paced']),
    /** A paced run's percentage of the saturated committed rate; null for a fixed `--rate`. */
    paced_pct: n,
    rate: n,
    accepted_per_s: n,
    ack_p50_ms: n,
    ack_p99_ms: n,
    committed_per_s: n,
    e2c_p50_ms: n,
    e2c_p99_ms: n,
    /** `alone`: the backlog the edge built, which an actors-only node then committed. */
    backlog_events: n,
    /** Peak RSS of each node of the topology, in start order. */
    peak_rss_mib: z.array(z.number()).nullable(),
    /** CPU of the serving nodes per accepted request. */
    cpu_us_per_request: n,
    /** Saturated runs: CPU per committed event, per process (the nodes, nats-server, postgres, bench). */
    cpu_us_per_event: z.record(z.string(), z.number()).nullable(),
    commits: Commits,
    /** `--follow`, paced runs: commit → delivered to one webhook and one SSE client (bench/ingest/follow.ts). */
    follow: z
      .object({
        changes: z.number().int(),
        missing: z.number().int(),
        webhook_p50_ms: n,
        webhook_p99_ms: n,
        sse_p50_ms: n,
        sse_p99_ms: n,
      })
      .strict()
      .optional(),
  })
  .strict();
export type IngestRow = z.infer<typeof IngestRow>;

const IngestDrain = z
  .object({
    installs: z.number().int().positive(),
    events: n,
    /** Characters of text per event; null: the drain's default (about 2.2 KB). */
    text_chars: n,
    committed_per_s: n,
    peak_rss_mib: z.array(z.number()).nullable(),
    cpu_us_per_event: z.record(z.string(), z.number()).nullable(),
    stalled: z
      .object({
        mode: z.enum(['stall', 'cut']),
        for_s: z.number(),
        backlog_at_resume: z.number(),
        recovery_s: z.number(),
        commits: Commits,
      })
      .strict()
      .nullable(),
  })
  .strict();
type IngestDrain = z.infer<typeof IngestDrain>;

export const IngestResult = z
  .object({
    bench: z.literal('ingest'),
    /** Runs of one sitting, shown together (`--session`; default the start's UTC date). */
    session: z.string(),
    started_at: z.iso.datetime(),
    ended_at: z.iso.datetime().nullable(),
    machine: Machine,
    command: z.string(),
    settings: z.object({ duration_s: n, connections: n, shards: n }).strict(),
    note: z.string().nullable(),
    /** `bench`, or where a transcribed line's figures were read. */
    source: z.string(),
    rows: z.array(IngestRow),
    drains: z.array(IngestDrain),
  })
  .strict();
export type IngestResult = z.infer<typeof IngestResult>;

export function machineOf(m: BenchMachine): Machine {
  return {
    name: process.env.BENCH_MACHINE ?? `${m.cpus}-vCPU ${m.cpuModel}`,
    cpus: m.cpus,
    cpu_model: m.cpuModel,
    memory_gib: m.memoryGiB,
    node: m.node.replace(/^v/, ''),
    nats_server: m.natsServer,
    postgres: m.postgres.split(' ')[0] ?? m.postgres,
    load_avg_1m: m.loadAvg1mAtStart,
  };
}

const round = (v: number | null | undefined, digits = 1) =>
  v == null || !Number.isFinite(v) ? null : Math.round(v * 10 ** digits) / 10 ** digits;

/** Node processes named for their role in the topology (`bench-gspliti32-1` → `edge`), the rest as they are. */
function byRole(values: Record<string, number>, roles: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  let i = 0;
  for (const [k, v] of Object.entries(values)) {
    const shared = k === 'nats-server' || k === 'postgres' || k === 'bench';
    out[shared ? k : (roles[i++] ?? k)] = Math.round(v);
  }
  return out;
}

const ROLES: Record<string, { topology: IngestRow['topology']; roles: string[] }> = {
  '1 node': { topology: 'edge1', roles: ['node'] },
  '2 nodes': { topology: 'edge2', roles: ['node 1', 'node 2'] },
  'edge|actors': { topology: 'split', roles: ['edge', 'actors'] },
};

const commitsOf = (c: BenchFigures['topologies'][number]['figures']['paced'][number]['commits']) =>
  c === null
    ? null
    : {
        transactions: c.transactions,
        events_per_transaction: round(c.eventsPerTransaction)!,
        installs_per_transaction: round(c.installsPerTransaction)!,
        ms_per_transaction: round(c.msPerTransaction)!,
        in_flight: round(c.inFlight, 2)!,
      };

/** The run's line: what printFigures shows, in the form the docs are rendered from. */
export function ingestResultOf(
  b: BenchFigures,
  run: {
    session: string;
    startedAt: Date;
    endedAt: Date;
    command: string;
    note: string | null;
    drainText: number | null;
  },
): IngestResult {
  const blank = {
    paced_pct: null,
    rate: null,
    committed_per_s: null,
    e2c_p50_ms: null,
    e2c_p99_ms: null,
    backlog_events: null,
    cpu_us_per_event: null,
    commits: null,
  };
  const rows: IngestRow[] = [];
  for (const x of b.baselines)
    rows.push({
      ...blank,
      route: x.route,
      topology: 'baseline',
      installs: 32,
      load: 'saturated',
      accepted_per_s: round(x.saturated.acceptedPerS, 0),
      ack_p50_ms: round(x.saturated.ackP50Ms),
      ack_p99_ms: round(x.saturated.ackP99Ms),
      peak_rss_mib: [x.peakRssMiB],
      cpu_us_per_request: round(x.saturated.serverCpuUsPerAccepted, 0),
    });
  for (const x of b.alones)
    rows.push({
      ...blank,
      route: x.route,
      topology: 'alone',
      installs: 32,
      load: 'saturated',
      accepted_per_s: round(x.saturated.acceptedPerS, 0),
      ack_p50_ms: round(x.saturated.ackP50Ms),
      ack_p99_ms: round(x.saturated.ackP99Ms),
      committed_per_s: round(x.backlog.committedPerS, 0),
      backlog_events: x.backlog.events,
      peak_rss_mib: Object.values(x.peakRssMiB),
      cpu_us_per_request: round(x.saturated.serverCpuUsPerAccepted, 0),
    });
  for (const t of b.topologies) {
    const { topology, roles } = ROLES[t.label] ?? { topology: 'edge1' as const, roles: [] };
    const [s, rss] = [t.figures.saturated, Object.values(t.figures.peakRssMiB)];
    const common = { route: t.route, topology, installs: t.installs, backlog_events: null, peak_rss_mib: rss };
    rows.push({
      ...common,
      load: 'saturated',
      paced_pct: null,
      rate: null,
      accepted_per_s: round(s.acceptedPerS, 0),
      ack_p50_ms: round(s.ackP50Ms),
      ack_p99_ms: round(s.ackP99Ms),
      committed_per_s: round(s.committedPerS, 0),
      e2c_p50_ms: round(s.e2cP50Ms),
      e2c_p99_ms: round(s.e2cP99Ms),
      cpu_us_per_request: round(s.serverCpuUsPerAccepted, 0),
      cpu_us_per_event: byRole(s.cpuUsPerEvent, roles),
      commits: commitsOf(s.commits),
    });
    for (const p of t.figures.paced)
      rows.push({
        ...common,
        load: 'paced',
        paced_pct: p.pct,
        rate: p.rate,
        accepted_per_s: round(p.acceptedPerS, 0),
        ack_p50_ms: round(p.ackP50Ms),
        ack_p99_ms: round(p.ackP99Ms),
        committed_per_s: round(p.committed / p.durationS, 0),
        e2c_p50_ms: round(p.e2cP50Ms),
        e2c_p99_ms: round(p.e2cP99Ms),
        cpu_us_per_request: round(p.serverCpuUsPerAccepted, 0),
        cpu_us_per_event: null,
        commits: commitsOf(p.commits),
        ...(p.follow
          ? {
              follow: {
                changes: p.follow.changes,
                missing: p.follow.missing,
                webhook_p50_ms: round(p.follow.webhookP50Ms),
                webhook_p99_ms: round(p.follow.webhookP99Ms),
                sse_p50_ms: round(p.follow.sseP50Ms),
                sse_p99_ms: round(p.follow.sseP99Ms),
              },
            }
          : {}),
      });
  }
  const drains: IngestDrain[] = b.drains.map((d) => ({
    installs: d.installs,
    events: d.figures.events,
    text_chars: run.drainText,
    committed_per_s: round(d.figures.committedPerS, 0),
    peak_rss_mib: Object.values(d.figures.peakRssMiB),
    cpu_us_per_event: byRole(d.figures.cpuUsPerEvent, ['node']),
    stalled: d.figures.stalled
      ? {
          mode: d.figures.stalled.mode,
          for_s: d.figures.stalled.forS,
          backlog_at_resume: d.figures.stalled.backlogAtResume,
          recovery_s: round(d.figures.stalled.recoveryS)!,
          commits: commitsOf(d.figures.stalled.commits),
        }
      : null,
  }));
  return IngestResult.parse({
    bench: 'ingest',
    session: run.session,
    started_at: run.startedAt.toISOString(),
    ended_at: run.endedAt.toISOString(),
    machine: machineOf(b.machine),
    command: run.command,
    settings: { duration_s: b.settings.durationS, connections: b.settings.connections, shards: b.settings.shards },
    note: run.note,
    source: 'bench',
    rows,
    drains,
  });
}
