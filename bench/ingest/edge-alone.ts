/**
 * The edge's acknowledgement path alone, apples to apples with the baseline: an edge-only
 * node (`serve --roles edge`) takes the closed loop while no actors node runs, so nothing
 * but the edge (and the load generator, and nats-server) uses the CPUs and the accepted
 * events simply accumulate in the ingest stream, as they do behind the baseline. Then an
 * actors-only node starts and the backlog drains into Postgres: the committed/s of a
 * consumer catching up, measured between the first and the last commit. The drain is
 * bounded; whatever is left is deleted with the stream.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { commitStats } from './bench-db.js';
import { peakRssMiB, type Child } from './processes.js';
import { load, WARMUP_S, withServerCpu, type ScenarioSettings } from './scenario.js';
import type { LoadResult } from './load.js';

export interface AloneFigures {
  saturated: LoadResult;
  backlog: {
    /** Events accepted (warm-up and closed loop) before the actors node started. */
    events: number;
    committed: number;
    committedPerS: number;
    /** From starting the actors node until every event was committed (or the bound). */
    drainS: number;
  };
  peakRssMiB: Record<string, number>;
}

/** Longest wait for the backlog: at a few hundred commits/s a minute measures the rate well. */
const BACKLOG_DRAIN_MAX_S = 60;

export async function runEdgeAlone(
  s: ScenarioSettings,
  edge: Child,
  startActors: () => Promise<Child>,
  pool: pg.Pool,
  tag: string,
): Promise<AloneFigures> {
  const warm = await load(s, [edge.url], `${tag}w-`, { durationS: WARMUP_S });
  const saturated = await withServerCpu([edge], () => load(s, [edge.url], `${tag}s-`));
  const rss: Record<string, number> = { [edge.name]: await peakRssMiB(edge) };
  const [ids, connector] = [s.traffic.idPrefix(tag), s.traffic.connector];
  const before = await commitStats(pool, ids, connector);
  if (before.committed !== 0)
    throw new Error(`${tag}: ${before.committed} events were committed with no actors node running`);

  // The generator counts answers; requests cut off at the end may have been published too.
  const events = warm.accepted + saturated.accepted;
  const t0 = Date.now();
  const actors = await startActors();
  let stats = before;
  while (stats.committed < events && (Date.now() - t0) / 1000 < BACKLOG_DRAIN_MAX_S) {
    if (actors.proc.exitCode !== null) throw new Error(`${actors.name} exited:\n${actors.logTail()}`);
    await sleep(250);
    stats = await commitStats(pool, ids, connector);
  }
  const drainS = (Date.now() - t0) / 1000;
  const spanS =
    stats.firstCommit && stats.lastCommit ? (stats.lastCommit.getTime() - stats.firstCommit.getTime()) / 1000 : 0;
  rss[actors.name] = await peakRssMiB(actors);
  return {
    saturated,
    backlog: { events, committed: stats.committed, committedPerS: spanS > 0 ? stats.committed / spanS : 0, drainS },
    peakRssMiB: rss,
  };
}
