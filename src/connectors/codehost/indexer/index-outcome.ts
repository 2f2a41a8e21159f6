/**
 * What an index outcome writes to its `repo_index_state` row (INTERFACE §6), for the repo
 * indexer session (actors/indexer-session.ts): `ready`, `failed` with the next automatic
 * retry, or no longer followed because the install is not active.
 *
 * Retries (docs/graph.md, the indexer): a failed index is tried again automatically after a backoff that
 * starts at `baseMs` (1 minute) and doubles up to `maxMs` (1 hour), with full jitter
 * (backoff.ts: a random point below the ceiling) so the daemons of many repos that failed together do not
 * all come back at once; at most `maxRetries` times in a row. A push, a slash command or a
 * repo added again still sync at any time; a `ready` index resets the count.
 */
import { backoffMs } from '../../../backoff.js';
import type { IndexStatePatch } from '../../../store/repo-index-state.js';

export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  maxRetries: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({ baseMs: 60_000, maxMs: 60 * 60_000, maxRetries: 10 });

/**
 * The wait before retry number `attempt` (1 = the first retry after a failure), or null
 * when the policy gives up. `random` is in [0, 1).
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number | null {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > policy.maxRetries) return null;
  return backoffMs({ firstMs: policy.baseMs, capMs: policy.maxMs }, attempt, random);
}

/** Indexed at `sha`: the lock is released and the retry count starts over. */
export function readyPatch(sha: string | null, nowMs: number): IndexStatePatch {
  return {
    status: 'ready',
    error: null,
    lock_owner: null,
    lock_expires_at: null,
    last_indexed_sha: sha,
    indexed_at: nowMs,
    retries: 0,
    retry_at: null,
    retry_owner: null,
  };
}

/**
 * Failed after `retriesBefore` failures in a row: the lock is released and the next retry
 * scheduled by `owner` (`{namespace}/{node}`), or none when the policy gave up.
 */
export function failedPatch(
  retriesBefore: number,
  error: string,
  o: { policy: RetryPolicy; owner: string; nowMs: number; random?: () => number },
): { patch: IndexStatePatch; retryInMs: number | null } {
  const retries = retriesBefore + 1;
  const wait = retryDelayMs(retries, o.policy, o.random);
  return {
    patch: {
      status: 'failed',
      error,
      lock_owner: null,
      lock_expires_at: null,
      retries,
      retry_at: wait === null ? null : o.nowMs + wait,
      retry_owner: wait === null ? null : o.owner,
    },
    retryInMs: wait,
  };
}

/** The install is no longer active: nothing holds the lock or will retry (INTERFACE §6 has no daemon stop call). */
export const UNFOLLOWED_PATCH: Readonly<IndexStatePatch> = Object.freeze({
  lock_owner: null,
  lock_expires_at: null,
  retry_at: null,
  retry_owner: null,
  error: 'the install is no longer active; its index is not followed',
});
