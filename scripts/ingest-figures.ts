/**
 * The figures block of docs/performance.md, from bench/results/ingest.jsonl: the newest
 * session (the runs sharing the `session` of the latest start). Each run that measured
 * more than one topology, or drained a backlog, is a table of its own (its command, date
 * and machine above it), with the CPU per request or event and its drains; runs that each
 * measured one topology saturated (repeats, e.g. against the shard count) are one table
 * listing their committed/s in the order they ran.
 */
import type { IngestResult, IngestRow } from '../bench/results/ingest-result.js';
import { machineText, NR, num, pair, sourceText, span, table } from './figures-format.js';

const TOPOLOGY_ORDER = ['baseline', 'alone', 'edge1', 'edge2', 'split'] as const;
const TOPOLOGY_NAME = { edge1: '1 node', edge2: '2 nodes', split: 'edge → actors' } as const;
const SHARED = ['nats-server', 'postgres', 'bench'];

/** Rows of both routes that are the same measurement: topology, installs, load. */
function keyOf(r: IngestRow): string {
  const load = r.load === 'saturated' ? 's' : r.paced_pct === null ? `r${r.rate}` : `p${r.paced_pct}`;
  return `${r.topology}|${r.installs}|${load}`;
}

function order(a: IngestRow, b: IngestRow): number {
  const t = (r: IngestRow) => TOPOLOGY_ORDER.indexOf(r.topology);
  const front = (r: IngestRow) => (r.topology === 'baseline' || r.topology === 'alone' ? t(r) : 9);
  const load = (r: IngestRow) => (r.load === 'saturated' ? -1 : (r.paced_pct ?? 1000 + (r.rate ?? 0)));
  return front(a) - front(b) || a.installs - b.installs || t(a) - t(b) || load(a) - load(b);
}

function label(r: IngestRow): string {
  if (r.topology === 'baseline') return 'baseline (signature + one publish)';
  if (r.topology === 'alone') return `edge alone (edge-only node), ${r.installs} installs`;
  const installs = `${r.installs} install${r.installs === 1 ? '' : 's'}`;
  const load =
    r.load === 'saturated' ? 'saturated' : r.paced_pct === null ? `paced ${r.rate}/s` : `paced ${r.paced_pct} %`;
  return `${TOPOLOGY_NAME[r.topology]}, ${installs}, ${load}`;
}

function committed(r: IngestRow | undefined): string {
  if (!r) return '–';
  if (r.topology === 'baseline') return '–';
  if (r.topology === 'alone' && r.backlog_events !== null)
    return `${num(r.committed_per_s)} (its ${Math.round(r.backlog_events / 1000)} k backlog, actors-only node)`;
  return num(r.committed_per_s);
}

function e2c(r: IngestRow | undefined): string {
  if (!r || r.topology === 'baseline' || r.topology === 'alone') return '–';
  if (r.e2c_p50_ms === null && r.e2c_p99_ms === null && r.load === 'saturated') return '(backlog)';
  return pair(r.e2c_p50_ms, r.e2c_p99_ms);
}

const rss = (r: IngestRow | undefined) => (!r ? '–' : r.peak_rss_mib ? r.peak_rss_mib.join(' + ') : NR);

/** `nodes / nats-server / Postgres / bench`, the nodes joined with `+`. */
function cpuText(e: Record<string, number>): string {
  const nodes = Object.entries(e).filter(([k]) => !SHARED.includes(k));
  const shared = SHARED.filter((k) => k in e).map((k) => String(e[k]));
  return [nodes.map(([, v]) => v).join(' + '), ...shared].filter((s) => s !== '').join(' / ');
}

/** Rows paired by measurement, GitHub beside Slack, in the order of the tables. */
function paired(rows: IngestRow[]): [IngestRow, IngestRow | undefined, IngestRow | undefined][] {
  const keys = new Map<string, IngestRow>();
  for (const r of [...rows].sort(order)) if (!keys.has(keyOf(r))) keys.set(keyOf(r), r);
  return [...keys].map(([k, first]) => [
    first,
    rows.find((r) => r.route === 'github' && keyOf(r) === k),
    rows.find((r) => r.route === 'slack' && keyOf(r) === k),
  ]);
}

function runTable(run: IngestResult): string[] {
  const m = machineText(run.machine);
  const s = run.settings;
  const settings = [
    s.duration_s !== null && `${s.duration_s} s per run`,
    s.connections !== null && `${s.connections} connections`,
    s.shards !== null && `${s.shards} shards`,
  ].filter(Boolean);
  const measuredOn = [m.software, settings.join(', ')].filter(Boolean).join('; ');
  const out = [
    `**${span(run.started_at, run.ended_at)}, ${m.name}** (${measuredOn}): ` +
      `\`${run.command}\`${run.note ? `; ${run.note}` : ''}.${sourceText(run.source, 'bench')}`,
  ];
  const pairs = paired(run.rows);
  if (pairs.length > 0) {
    const head = ['Run', 'GitHub accepted/s', 'ack p50 / p99 ms', 'committed/s', 'e2c p50 / p99 ms'];
    const slack = ['Slack accepted/s', 'ack p50 / p99 ms', 'committed/s', 'e2c p50 / p99 ms'];
    const routeCells = (r: IngestRow | undefined) =>
      r ? [num(r.accepted_per_s), pair(r.ack_p50_ms, r.ack_p99_ms), committed(r), e2c(r)] : ['–', '–', '–', '–'];
    out.push(
      '',
      table(
        [...head, ...slack, 'peak RSS MiB (GitHub / Slack)'],
        pairs.map(([f, g, k]) => [label(f), ...routeCells(g), ...routeCells(k), `${rss(g)} / ${rss(k)}`]),
      ),
    );
  }
  const cpu = pairs.filter(([, g, k]) =>
    [g, k].some((r) => r && r.load === 'saturated' && (r.cpu_us_per_request !== null || r.cpu_us_per_event)),
  );
  if (cpu.length > 0) {
    const cell = (r: IngestRow | undefined) =>
      !r ? '–' : r.cpu_us_per_event ? cpuText(r.cpu_us_per_event) : num(r.cpu_us_per_request);
    out.push(
      '',
      'CPU in µs, saturated: per request of the serving node (baseline, edge alone); per committed event, load and ' +
        'drain, each process (the nodes / nats-server / Postgres / bench, the load generator):',
      '',
      table(
        ['Run', 'GitHub', 'Slack'],
        cpu.map(([f, g, k]) => [label(f), cell(g), cell(k)]),
      ),
    );
  }
  if (run.drains.length > 0) {
    out.push(
      '',
      table(
        [
          'Chat drain, actors-only node',
          'events',
          'text',
          'committed/s',
          'peak RSS MiB',
          'CPU µs per event (node / nats-server / Postgres)',
        ],
        run.drains.map((d) => [
          `${d.installs} install${d.installs === 1 ? '' : 's'}`,
          num(d.events),
          d.text_chars === null ? 'about 2.2 KB (the default)' : `${d.text_chars} characters`,
          num(d.committed_per_s),
          d.peak_rss_mib ? d.peak_rss_mib.join(' + ') : NR,
          d.cpu_us_per_event ? cpuText(d.cpu_us_per_event) : NR,
        ]),
      ),
    );
    for (const d of run.drains.filter((x) => x.stalled)) {
      const st = d.stalled!;
      const how = st.commits
        ? ` in ${st.commits.transactions} transactions of ${num(st.commits.events_per_transaction)} events`
        : '';
      out.push(
        '',
        `Drain of ${d.installs} installs: Postgres ${st.mode === 'cut' ? 'gone (connections reset)' : 'stalled'} ` +
          `${st.for_s} s once a fifth was committed; ${st.backlog_at_resume} events left when it answered again, ` +
          `committed ${num(st.recovery_s)} s later${how}.`,
      );
    }
  }
  return out;
}

/** A run of one topology, saturated, on one or both routes. */
function isRepeat(run: IngestResult): boolean {
  const first = run.rows[0];
  return (
    first !== undefined &&
    run.drains.length === 0 &&
    first.topology !== 'baseline' &&
    first.topology !== 'alone' &&
    run.rows.every((r) => r.load === 'saturated' && r.topology === first.topology && r.installs === first.installs)
  );
}

function repeatsTable(runs: IngestResult[], mainShards: number | null): string[] {
  const from = runs.map((r) => r.started_at).sort()[0]!;
  const to = runs
    .map((r) => r.ended_at ?? r.started_at)
    .sort()
    .at(-1)!;
  const machines = [...new Set(runs.map((r) => machineText(r.machine).name))].join(', ');
  const commands = [...new Set(runs.map((r) => `\`${r.command}\``))].join('; ');
  const sources = [...new Set(runs.map((r) => sourceText(r.source, 'bench')))].join('');
  const rows = new Map<string, { first: IngestRow; github: string[]; slack: string[] }>();
  for (const run of runs)
    for (const r of run.rows) {
      const k = keyOf(r);
      const entry = rows.get(k) ?? { first: r, github: [], slack: [] };
      const notes = [
        run.settings.shards !== null && run.settings.shards !== mainShards && `${run.settings.shards} shards`,
        run.note,
      ].filter(Boolean);
      entry[r.route].push(`${num(r.committed_per_s)}${notes.length ? ` (${notes.join('; ')})` : ''}`);
      rows.set(k, entry);
    }
  return [
    `**${span(from, to)}, ${machines}**: runs of one topology, saturated, on their own (${commands}); ` +
      `committed/s in the order they ran.${sources}`,
    '',
    table(
      ['Run', 'GitHub committed/s', 'Slack committed/s'],
      [...rows.values()]
        .sort((a, b) => order(a.first, b.first))
        .map((e) => [label(e.first), e.github.join(', ') || '–', e.slack.join(', ') || '–']),
    ),
  ];
}

export function renderIngestFigures(results: IngestResult[]): string {
  if (results.length === 0) return 'No bench results recorded yet.';
  const newest = [...results].sort((a, b) => a.started_at.localeCompare(b.started_at)).at(-1)!;
  const runs = results
    .filter((r) => r.session === newest.session)
    .sort((a, b) => a.started_at.localeCompare(b.started_at));
  const full = runs.filter((r) => !isRepeat(r) && (r.rows.length > 0 || r.drains.length > 0));
  const repeats = runs.filter(isRepeat);
  const blocks = full.map(runTable);
  if (repeats.length > 0) blocks.push(repeatsTable(repeats, full[0]?.settings.shards ?? null));
  return blocks.map((b) => b.join('\n')).join('\n\n');
}
