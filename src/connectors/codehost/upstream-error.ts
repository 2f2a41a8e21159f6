/**
 * Classifies what Octokit throws into the service's coded errors (STYLE.md: each connector
 * classifies its SDK's errors, with the upstream message). GitHub's rate-limit rules
 * (docs "Rate limits for the REST API"): 429, or 403 with `retry-after`, with
 * `x-ratelimit-remaining: 0`, or a "secondary rate limit" message, means wait; with no
 * `retry-after`, wait until `x-ratelimit-reset`, and at least a minute. Whether a failure
 * is worth retrying is then `isRetryable` (errors.ts), read from the status recorded here.
 */
import { AppError, RateLimited, UpstreamError } from '../../errors.js';

export interface UpstreamFailure {
  /** HTTP status, or null when GitHub was not reached (DNS, refused, timeout). */
  status: number | null;
  message: string;
  headers: Record<string, string | undefined>;
}

/** spec: without `retry-after`, at least 60 s of backoff. */
export const MIN_RATE_LIMIT_WAIT_S = 60;

export function describeUpstream(err: unknown): UpstreamFailure {
  const e = err as { status?: unknown; message?: unknown; response?: { headers?: unknown; data?: unknown } };
  const response = e?.response;
  const headers = (response?.headers ?? {}) as Record<string, string | undefined>;
  const data = response?.data as { message?: unknown } | undefined;
  const dataMessage = typeof data?.message === 'string' ? data.message : null;
  const message = dataMessage ?? (typeof e?.message === 'string' ? e.message : String(err));
  // Octokit reports a failed fetch as status 500 without a response.
  const status = response && typeof e.status === 'number' ? e.status : null;
  return { status, message: message.slice(0, 500), headers };
}

/** Seconds to hold writes when the failure is a rate limit, else null. */
function rateLimitWaitS(f: UpstreamFailure, nowMs: number): number | null {
  const remaining = f.headers['x-ratelimit-remaining'];
  const isLimit =
    f.status === 429 ||
    (f.status === 403 &&
      (f.headers['retry-after'] !== undefined || remaining === '0' || /rate limit/i.test(f.message)));
  if (!isLimit) return null;
  const retryAfter = Number(f.headers['retry-after']);
  if (Number.isFinite(retryAfter) && retryAfter > 0) return Math.ceil(retryAfter);
  const reset = Number(f.headers['x-ratelimit-reset']);
  const untilReset = remaining === '0' && Number.isFinite(reset) ? Math.ceil(reset - nowMs / 1000) : 0;
  return Math.max(MIN_RATE_LIMIT_WAIT_S, untilReset);
}

/** The coded error for a failed GitHub call; `what` names the call for the message. */
export function toUpstreamError(err: unknown, what: string, nowMs = Date.now()): AppError {
  if (err instanceof AppError) return err;
  const f = describeUpstream(err);
  const details = { upstream_status: f.status };
  const wait = rateLimitWaitS(f, nowMs);
  if (wait !== null)
    return new RateLimited(`GitHub rate limit on ${what}: ${f.message}`, wait, { details, cause: err });
  if (f.status === null)
    return new UpstreamError(`GitHub unreachable on ${what}: ${f.message}`, { details, cause: err });
  return new UpstreamError(`GitHub answered ${f.status} on ${what}: ${f.message}`, { details, cause: err });
}

/** The upstream HTTP status an error carries (null when none or unknown). */
export function upstreamStatusOf(err: unknown): number | null {
  if (err instanceof AppError) {
    const s = err.details?.upstream_status;
    return typeof s === 'number' ? s : null;
  }
  return describeUpstream(err).status;
}
