/**
 * Start-up JetStream requests (stream, consumer and bucket creation) retried while a NATS
 * cluster is still settling (INTERFACE §9.2 `SERVICE_NATS_REPLICAS`).
 *
 * Right after a cluster starts, or after a server died, the JetStream meta leader may not
 * be elected yet and a replicated stream may not have its leader: requests then time out,
 * find no responder ("jetstream is not enabled") or answer "cluster not available". On a
 * 3-node nats-server 2.9.10 cluster two nodes starting at once failed their start with
 * "timeout" this way. These answers are retried with a growing pause for about 10 s, each
 * attempt logged at warn; any other error (a refusal, a wrong configuration) and the last
 * transient one are thrown as they are.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import type { Logger } from '../log.js';
import { retrying } from '../backoff.js';
import { systemClock } from './clock.js';

/** How long a start-up request is retried; a cluster elects its leaders within a few seconds. */
const JS_ADMIN_RETRY_MS = 10_000;
const PAUSES = { firstMs: 250, capMs: 2_000 };

/** JetStream API codes of a cluster that is electing: 10008 cluster not available, 10005 no peers yet. */
const SETTLING_CODES = new Set([10008, 10005]);
const SETTLING_NAMES = new Set(['TimeoutError', 'JetStreamNotEnabled', 'NoResponders']);

/** True for the answers of a cluster that is still electing its leaders. */
export function isSettlingError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (SETTLING_NAMES.has(e.name)) return true;
    if (e instanceof JetStreamApiError && SETTLING_CODES.has(e.code)) return true;
  }
  return false;
}

/** Run `fn` (an idempotent create-or-bind) until it succeeds, retrying settling errors for up to `budgetMs`. */
export async function retryJsAdmin<T>(
  what: string,
  fn: () => Promise<T>,
  log: Logger,
  budgetMs = JS_ADMIN_RETRY_MS,
): Promise<T> {
  return retrying(() => fn(), {
    policy: PAUSES,
    retryable: isSettlingError,
    deadlineMs: Date.now() + budgetMs,
    clock: systemClock,
    onRetry: (err, attempt, retryInMs) =>
      log.warn({ err, attempt, what, retryInMs }, 'JetStream not answering yet (cluster electing?); retrying'),
  });
}
