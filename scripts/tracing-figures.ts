/**
 * The tracing block of docs/performance.md, from bench/results/tracing.jsonl: the newest
 * session's runs of one bench command against each variant its `note` names (the code before
 * tracing, tracing off, tracing on), interleaved in one sitting. Per variant: how many runs,
 * and the median of each figure with its range, read from the runs' first topology (the
 * saturated row and the paced row of its route and installs).
 */
import type { IngestResult, IngestRow } from '../bench/results/ingest-result.js';
import { machineText, num, span, table } from './figures-format.js';

function median(vs: number[]): number | null {
  if (vs.length === 0) return null;
  const s = [...vs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** `median (min–max)` of the figure over the runs that have it. */
export function spread(values: Array<number | null | undefined>): string {
  const vs = values.filter((v): v is number => typeof v === 'number');
  if (vs.length === 0) return '–';
  const m = median(vs);
  return vs.length === 1 ? num(m) : `${num(m)} (${num(Math.min(...vs))}–${num(Math.max(...vs))})`;
}

/** The node's CPU per committed event: the one node's, or the nodes' summed. */
function nodeCpu(r: IngestRow | undefined): number | null {
  if (!r?.cpu_us_per_event) return null;
  const nodes = Object.entries(r.cpu_us_per_event).filter(([k]) => !['nats-server', 'postgres', 'bench'].includes(k));
  return nodes.length === 0 ? null : nodes.reduce((n, [, v]) => n + v, 0);
}

export function renderTracingFigures(results: IngestResult[], none = 'No tracing runs recorded yet.'): string {
  if (results.length === 0) return none;
  const newest = [...results].sort((a, b) => a.started_at.localeCompare(b.started_at)).at(-1)!;
  const runs = results
    .filter((r) => r.session === newest.session)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
  const first = runs[0]!.rows.find((r) => r.load === 'saturated');
  const same = (r: IngestRow) => first && r.route === first.route && r.topology === first.topology;
  const variants = [...new Set(runs.map((r) => r.note ?? 'no note'))];
  const rows = variants.map((v) => {
    const of = runs.filter((r) => (r.note ?? 'no note') === v);
    const sat = of.map((r) => r.rows.find((x) => same(x) && x.load === 'saturated'));
    const paced = of.map((r) => r.rows.find((x) => same(x) && x.load === 'paced'));
    return [
      v,
      String(of.length),
      spread(sat.map((r) => r?.accepted_per_s)),
      spread(sat.map((r) => r?.committed_per_s)),
      spread(sat.map(nodeCpu)),
      spread(paced.map((r) => r?.ack_p50_ms)),
      spread(paced.map((r) => r?.ack_p99_ms)),
      spread(paced.map((r) => r?.e2c_p50_ms)),
      spread(paced.map((r) => r?.e2c_p99_ms)),
    ];
  });
  const m = machineText(newest.machine);
  const to = runs
    .map((r) => r.ended_at ?? r.started_at)
    .sort()
    .at(-1)!;
  const commands = [...new Set(runs.map((r) => `\`${r.command}\``))].join(', ');
  const rate = runs.flatMap((r) => r.rows).find((r) => same(r) && r.load === 'paced')?.rate;
  return [
    `**${span(runs[0]!.started_at, to)}, ${m.name}** (${m.software}): ${commands}, the variants interleaved; ` +
      `median of the runs (their range).`,
    '',
    table(
      [
        'Variant',
        'runs',
        'accepted/s, saturated',
        'committed/s, saturated',
        'node CPU µs per committed event',
        `ack p50 ms, paced${rate ? ` ${rate}/s` : ''}`,
        'ack p99 ms',
        'e2c p50 ms',
        'e2c p99 ms',
      ],
      rows,
    ),
  ].join('\n');
}
