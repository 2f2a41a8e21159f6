/**
 * How far V8 lets a node's old generation grow past what survived its last full collection
 * (SERVICE_HEAP_GROWING_PERCENT, README "Memory").
 *
 * V8 picks that factor itself, between 1.1 and 4 by how fast its collections run, and on a
 * host with plenty of memory it runs near the top: a serving node whose live set is 50-70 MiB
 * let its old generation reach about 120 MiB and its RSS 260-270 MiB at saturation (issue
 * 12's budget is 250). At 100 (twice the live set) the same runs peaked at 186-187 MiB for
 * about 3 % more node CPU per event; at 50, 174-177 MiB for about 10 % more.
 *
 * The flag is read at every full collection, so setting it at start, before the heap has
 * grown, has the same effect as passing it to node; node refuses it in NODE_OPTIONS, hence
 * this setting. A `--heap-growing-percent` given to node itself wins.
 */
import { setFlagsFromString } from 'node:v8';

export const DEFAULT_HEAP_GROWING_PERCENT = 100;

/** Applies `percent` (0: leave V8's own heuristic); returns what was applied, or null. */
export function limitHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): number | null {
  if (percent === 0) return null;
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return null;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
