/**
 * The one way a test waits for another system (STYLE.md "Tests": poll for state with a
 * generous deadline, never sleep and then assert). `probe` is called until it answers
 * anything but `null`, `undefined` or `false`, and that answer is returned; past
 * `timeoutMs` the test fails naming `what` (and what `explain` adds). A probe that throws
 * fails the test at once (a process that exited while it was awaited, say).
 */
export interface UntilOptions {
  /** Default 10 s: generous, since the machine may be busy; a deadline is not a measurement. */
  timeoutMs?: number;
  /** Pause between probes; default 20 ms. */
  everyMs?: number;
  /** Added to the timeout's message: what was last seen (a state, a process's log tail). */
  explain?: () => string;
}

type Answer<T> = T | null | undefined | false;

export async function until<T>(
  what: string,
  probe: () => Answer<T> | Promise<Answer<T>>,
  opts: UntilOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > end) {
      const seen = opts.explain ? `\n${opts.explain()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 20));
  }
}
