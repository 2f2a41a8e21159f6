/**
 * What the repo indexer session needs from outside (Postgres, the router, the daemon URL
 * template, installation tokens) and its timings: the spec's 5-minute lock (§8), polling,
 * and the automatic retry of a failed index (`index-outcome.ts`).
 */
import type pg from 'pg';
import type { ActorAsk } from '../../runtime/ports.js';
import type { Logger } from '../../log.js';
import { DEFAULT_RETRY_POLICY } from '../../connectors/codehost/indexer/index-outcome.js';
import type { Install } from '../../store/installs.js';

export interface IndexerTimings {
  /** index/sync and index/status. */
  rpcTimeoutMs: number;
  /** tools/call (slash commands). */
  toolTimeoutMs: number;
  firstPollMs: number;
  maxPollMs: number;
  /** spec §8: the 5-minute default lock, extended on every poll while indexing. */
  lockMs: number;
  /** First automatic retry of a failed index (doubling from there). */
  retryBaseMs: number;
  /** Longest wait between automatic retries. */
  retryMaxMs: number;
  /** Automatic retries in a row before the session waits for a push or slash command. */
  maxRetries: number;
}

export const DEFAULT_INDEXER_TIMINGS: IndexerTimings = {
  rpcTimeoutMs: 15_000,
  toolTimeoutMs: 20_000,
  firstPollMs: 2_000,
  maxPollMs: 30_000,
  lockMs: 5 * 60_000,
  retryBaseMs: DEFAULT_RETRY_POLICY.baseMs,
  retryMaxMs: DEFAULT_RETRY_POLICY.maxMs,
  maxRetries: DEFAULT_RETRY_POLICY.maxRetries,
};

export interface IndexerSessionPorts {
  pool: pg.Pool;
  log: Logger;
  actors: ActorAsk;
  /** `{namespace}/{node}`: the deployment and node that hold a running index's lock. */
  lockOwner: string;
  /** SERVICE_INDEXER_DAEMON_URL_TEMPLATE; null while unset. */
  template: string | null;
  /** SERVICE_REPO_CAP_PER_TENANT. */
  repoCap: number;
  /** A fresh installation token for the daemon's clone (INTERFACE §6: never stored here). */
  accessToken(install: Install, signal: AbortSignal): Promise<string>;
  timings?: Partial<IndexerTimings>;
  now?: () => number;
  /** The retry backoff's draw, in [0, 1) (default Math.random): a test fixes it. */
  random?: () => number;
}
