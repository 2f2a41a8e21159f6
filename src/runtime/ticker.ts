/**
 * Self-scheduling for walker actors (backfill walkers of any connector). An activation
 * owns one `Ticker`; arming it replaces the pending tick, so there is never more than one
 * per activation, and the actor's `onPassivate` cancels it. When the tick fires it does
 * not call the actor locally: `fire` must send the tick through the router (an ask to the
 * actor's own key), so after a shard move the tick reaches the key's new owner, or
 * finds no responder and lets the new owner's resume take over (on acquisition, and the
 * node's resume sweep once a minute, src/node/resume-sweep.ts).
 *
 * Delays are capped at `maxDelayMs` so a long wait (a large Retry-After) wakes the actor
 * now and then; the tick handler re-checks what is due and re-arms, and each wake-up
 * keeps the activation from idling out with its walk unfinished.
 */
import { systemClock } from './clock.js';
import type { Clock } from './ports.js';

export interface Ticker {
  /** Fire once after `delayMs` (clamped to 0..maxDelayMs), replacing any pending tick. */
  arm(delayMs: number): void;
  /** Drop the pending tick, if any; later `arm` calls are ignored once `stop` was called. */
  cancel(): void;
  /** Cancel for good (passivation): the activation is going away. */
  stop(): void;
  /** Epoch ms of the pending tick, or null. */
  readonly dueAt: number | null;
}

export interface TickerOptions {
  /** Sends the tick through the router; its failure is reported, never thrown. */
  fire(): Promise<unknown>;
  onError(err: unknown): void;
  /** Default 5 minutes. */
  maxDelayMs?: number;
  clock?: Clock;
}

const DEFAULT_MAX_DELAY_MS = 5 * 60_000;

export function createTicker(opts: TickerOptions): Ticker {
  const clock = opts.clock ?? systemClock;
  const maxDelayMs = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  let timer: unknown;
  let dueAt: number | null = null;
  let stopped = false;

  const cancel = () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    dueAt = null;
  };

  return {
    arm(delayMs: number) {
      if (stopped) return;
      cancel();
      const wait = Math.min(maxDelayMs, Math.max(0, Number.isFinite(delayMs) ? Math.ceil(delayMs) : maxDelayMs));
      dueAt = clock.now() + wait;
      timer = clock.setTimeout(() => {
        timer = undefined;
        dueAt = null;
        opts.fire().catch((err: unknown) => opts.onError(err));
      }, wait);
    },
    cancel,
    stop() {
      stopped = true;
      cancel();
    },
    get dueAt() {
      return dueAt;
    },
  };
}
