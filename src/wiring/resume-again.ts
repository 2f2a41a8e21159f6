/**
 * Resumes that failed on a shard acquisition (NATS or Postgres briefly away during a
 * takeover, an ask that timed out) are tried once more, off the acquisition path, after a
 * wait on backoff.ts's policy: jittered, so nodes that took shards over together do not ask
 * again in step. After that the resume sweep (node/resume-sweep.ts) takes over, within a
 * minute. Every failure is tried again: a resume asks nothing upstream, so what fails is
 * the router or the actor's activation, which trying again may fix.
 */
import { backoffMs, type BackoffPolicy } from '../backoff.js';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/ports.js';

/** The one wait before trying again: 2.5 to 5 s (a floor, so a dependency briefly away has time to come back). */
const RESUME_RETRY: BackoffPolicy = { firstMs: 5_000, capMs: 5_000, minMs: 2_500 };

/**
 * Tries `resume` once more for each of `ids` after the policy's first wait; resolves with
 * the ids that failed again.
 */
export function resumeAgain<T>(
  ids: readonly T[],
  resume: (id: T) => Promise<unknown>,
  o: { clock?: Clock; random?: () => number } = {},
): Promise<T[]> {
  const clock = o.clock ?? systemClock;
  return new Promise((resolve) => {
    clock.setTimeout(
      () => {
        void Promise.allSettled(ids.map((id) => resume(id))).then((again) =>
          resolve(ids.filter((_, i) => again[i]!.status === 'rejected')),
        );
      },
      backoffMs(RESUME_RETRY, 1, o.random),
    );
  });
}
