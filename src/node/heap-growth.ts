/**
 * The factor by which V8 lets a node's old generation grow past what survived its last full
 * collection (SERVICE_HEAP_GROWING_PERCENT, README "Memory").
 *
 * V8 picks that factor itself from how fast its collections run, up to a ceiling set by the
 * heap limit: 4 once the limit is 2 GiB or more (node sizes it from the host's memory), 1.3
 * to 2 below. On a large host it runs near 4: a serving node whose live set is 50-70 MiB let
 * its old generation reach about 120 MiB and its RSS 260-270 MiB at saturation (issue 12's
 * budget is 250). At 100 (twice the live set) the same runs peaked at 186-194 MiB for about
 * 3 % more node CPU per event; at 50, 174-177 MiB for about 10 % more.
 *
 * The flag replaces V8's own factor (its memory-pressure modes still lower it), so it is set
 * only where V8's ceiling is above it: on a smaller heap (a container with 512 MiB, say) V8
 * already grows by at most 2 and is left alone. The flag is read at every full collection,
 * so setting it at start, before the heap has grown, acts as passing it to node; node
 * refuses it in NODE_OPTIONS, hence this setting. A `--heap-growing-percent` given to node
 * itself wins.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** V8's heap limit from which its own growing factor may reach 4 (x64, 2 GiB). */
export const LARGE_HEAP_LIMIT_BYTES = 2 * 1024 ** 3;

/** Applies `percent` (0: leave V8's own factor); returns what was applied, or null. */
export function limitHeapGrowth(
  percent: number,
  o: { execArgv?: readonly string[]; heapLimitBytes?: number } = {},
): number | null {
  if (percent === 0) return null;
  const execArgv = o.execArgv ?? process.execArgv;
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return null;
  if ((o.heapLimitBytes ?? getHeapStatistics().heap_size_limit) < LARGE_HEAP_LIMIT_BYTES) return null;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
