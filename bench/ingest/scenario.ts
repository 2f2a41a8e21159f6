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
import { commitFigures, commitTotals, type CommitFigures } from './commit-metrics.js';
import type { Follow, FollowFigures } from './follow.js';
import { runLoad, type LoadOptions, type LoadResult } from './load.js';
import { cpuMs, peakRssMiB, type Child } from './processes.js';
import type { RouteTraffic } from './route-traffic.js';
import { RssSampler } from './rss.js';
import { systemCpu, systemCpuUsed } from './system-cpu.js';

export interface ScenarioSettings {
  /** The route driven and the installs its load spreads over (route-traffic.ts). */
  traffic: RouteTraffic;
  connections: number;
  durationS: number;
  /** Longest wait for a run's accepted events to be committed. */
  drainTimeoutS: number;
  /** Paced runs at these percentages of the saturated committed rate (`--paced 50,90`). */
  pacedPercents: number[];
  /** A further paced run at this fixed rate (`--rate N`), to compare versions at one load. */
  pacedRate?: number;
  /** `--follow`: a webhook and an SSE client on the bench tenant during the paced runs (follow.ts). */
  follow?: (edgeUrl: string) => Promise<Follow>;
}

interface PacedFigures extends LoadResult {
  rate: number;
  /** `pct` of the saturated committed rate, or null for the fixed `--rate`. */
  pct: number | null;
  committed: number;
  e2cP50Ms: number | null;
  e2cP99Ms: number | null;
  /** The nodes' ingest transactions during the run and its drain (commit-metrics.ts). */
  commits: CommitFigures | null;
  /** `--follow`: commit → delivered to the webhook and the SSE client. */
  follow?: FollowFigures;
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
    /** The nodes' ingest transactions during the run and its drain (commit-metrics.ts). */
    commits: CommitFigures | null;
  };
  paced: PacedFigures[];
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
    traffic: s.traffic,
    prefix,
    connections: s.connections,
    durationS: s.durationS,
    ...extra,
  });
}

/**
 * Wait (bounded) until `accepted` events of the run (`prefix`) are in Postgres, then until the count
 * stops growing for a second: requests the generator cut off at the end of a run are not
 * counted as accepted, yet may have been published and are committed too (LoadResult
 * `inFlightAtEnd`), so committed may exceed accepted by at most that many.
 */
export async function drain(
  pool: pg.Pool,
  traffic: RouteTraffic,
  prefix: string,
  accepted: number,
  timeoutS: number,
): Promise<{ stats: CommitStats; waitedS: number }> {
  const t0 = Date.now();
  const [ids, connector] = [traffic.idPrefix(prefix), traffic.connector];
  let stats = await commitStats(pool, ids, connector);
  while (stats.committed < accepted && (Date.now() - t0) / 1000 <= timeoutS) {
    await sleep(250);
    stats = await commitStats(pool, ids, connector);
  }
  const waitedS = (Date.now() - t0) / 1000;
  for (let prev = -1; prev !== stats.committed && (Date.now() - t0) / 1000 <= timeoutS;) {
    prev = stats.committed;
    await sleep(1_000);
    stats = await commitStats(pool, ids, connector);
  }
  return { stats, waitedS };
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

/** Load goes to the `edges`; RSS is sampled from `all` nodes throughout. */
export async function runEdge(
  s: ScenarioSettings,
  edges: Child[],
  all: Child[],
  pool: pg.Pool,
  tag: string,
): Promise<EdgeFigures> {
  const rss = new RssSampler([...all]);
  const urls = edges.map((n) => n.url);
  const warm = await load(s, urls, `${tag}w-`, { durationS: WARMUP_S });
  await drain(pool, s.traffic, `${tag}w-`, warm.accepted, s.drainTimeoutS);

  const nodesBefore = await Promise.all(all.map(cpuMs));
  const sysBefore = await systemCpu();
  const selfBefore = process.cpuUsage();
  const commitsBefore = await commitTotals(all);
  const sat = await withServerCpu(edges, () => load(s, urls, `${tag}s-`));
  const d = await drain(pool, s.traffic, `${tag}s-`, sat.accepted, s.drainTimeoutS);
  const self = process.cpuUsage(selfBefore);
  const satCommits = commitFigures(commitsBefore, await commitTotals(all));
  const nodesAfter = await Promise.all(all.map(cpuMs));
  const sys = systemCpuUsed(sysBefore, await systemCpu());
  const perEvent = (ms: number) => (d.stats.committed > 0 ? Math.round((ms * 1000) / d.stats.committed) : 0);
  const cpuUsPerEvent: Record<string, number> = {};
  for (const [i, n] of all.entries()) cpuUsPerEvent[n.name] = perEvent(nodesAfter[i]! - nodesBefore[i]!);
  cpuUsPerEvent['nats-server'] = perEvent(sys.natsServerMs);
  cpuUsPerEvent.postgres = perEvent(sys.postgresMs);
  // This process: the load generator (signing and sending every request), plus the drain's
  // polling and the RSS sampler; it shares the CPUs with all the above.
  cpuUsPerEvent.bench = perEvent((self.user + self.system) / 1000);
  const spanS =
    d.stats.firstCommit && d.stats.lastCommit
      ? (d.stats.lastCommit.getTime() - d.stats.firstCommit.getTime()) / 1000
      : 0;
  const committedPerS = spanS > 0 ? d.stats.committed / spanS : 0;

  // Below saturation: percentages of the slower of accepting and committing, plus `--rate`.
  const sustained = Math.min(sat.acceptedPerS, committedPerS || sat.acceptedPerS);
  const runs: [number, number | null][] = s.pacedPercents.map((pct) => [
    Math.max(1, Math.floor((sustained * pct) / 100)),
    pct,
  ]);
  if (s.pacedRate !== undefined) runs.push([s.pacedRate, null]);
  const paced: PacedFigures[] = [];
  const follow = s.follow && runs.length > 0 ? await s.follow(urls[0]!) : null;
  for (const [rate, pct] of runs) {
    const p0 = `${tag}p${pct ?? 'r'}-`;
    const headBefore = await follow?.head();
    const before = await commitTotals(all);
    // Followed, each paced run opens issues of its own: new nodes, so every event is a change to deliver.
    const firstIndex = follow ? 10_000_000 * (paced.length + 1) : 0;
    const r = await withServerCpu(edges, () => load(s, urls, p0, { rate, firstIndex }));
    const p = await drain(pool, s.traffic, p0, r.accepted, s.drainTimeoutS);
    const commits = commitFigures(before, await commitTotals(all));
    paced.push({
      ...r,
      rate,
      pct,
      committed: p.stats.committed,
      e2cP50Ms: p.stats.e2cP50Ms,
      e2cP99Ms: p.stats.e2cP99Ms,
      commits,
      ...(follow ? { follow: await follow.measure(headBefore!, await follow.head()) } : {}),
    });
  }
  await follow?.stop();
  rss.stop();
  return {
    saturated: {
      ...sat,
      committed: d.stats.committed,
      committedPerS,
      drainS: d.waitedS,
      e2cP50Ms: d.stats.e2cP50Ms,
      e2cP99Ms: d.stats.e2cP99Ms,
      cpuUsPerEvent,
      commits: satCommits,
    },
    paced,
    peakRssMiB: rss.peaks(),
  };
}
