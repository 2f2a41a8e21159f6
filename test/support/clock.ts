/**
 * A clock that moves only when the test says so (runtime/ports.ts `Clock`): hand it to a
 * ticker, bucket or token cache instead of sleeping on the real one. `advance` runs every
 * timer that falls due, in order, letting promises they start settle in between.
 */
import type { Clock } from '../../src/runtime/ports.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, Timer>();

  constructor(start = 1_700_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const seq = ++this.seq;
    this.timers.set(seq, { at: this.t + Math.max(0, ms), seq, fn });
    return seq;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time on by `ms`, running each timer that falls due at its own moment. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.timers.values()].filter((x) => x.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers.delete(next.seq);
      this.t = next.at;
      next.fn();
      await settle();
    }
    this.t = end;
    await settle();
  }
}

/** Lets already-resolved promise chains run (a fired tick's `fire()` and its `catch`). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
