/**
 * Prints the bench figures: a table for people, one JSON line for the README and for
 * comparing runs, and the verdict README "Performance" states (the edge's acknowledgement path must
 * not be slower than the baseline's). The verdict compares the edge alone (no consumer
 * sharing the CPUs, like the baseline); the edges of the other topologies are shown
 * against the baseline too, for information.
 */
import type { LoadResult } from './load.js';
import type { DrainFigures } from './drain.js';
import type { AloneFigures } from './edge-alone.js';
import type { Machine } from './machine.js';
import type { EdgeFigures } from './scenario.js';

export interface BenchFigures {
  machine: Machine;
  settings: { durationS: number; connections: number; shards: number; installs: number };
  baseline?: { saturated: LoadResult; peakRssMiB: number };
  alone?: AloneFigures;
  /** One entry per topology and installs count (`--installs 1,32`: the big tenant, and many). */
  topologies: { label: string; installs: number; figures: EdgeFigures }[];
  /** Actors-only drains of a pre-published backlog, per installs count. */
  drains: { installs: number; figures: DrainFigures }[];
}

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
      `${b.settings.shards} shards, ${b.settings.installs} installs`,
  );
  out('');
  out('(edge alone: an edge-only node, no consumer until its backlog drains; 1 node, 2 nodes: serve with both roles;');
  out(' edge|actors: an edge-only node in front of an actors-only node)');
  out(
    '(cpu µs/req: CPU the serving process used per accepted request, user + system; steadier ' +
      'than req/s on a shared machine)',
  );
  out(
    'run                       accepted/s  ack p50 ms  ack p99 ms  non-2xx  errors  committed/s  e2c p50 ms  e2c p99 ms  cpu µs/req  peak RSS MiB',
  );
  const row = (
    name: string,
    l: LoadResult,
    extra: { committedPerS?: number; e2c50?: number | null; e2c99?: number | null; rss: string },
  ) =>
    out(
      `${name.padEnd(25)} ${f(l.acceptedPerS).padStart(10)}  ${f(l.ackP50Ms).padStart(10)}  ${f(l.ackP99Ms).padStart(10)}  ${String(l.refused).padStart(7)}  ${String(l.errors).padStart(6)}  ${f(extra.committedPerS).padStart(11)}  ${f(extra.e2c50).padStart(10)}  ${f(extra.e2c99).padStart(10)}  ${f(l.serverCpuUsPerAccepted, 0).padStart(10)}  ${extra.rss}`,
    );
  if (b.baseline) row('baseline (sign+publish)', b.baseline.saturated, { rss: String(b.baseline.peakRssMiB) });
  const alone = b.alone;
  if (alone) {
    const rss = Object.values(alone.peakRssMiB).join(' + ');
    row('edge alone, saturated', alone.saturated, { committedPerS: alone.backlog.committedPerS, rss });
    const k = alone.backlog;
    out(
      `  edge alone: backlog of ${k.events} events, ${k.committed} committed by the actors node ` +
        `in ${f(k.drainS)} s (start-up included)`,
    );
  }
  for (const t of b.topologies) {
    const [name, e] = [`${t.label}, ${t.installs} inst`, t.figures];
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
    }
    for (const r of [e.saturated, ...e.paced]) {
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
  }
  if (b.baseline) {
    const base = b.baseline.saturated;
    const versus = (name: string, edge: LoadResult) => {
      const slower = edge.acceptedPerS < base.acceptedPerS * 0.95 || edge.ackP99Ms > base.ackP99Ms * 1.05;
      return (
        `edge (${name}) vs baseline, saturated: ` +
        `${f((edge.acceptedPerS / base.acceptedPerS) * 100, 0)}% of the baseline's accepted/s, ` +
        `ack p50 ${f(edge.ackP50Ms)} vs ${f(base.ackP50Ms)} ms, p99 ${f(edge.ackP99Ms)} vs ${f(base.ackP99Ms)} ms, ` +
        `cpu/req ${f(edge.serverCpuUsPerAccepted, 0)} vs ${f(base.serverCpuUsPerAccepted, 0)} µs: ` +
        (slower ? 'SLOWER than the baseline' : 'not slower than the baseline')
      );
    };
    out('');
    if (alone) out(`verdict: ${versus('alone', alone.saturated)}`);
    for (const t of b.topologies.filter((t) => t.label !== '2 nodes'))
      out(`for information, sharing the machine with the consumers: ${versus(t.label, t.figures.saturated)}`);
  }
  out('');
  out(`bench ingest figures: ${JSON.stringify(b)}`);
}
