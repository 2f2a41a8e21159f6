/**
 * The figures blocks of docs/chaos.md and docs/chaos-log.md, from bench/results/chaos.jsonl:
 * the newest full-scale run (not `--quick`) in chaos.md, every other run, newest first, in
 * the log. Each run is its command, date and machine, what was lost, duplicated and left,
 * and its table per fault.
 */
import type { ChaosResult, ChaosRow } from '../bench/results/chaos-result.js';
import { machineText, NR, num, sourceText, span, table } from './figures-format.js';

function scaleText(r: ChaosResult): string {
  const s = r.scale;
  const parts = [
    s.node_kills !== null && `${s.node_kills} node kill${s.node_kills === 1 ? '' : 's'}`,
    s.nats_kills !== null && `${s.nats_kills} nats-server kill${s.nats_kills === 1 ? '' : 's'}`,
    s.pg_stall_s !== null && `${s.pg_stall_s} s Postgres stall`,
    s.github_outage_s !== null && `${s.github_outage_s} s GitHub write outage`,
    s.all_down_s !== null && `${s.all_down_s} s all nodes down`,
  ].filter(Boolean);
  const load = [
    r.installs !== null && `${r.installs} installs`,
    r.slash_every !== null &&
      (r.slash_every === 0 ? 'no slash commands' : `a slash command every ${r.slash_every} deliveries`),
  ].filter(Boolean);
  return [`${r.quick ? 'quick' : 'full'} scale: ${parts.join(', ')}`, ...load].join('; ');
}

function faultLabel(row: ChaosRow, r: ChaosResult): string {
  const s = r.scale;
  const times = (v: number | null) => (v === null ? '' : ` ×${v}`);
  const secs = (v: number | null) => (v === null ? '' : ` ${v} s`);
  const suffix = {
    a: times(s.node_kills),
    b: times(s.nats_kills),
    c: secs(s.pg_stall_s),
    d: secs(s.github_outage_s),
    e: secs(s.all_down_s),
  };
  return `(${row.scenario}) ${row.fault}${suffix[row.scenario]}`;
}

function takeovers(t: ChaosRow['takeover_ms']): string {
  if (t === null) return NR;
  if (Array.isArray(t)) return t.length ? t.join(', ') : '–';
  return `${t.min}–${t.max}`;
}

/** `0 lost, 0 duplicated in every row, 0 dead letters, …`. */
function outcome(r: ChaosResult): string {
  const total = (f: (x: ChaosRow) => number | null) =>
    r.rows.some((x) => f(x) === null) ? null : r.rows.reduce((a, x) => a + f(x)!, 0);
  const [lost, dup] = [total((x) => x.lost), total((x) => x.duplicated)];
  const losses =
    lost === 0 && dup === 0 ? '**0 lost, 0 duplicated in every row**' : `**${num(lost)} lost, ${num(dup)} duplicated**`;
  const stuck = r.undrained_consumers;
  const undrained =
    stuck === null
      ? `undrained consumers ${NR}`
      : stuck.length === 0
        ? 'no consumer undrained'
        : `${stuck.length} consumers undrained (${stuck.map((c) => c.consumer).join(', ')})`;
  const dead = r.dead_letters === null ? `dead letters ${NR}` : `${r.dead_letters} dead letters`;
  return `${losses}, ${dead}, \`left_in_stream\` ${num(r.left_in_stream)}, ${undrained}.`;
}

function renderChaosRun(r: ChaosResult): string {
  const m = machineText(r.machine);
  const head = [
    'Fault',
    'sent',
    'acked',
    'stored',
    'lost',
    'dup',
    'recovered by reconciliation',
    'not recovered',
    'takeover ms',
    'max ack ms',
    'GitHub writes during fault',
  ];
  return [
    `**${span(r.started_at, r.ended_at)}, ${m.name}**${m.software ? ` (${m.software})` : ''}: \`${r.command}\` ` +
      `(${scaleText(r)})${r.note ? `; ${r.note}` : ''}. ${outcome(r)}${sourceText(r.source, 'chaos')}`,
    '',
    table(
      head,
      r.rows.map((x) => [
        faultLabel(x, r),
        num(x.sent),
        num(x.acknowledged),
        num(x.stored),
        num(x.lost),
        num(x.duplicated),
        num(x.recovered_by_reconciliation),
        num(x.not_recovered),
        takeovers(x.takeover_ms),
        num(x.max_ack_ms),
        num(x.upstream_writes_during_fault),
      ]),
    ),
  ].join('\n');
}

const newestFirst = (rs: ChaosResult[]) => [...rs].sort((a, b) => b.started_at.localeCompare(a.started_at));

/** The newest full-scale run. */
function latestChaos(results: ChaosResult[]): ChaosResult | null {
  return newestFirst(results).find((r) => !r.quick) ?? null;
}

export function renderChaosFigures(results: ChaosResult[]): string {
  const latest = latestChaos(results);
  return latest ? renderChaosRun(latest) : 'No chaos results recorded yet.';
}

export function renderChaosHistory(results: ChaosResult[]): string {
  const latest = latestChaos(results);
  const rest = newestFirst(results).filter((r) => r !== latest);
  return rest.length ? rest.map(renderChaosRun).join('\n\n') : 'No earlier chaos results.';
}
