/**
 * The retention block of docs/performance.md, from bench/results/retention.jsonl: the newest
 * `npm run bench:retention` run, ingest quiet against ingest while the housekeeping pass
 * purges, median of the rounds (their range).
 */
import type { RetentionResult, RetentionRow } from '../bench/results/retention-result.js';
import { machineText, num, span, table } from './figures-format.js';
import { spread } from './tracing-figures.js';

/** `250 000`: the docs' thousands. */
const thousands = (v: number) => v.toLocaleString('en-US').replace(/,/g, ' ');

export function renderRetentionFigures(results: RetentionResult[]): string {
  if (results.length === 0) return 'No retention runs recorded yet.';
  const r = [...results].sort((a, b) => a.started_at.localeCompare(b.started_at)).at(-1)!;
  const s = r.settings;
  const of = (phase: RetentionRow['phase'], load: RetentionRow['load']) =>
    r.rows.filter((x) => x.phase === phase && x.load === load);
  const row = (phase: RetentionRow['phase'], label: string) => {
    const sat = of(phase, 'saturated');
    const paced = of(phase, 'paced');
    return [
      label,
      spread(sat.map((x) => x.accepted_per_s)),
      spread(sat.map((x) => x.committed_per_s)),
      spread(paced.map((x) => x.ack_p50_ms)),
      spread(paced.map((x) => x.ack_p99_ms)),
      spread(paced.map((x) => x.e2c_p50_ms)),
      spread(paced.map((x) => x.e2c_p99_ms)),
      phase === 'purging' ? spread([...sat, ...paced].map((x) => x.purged_per_s)) : '–',
    ];
  };
  const purging = r.rows.filter((x) => x.phase === 'purging');
  const ranOut = purging.filter((x) => x.backlog_left === 0).length;
  const m = machineText(r.machine);
  const load = m.name.includes('load average') ? '' : ` (load average ${num(r.machine.load_avg_1m)} at the start)`;
  return [
    `**${span(r.started_at, r.ended_at)}, ${m.name}${load}** (${m.software}): \`${r.command}\`; ` +
      `${s.rounds} rounds, quiet and purging in turn; median of the rounds (their range). The backlog: ` +
      `${thousands(s.expired)} events past ${s.events_retention_days} days, ` +
      `topped up before each purging load; the pass deletes ${thousands(s.batch_size)} rows a batch, ${s.pause_ms} ms apart, ` +
      `${s.max_batches} batches a pass, passes back to back. ` +
      (ranOut === 0
        ? `Rows were left to purge at the end of every purging load.`
        : `The purge ran out of rows before ${ranOut} of ${purging.length} purging loads ended.`),
    '',
    table(
      [
        'Phase',
        'accepted/s, saturated',
        'committed/s, saturated',
        `ack p50 ms, paced ${s.rate}/s`,
        'ack p99 ms',
        'e2c p50 ms',
        'e2c p99 ms',
        'rows purged/s',
      ],
      [row('quiet', 'quiet: nothing purged'), row('purging', 'purging: the housekeeping pass running')],
    ),
  ].join('\n');
}
