/**
 * INTERFACE §9.3: "when Postgres or NATS does not answer, a request waits at most 2 s for it
 * and then answers 503". One budget per request, not per query: the edge enters a
 * `WaitBudget` for each request (edge/app.ts) and every wait on Postgres or NATS made while
 * serving it (a pool's connection, each statement, a JetStream publish) is bounded by what
 * is left of it and spends what it took. Two statements of 1.5 s each answer 503 at 2 s, not
 * 4 s after two per-statement timeouts.
 *
 * Only those waits spend it: reading the request body, an upstream platform's answer, an
 * emit waiting for its workspace token or a change feed held for news take what they take,
 * under bounds of their own. Waits made outside a request (ingest, actors, walkers) have no
 * budget and keep their own bounds. A budget is closed when its request ends, so work a
 * request started and left running (a cache refresh) is never cut by a budget spent long ago.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Unavailable } from './errors.js';

/** INTERFACE §9.3: what a request may wait for Postgres or NATS in all. */
export const REQUEST_WAIT_MS = 2_000;

/**
 * The timers that bound a wait (setTimeout, pg's `query_timeout`) count whole milliseconds, and
 * one fires up to 1 ms before performance.now() says its delay passed: a wait cut at what was
 * left measures a fraction of a millisecond short of it. A remainder under this bounds no wait
 * (a bound is at least 1 ms), so it counts as spent.
 */
const TIMER_RESOLUTION_MS = 1;

export class WaitBudget {
  private spent = 0;
  private open = true;

  constructor(readonly limitMs: number = REQUEST_WAIT_MS) {}

  /** What the request may still wait, in ms (0 when spent). */
  leftMs(): number {
    const left = this.limitMs - this.spent;
    return left < TIMER_RESOLUTION_MS ? 0 : left;
  }

  /** Counts a wait that took `ms`. */
  spend(ms: number): void {
    this.spent += Math.max(0, ms);
  }

  get spentMs(): number {
    return this.spent;
  }

  /** The request has ended: whatever it left running is no longer bounded by it. */
  close(): void {
    this.open = false;
  }

  get isOpen(): boolean {
    return this.open;
  }
}

const current = new AsyncLocalStorage<WaitBudget | undefined>();

/** Runs `fn` (and everything it awaits) with `budget` bounding its waits. */
export function runWithWaitBudget<T>(budget: WaitBudget, fn: () => T): T {
  return current.run(budget, fn);
}

/** Runs `fn` with no request budget: work that must not end with the request's (an audit entry). */
export function outsideWaitBudget<T>(fn: () => T): T {
  return current.run(undefined, fn);
}

/** The running request's budget while it is open, else null. */
export function currentWaitBudget(): WaitBudget | null {
  const b = current.getStore();
  return b && b.isOpen ? b : null;
}

/** The 503 of a request whose budget is spent. */
export function budgetSpent(what: string, budget: WaitBudget): Unavailable {
  return new Unavailable(`${what} did not answer within the request's ${budget.limitMs / 1000} s; retry`, {
    retryAfterS: 1,
    details: { waited_ms: Math.round(budget.spentMs) },
  });
}

/**
 * A wait's own bound, cut to what the running request has left: `ownMs` outside a request.
 * Throws the 503 when the request has nothing left.
 */
function boundedWaitMs(ownMs: number, what: string): number {
  const budget = currentWaitBudget();
  if (!budget) return ownMs;
  const left = budget.leftMs();
  if (left <= 0) throw budgetSpent(what, budget);
  return Math.min(ownMs, left);
}

/**
 * Awaits `wait` (started with the bound `boundedWaitMs` gives) and spends what it took from
 * the running request's budget.
 */
export async function spending<T>(start: (timeoutMs: number) => Promise<T>, ownMs: number, what: string): Promise<T> {
  const budget = currentWaitBudget();
  const timeoutMs = boundedWaitMs(ownMs, what);
  if (!budget) return start(timeoutMs);
  const began = performance.now();
  try {
    return await start(timeoutMs);
  } finally {
    budget.spend(performance.now() - began);
  }
}

/**
 * Waits for `work` at most what the request has left, spending it; past that the request goes
 * on and `work` finishes on its own (an audit entry written once Postgres answers). True when
 * it ended in time.
 */
export async function awaitWithinBudget(work: Promise<unknown>): Promise<boolean> {
  const budget = currentWaitBudget();
  if (!budget) {
    await work;
    return true;
  }
  const began = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), budget.leftMs());
      }),
    ]);
  } finally {
    clearTimeout(timer);
    budget.spend(performance.now() - began);
  }
}
