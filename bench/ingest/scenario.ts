/**
 * One measured topology. The edge runs: a short warm-up, a closed loop (accepted events/s
 * and acknowledgement latency at saturation, then every accepted event is waited for in
 * Postgres: the committed events/s the consumers sustain), then a paced run at half of
 * what both sides sustain (acknowledgement and event-to-committed latency below
 * saturation). The baseline has no consumer, so it runs the closed loop only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { commitStats, type CommitStats } from './bench-db.js';
import { runLoad, type LoadOptions, type LoadResult } from './load.js';
import { cpuMs, peakRssMiB, type Child } from './processes.js';
import { systemCpu, systemCpuUsed } from './system-cpu.js';

export const WEBHOOK_PATH = '/api/v1/connectors/codehost/webhooks';

export interface ScenarioSettings {
  secret: string;
  installationIds: number[];
  connections: number;
  durationS: number;
  /** Longest wait for a run's accepted events to be committed. */
  drainTimeoutS: number;
  /** The paced run's rate; default half of what both sides sustain (to compare versions at one rate). */
  pacedRate?: number;
}

export interface EdgeFigures {
  saturated: LoadResult & {
    committed: number;
    committedPerS: number;
    drainS: number;
    e2cP50Ms: number | null;
    e2cP99Ms: number | null;
    /** CPU µs per committed event from the start of the load to the end of the drain, per process. */
    cpuUsPerEvent: Record<string, number>;
  };
  paced: LoadResult & { rate: number; committed: number; e2cP50Ms: number | null; e2cP99Ms: number | null };
  peakRssMiB: Record<string, number>;
}

export const WARMUP_S = 2;

export function load(
  s: ScenarioSettings,
  urls: string[],
  prefix: string,
  extra: Partial<LoadOptions> = {},
): Promise<LoadResult> {
  return runLoad({
    urls,
    path: WEBHOOK_PATH,
    secret: s.secret,
    installationIds: s.installationIds,
    deliveryPrefix: prefix,
    connections: s.connections,
    durationS: s.durationS,
    ...extra,
  });
}

/** Wait (bounded) until `accepted` events of the run are in Postgres. */
async function drain(
  pool: pg.Pool,
  prefix: string,
  accepted: number,
  timeoutS: number,
): Promise<{ stats: CommitStats; waitedS: number }> {
  const t0 = Date.now();
  for (;;) {
    const stats = await commitStats(pool, prefix);
    const waitedS = (Date.now() - t0) / 1000;
    if (stats.committed >= accepted || waitedS > timeoutS) return { stats, waitedS };
    await sleep(250);
  }
}

export async function runBaseline(
  s: ScenarioSettings,
  baseline: Child,
): Promise<{ saturated: LoadResult; peakRssMiB: number }> {
  await load(s, [baseline.url], 'bw-', { durationS: WARMUP_S });
  const saturated = await withServerCpu([baseline], () => load(s, [baseline.url], 'bs-'));
  return { saturated, peakRssMiB: await peakRssMiB(baseline) };
}

/** Runs `run` and adds the CPU the `servers` used per accepted request. */
export async function withServerCpu(servers: Child[], run: () => Promise<LoadResult>): Promise<LoadResult> {
  const used = async () => (await Promise.all(servers.map(cpuMs))).reduce((a, b) => a + b, 0);
  const before = await used();
  const r = await run();
  const ms = (await used()) - before;
  return r.accepted > 0 ? { ...r, serverCpuUsPerAccepted: (ms * 1000) / r.accepted } : r;
}

/** Load goes to the `edges`; peak RSS is read from `all` nodes. */
export async function runEdge(
  s: ScenarioSettings,
  edges: Child[],
  all: Child[],
  pool: pg.Pool,
  tag: string,
): Promise<EdgeFigures> {
  const urls = edges.map((n) => n.url);
  const warm = await load(s, urls, `${tag}w-`, { durationS: WARMUP_S });
  await drain(pool, `${tag}w-`, warm.accepted, s.drainTimeoutS);

  const nodesBefore = await Promise.all(all.map(cpuMs));
  const sysBefore = await systemCpu();
  const sat = await withServerCpu(edges, () => load(s, urls, `${tag}s-`));
  const d = await drain(pool, `${tag}s-`, sat.accepted, s.drainTimeoutS);
  const nodesAfter = await Promise.all(all.map(cpuMs));
  const sys = systemCpuUsed(sysBefore, await systemCpu());
  const perEvent = (ms: number) => (d.stats.committed > 0 ? Math.round((ms * 1000) / d.stats.committed) : 0);
  const cpuUsPerEvent: Record<string, number> = {};
  for (const [i, n] of all.entries()) cpuUsPerEvent[n.name] = perEvent(nodesAfter[i]! - nodesBefore[i]!);
  cpuUsPerEvent['nats-server'] = perEvent(sys.natsServerMs);
  cpuUsPerEvent.postgres = perEvent(sys.postgresMs);
  const spanS =
    d.stats.firstCommit && d.stats.lastCommit
      ? (d.stats.lastCommit.getTime() - d.stats.firstCommit.getTime()) / 1000
      : 0;
  const committedPerS = spanS > 0 ? d.stats.committed / spanS : 0;

  // Below saturation: half of the slower of accepting and committing.
  const rate =
    s.pacedRate ?? Math.max(1, Math.floor(0.5 * Math.min(sat.acceptedPerS, committedPerS || sat.acceptedPerS)));
  const paced = await load(s, urls, `${tag}p-`, { rate });
  const p = await drain(pool, `${tag}p-`, paced.accepted, s.drainTimeoutS);

  const rss: Record<string, number> = {};
  for (const n of all) rss[n.name] = await peakRssMiB(n);
  return {
    saturated: {
      ...sat,
      committed: d.stats.committed,
      committedPerS,
      drainS: d.waitedS,
      e2cP50Ms: d.stats.e2cP50Ms,
      e2cP99Ms: d.stats.e2cP99Ms,
      cpuUsPerEvent,
    },
    paced: { ...paced, rate, committed: p.stats.committed, e2cP50Ms: p.stats.e2cP50Ms, e2cP99Ms: p.stats.e2cP99Ms },
    peakRssMiB: rss,
  };
}
