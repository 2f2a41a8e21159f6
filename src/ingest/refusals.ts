/**
 * What the NATS fence (INTERFACE §9.4, runtime/seal.ts) says when it refuses ingest messages,
 * bounded however many arrive. A JetStream consumer never learns which client published a
 * message, so the subject (shard, connector, install id) stands for the sender: the first
 * refusal of a subject is logged, once per window, for at most `maxSubjects` subjects a
 * window; everything else is counted and told in one summary line when the window ends.
 * A flood of forged messages thus writes at most `maxSubjects` + 1 lines a minute, where it
 * wrote one line per message and per redelivery (issue 32: 136 lines for three messages).
 */
import type { Logger } from '../log.js';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/ports.js';

export interface RefusalLogOptions {
  log: Logger;
  /** Counted once per refused message (metrics). */
  onRefused?: () => void;
  /** Default 60 s. */
  windowMs?: number;
  /** Subjects named one by one in a window; default 10. */
  maxSubjects?: number;
  clock?: Clock;
}

const WHY = 'something other than this deployment publishes on its ingest subjects';

export class RefusalLog {
  private readonly seen = new Set<string>();
  /** Refusals of this window not told yet (not the first of their subject, or past `maxSubjects`). */
  private untold = 0;
  private windowEnds = 0;
  private timer: unknown = null;
  private readonly clock: Clock;

  constructor(private readonly o: RefusalLogOptions) {
    this.clock = o.clock ?? systemClock;
  }

  /** One refused message on `subject`. */
  refused(subject: string): void {
    this.o.onRefused?.();
    const now = this.clock.now();
    if (now >= this.windowEnds) this.endWindow(now);
    if (!this.seen.has(subject) && this.seen.size < (this.o.maxSubjects ?? 10)) {
      this.seen.add(subject);
      this.o.log.warn({ subject }, `ingest message without a valid seal refused: ${WHY}`);
      return;
    }
    this.untold++;
    this.timer ??= this.clock.setTimeout(() => this.endWindow(this.clock.now()), this.windowEnds - now);
  }

  /** Tell what the window left untold; a new window starts. */
  private endWindow(now: number): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.untold > 0) {
      this.o.log.warn(
        { refused: this.untold, windowS: Math.round((this.o.windowMs ?? 60_000) / 1000) },
        `more ingest messages without a valid seal refused in the last window: ${WHY}`,
      );
    }
    this.untold = 0;
    this.seen.clear();
    this.windowEnds = now + (this.o.windowMs ?? 60_000);
  }
}
