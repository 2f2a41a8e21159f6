/**
 * Prints the bench figures: a table for people, one JSON line for comparing runs (run.ts
 * `--results` appends the docs' form of it), and the verdict docs/performance.md states (the
 * edge's acknowledgement path must not be slower than the baseline's). Every row and every run
 * in the JSON names its route (`github`, `slack`). The verdict compares, per route, the edge alone (no consumer
 * sharing the CPUs, like the baseline) with that route's baseline; the edges of the other
 * topologies are shown against it too, for information.
 */
import type { LoadResult } from './load.js';
import type { DrainFigures } from './drain.js';
import type { AloneFigures } from './edge-alone.js';
import type { Machine } from './machine.js';
import type { Route } from './route-traffic.js';
import type { EdgeFigures } from './scenario.js';

export interface BenchFigures {
  machine: Machine;
  settings: {
    durationS: number;
    connections: number;
    shards: number;
    /** `--installs`: the counts the topologies and drains run with (baseline and edge alone: always 32). */
    installs: number[];
    routes: Route[];
  };
  /** One per route (`--route`). */
  baselines: ({ route: Route } & { saturated: LoadResult; peakRssMiB: number })[];
  alones: ({ route: Route } & AloneFigures)[];
  /** One entry per route, topology and installs count (`--installs 1,32`: the big tenant, and many). */
  topologies: { route: Route; label: string; installs: number; figures: EdgeFigures }[];
  /** Actors-only drains of a pre-published backlog, per installs count. */
  drains: { installs: number; figures: DrainFigures }[];
}

/** Width of the run column: `slack: edge|actors, 32 inst, 90% 1234/s`. */
const NAME = 40;
const f = (v: number | null | undefined, digits = 1) => (v == null ? '-' : v.toFixed(digits));

export function printFigures(b: BenchFigures): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const m = b.machine;
  out(
    `machine: ${m.cpus} x ${m.cpuModel}, ${m.memoryGiB} GiB, node ${m.node}, nats-server ` +
      `${m.natsServer}, postgres ${m.postgres}, load avg ${m.loadAvg1mAtStart} at start`,
  );
  out(
    `settings: ${b.settings.durationS} s per run, ${b.settings.connections} connections, ` +
      `${b.settings.shards} shards, installs ${b.settings.installs.join(' and ')} (baseline and edge alone: 32), ` +
      `routes ${b.settings.routes.join(', ')}`,
  );
  out('');
  out('(edge alone: an edge-only node, no consumer until its backlog drains; 1 node, 2 nodes: serve with both roles;');
  out(' edge|actors: an edge-only node in front of an actors-only node)');
  out(
    '(cpu µs/req: CPU the serving process used per accepted request, user + system; steadier ' +
      'than req/s on a shared machine)',
  );
  out(
    `${'run (route: topology)'.padEnd(NAME)} accepted/s  ack p50 ms  ack p99 ms  non-2xx  errors  committed/s  e2c p50 ms  e2c p99 ms  cpu µs/req  peak RSS MiB`,
  );
  const row = (
    name: string,
    l: LoadResult,
    extra: { committedPerS?: number; e2c50?: number | null; e2c99?: number | null; rss: string },
  ) =>
    out(
      `${name.padEnd(NAME)} ${f(l.acceptedPerS).padStart(10)}  ${f(l.ackP50Ms).padStart(10)}  ${f(l.ackP99Ms).padStart(10)}  ${String(l.refused).padStart(7)}  ${String(l.errors).padStart(6)}  ${f(extra.committedPerS).padStart(11)}  ${f(extra.e2c50).padStart(10)}  ${f(extra.e2c99).padStart(10)}  ${f(l.serverCpuUsPerAccepted, 0).padStart(10)}  ${extra.rss}`,
    );
  for (const base of b.baselines)
    row(`${base.route}: baseline (sign+publish)`, base.saturated, { rss: String(base.peakRssMiB) });
  for (const alone of b.alones) {
    const rss = Object.values(alone.peakRssMiB).join(' + ');
    row(`${alone.route}: edge alone, saturated`, alone.saturated, { committedPerS: alone.backlog.committedPerS, rss });
    const k = alone.backlog;
    out(
      `  ${alone.route}: edge alone: backlog of ${k.events} events, ${k.committed} committed by the actors node ` +
        `in ${f(k.drainS)} s (start-up included)`,
    );
  }
  for (const t of b.topologies) {
    const [name, e] = [`${t.route}: ${t.label}, ${t.installs} inst`, t.figures];
    const rss = Object.values(e.peakRssMiB).join(' + ');
    row(`${name}, saturated`, e.saturated, {
      committedPerS: e.saturated.committedPerS,
      e2c50: e.saturated.e2cP50Ms,
      e2c99: e.saturated.e2cP99Ms,
      rss,
    });
    const cpu = Object.entries(e.saturated.cpuUsPerEvent).map(([k, v]) => `${k} ${v}`);
    out(`  ${name}: cpu µs per committed event, load + drain: ${cpu.join(', ')}`);
    for (const p of e.paced) {
      const label = `${name}, ${p.pct === null ? '' : `${p.pct}% `}${p.rate}/s`;
      row(label, p, { committedPerS: p.committed / p.durationS, e2c50: p.e2cP50Ms, e2c99: p.e2cP99Ms, rss });
      const fw = p.follow;
      if (fw)
        out(
          `  ${label}: commit → delivered over ${fw.changes} changes (${fw.missing} missing): webhook p50/p99 ` +
            `${f(fw.webhookP50Ms)}/${f(fw.webhookP99Ms)} ms, SSE p50/p99 ${f(fw.sseP50Ms)}/${f(fw.sseP99Ms)} ms`,
        );
    }
    for (const r of [e.saturated, ...e.paced]) {
      const c = r.commits;
      const run = 'pct' in r ? `${r.pct === null ? '' : `${r.pct}% `}${r.rate}/s` : 'saturated';
      if (c)
        out(
          `  ${name}, ${run}: ${c.transactions} ingest transactions, ${f(c.eventsPerTransaction)} events of ` +
            `${f(c.installsPerTransaction)} installs and ${f(c.msPerTransaction)} ms each, ` +
            `${f(c.inFlight, 2)} in flight on average (the commit slots' use)`,
        );
      if (r.committed < r.accepted)
        out(`  ! ${name}: ${r.accepted - r.committed} accepted events not committed in time`);
      if (r.inFlightAtEnd > 0)
        out(`  (${name}: ${r.inFlightAtEnd} requests in flight when a run ended, counted apart)`);
    }
  }
  for (const d of b.drains) {
    const k = d.figures;
    const cpu = Object.entries(k.cpuUsPerEvent).map(([n, v]) => `${n} ${v}`);
    out(
      `actors-only drain, ${d.installs} inst: ${k.committed}/${k.events} committed, ${f(k.committedPerS)} committed/s ` +
        `(${f(k.drainS)} s incl. start-up); cpu µs/event ${cpu.join(', ')}; peak RSS MiB ` +
        Object.values(k.peakRssMiB).join(' + '),
    );
    const st = k.stalled;
    if (st)
      out(
        `  Postgres ${st.mode === 'cut' ? 'gone (connections reset)' : 'stalled'} ${st.forS} s with a fifth ` +
          `committed: ${st.backlogAtResume} events left when it answered ` +
          `again, committed ${f(st.recoveryS)} s later` +
          (st.commits
            ? ` in ${st.commits.transactions} transactions of ${f(st.commits.eventsPerTransaction)} events`
            : ''),
      );
  }
  const verdicts: string[] = [];
  for (const { route, saturated: base } of b.baselines) {
    const versus = (name: string, edge: LoadResult) => {
      const slower = edge.acceptedPerS < base.acceptedPerS * 0.95 || edge.ackP99Ms > base.ackP99Ms * 1.05;
      return (
        `${route}: edge (${name}) vs baseline, saturated: ` +
        `${f((edge.acceptedPerS / base.acceptedPerS) * 100, 0)}% of the baseline's accepted/s, ` +
        `ack p50 ${f(edge.ackP50Ms)} vs ${f(base.ackP50Ms)} ms, p99 ${f(edge.ackP99Ms)} vs ${f(base.ackP99Ms)} ms, ` +
        `cpu/req ${f(edge.serverCpuUsPerAccepted, 0)} vs ${f(base.serverCpuUsPerAccepted, 0)} µs: ` +
        (slower ? 'SLOWER than the baseline' : 'not slower than the baseline')
      );
    };
    const alone = b.alones.find((a) => a.route === route);
    if (alone) verdicts.push(`verdict: ${versus('alone', alone.saturated)}`);
    for (const t of b.topologies.filter((t) => t.route === route && t.label !== '2 nodes'))
      verdicts.push(
        `for information, sharing the machine with the consumers: ${versus(`${t.label}, ${t.installs} inst`, t.figures.saturated)}`,
      );
  }
  if (verdicts.length > 0) out('');
  for (const v of verdicts) out(v);
  out('');
  out(`bench ingest figures: ${JSON.stringify(b)}`);
}
