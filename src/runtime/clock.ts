/**
 * Real time for whatever schedules (tickers, idle passivation, buckets, leases, effect
 * retries): the `Clock` contract is in ports.ts, and tests hand a manual clock instead
 * (test/support/clock.ts) so nothing sleeps.
 */
import type { Clock } from './ports.js';

/** A pending timer must not keep a stopping process alive (the work resumes elsewhere). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
