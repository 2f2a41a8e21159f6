/**
 * A warning a flood must not turn into a flood of lines: `tally(say)` counts one occurrence
 * and calls `say(count)` at most once per `everyMs`, with how many occurrences that line
 * stands for (the first one is told at once). Counting for metrics stays with the caller.
 */
export function logEvery(everyMs: number, now: () => number = Date.now): (say: (count: number) => void) => void {
  let lastAt = -Infinity;
  let count = 0;
  return (say) => {
    count++;
    if (now() - lastAt < everyMs) return;
    say(count);
    lastAt = now();
    count = 0;
  };
}
