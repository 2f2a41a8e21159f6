/** What the figures blocks of the docs share: how a number, a time span and a machine read. */
import type { Machine } from '../bench/results/ingest-result.js';

/** Not recorded: a transcribed result that did not give this figure. */
export const NR = 'n/r';

/** Whole numbers from 10 up, one decimal below (`4.6`, `34`); `null` is not recorded. */
export function num(v: number | null): string {
  if (v === null) return NR;
  return Math.abs(v) >= 10 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}

/** `a / b`, or not recorded when neither is. */
export function pair(a: number | null, b: number | null): string {
  return a === null && b === null ? NR : `${num(a)} / ${num(b)}`;
}

const day = (iso: string) => iso.slice(0, 10);
const clock = (iso: string) => iso.slice(11, 16);

/** `2026-11-27 00:14–00:36 UTC`, `2026-11-26 23:59 – 2026-11-27 00:45 UTC`, or a start alone. */
export function span(from: string, to: string | null): string {
  if (to === null || `${day(to)} ${clock(to)}` === `${day(from)} ${clock(from)}`)
    return `${day(from)} ${clock(from)} UTC`;
  if (day(from) === day(to)) return `${day(from)} ${clock(from)}–${clock(to)} UTC`;
  return `${day(from)} ${clock(from)} – ${day(to)} ${clock(to)} UTC`;
}

/** The machine as the docs name it, with the software versions recorded. */
export function machineText(m: Machine): { name: string; software: string } {
  const software = [
    m.node && `Node ${m.node}`,
    m.nats_server && `nats-server ${m.nats_server}`,
    m.postgres && `Postgres ${m.postgres}`,
  ].filter(Boolean);
  return { name: m.name ?? 'machine not recorded', software: software.join(', ') };
}

/** A transcribed result says so, and what `n/r` means. */
export function sourceText(source: string, own: string): string {
  return source === own ? '' : ` Figures ${source}; ${NR}: not recorded there.`;
}

/** A Markdown table. */
export function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}
