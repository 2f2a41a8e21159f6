/**
 * Slack SDK errors classified into the service's vocabulary (STYLE.md "Errors": each
 * connector classifies its SDK's errors into retryable / terminal with the upstream
 * message). Expected outcomes the callers branch on (`not_in_channel`, a dead token,
 * `already_reacted`) are read with `platformError`.
 */
import { ErrorCode, type WebAPIHTTPError, type WebAPIPlatformError, type WebAPIRateLimitedError } from '@slack/web-api';
import { AppError, DeadlineExceeded, isRetryable, RateLimited, UpstreamError } from '../../errors.js';

/** INTERFACE §8.3: the codes that mean "this token is already dead". */
export const DEAD_TOKEN_ERRORS = new Set([
  'token_revoked',
  'invalid_auth',
  'account_inactive',
  'token_expired',
  'not_authed',
]);

/**
 * Platform error codes that say Slack itself failed, not that it refused the call: retried
 * (an UpstreamError without `upstream_error`). Every other code is a refusal that a retry
 * cannot mend (`isRetryable`, errors.ts): `channel_not_found`, `invalid_arguments`, a dead
 * token.
 */
const TRANSIENT_PLATFORM_ERRORS = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);

const codeOf = (err: unknown): unknown => (err && typeof err === 'object' && 'code' in err ? err.code : undefined);

/** The `error` field of an `ok:false` answer (HTTP 200), or null for any other failure. */
export function platformError(err: unknown): string | null {
  if (codeOf(err) !== ErrorCode.PlatformError) return null;
  const data = (err as WebAPIPlatformError).data;
  return typeof data?.error === 'string' ? data.error : 'unknown_error';
}

/** Seconds Slack asked us to wait (HTTP 429), or null. */
export function rateLimitedFor(err: unknown): number | null {
  if (codeOf(err) !== ErrorCode.RateLimitedError) return null;
  const s = (err as WebAPIRateLimitedError).retryAfter;
  return Number.isFinite(s) && s > 0 ? s : 1;
}

export function isDeadToken(err: unknown): boolean {
  const e = platformError(err);
  return e !== null && DEAD_TOKEN_ERRORS.has(e);
}

/**
 * Any throw of a Web API call as an AppError: 429 → RateLimited with Slack's
 * Retry-After (INTERFACE §8.4), an abort at our deadline → DeadlineExceeded, everything
 * else → UpstreamError (502) carrying Slack's error code (terminal, unless it is one of
 * Slack's own failures), never the token.
 */
export function toSlackAppError(err: unknown, method: string, signal?: AbortSignal): AppError {
  if (err instanceof AppError) return err;
  const retryAfter = rateLimitedFor(err);
  if (retryAfter !== null)
    return new RateLimited(`Slack rate-limited ${method}; retry after ${retryAfter} s`, retryAfter, { cause: err });
  if (signal?.aborted) return new DeadlineExceeded(`${method} did not finish before the deadline`, { cause: err });
  const upstream = platformError(err);
  if (upstream !== null && TRANSIENT_PLATFORM_ERRORS.has(upstream))
    return new UpstreamError(`Slack failed ${method}: ${upstream}`, { cause: err });
  if (upstream !== null) {
    return new UpstreamError(`Slack refused ${method}: ${upstream}`, {
      cause: err,
      details: { upstream_error: upstream },
    });
  }
  if (codeOf(err) === ErrorCode.HTTPError) {
    const status = (err as WebAPIHTTPError).statusCode;
    return new UpstreamError(`Slack answered ${method} with HTTP ${status}`, {
      cause: err,
      details: { upstream_status: status },
    });
  }
  return new UpstreamError(`Slack is unreachable for ${method}: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
  });
}

/**
 * A failed Web API call of a walker (backfill, catch-up, name lookups) as an outcome value,
 * sorted by the one rule: `toSlackAppError` then `isRetryable` (errors.ts), as the effects
 * and emits are. `refused`: a retry cannot mend it (give up, or skip what it names);
 * `transient`: Slack's own failure, a 5xx or the network (wait and try again).
 */
export type SlackFailure =
  | { ok: false; kind: 'rate_limited'; retryAfterMs: number }
  | { ok: false; kind: 'dead_token'; error: string }
  | { ok: false; kind: 'refused'; error: string }
  | { ok: false; kind: 'transient'; error: string };

export function slackFailure(err: unknown, method: string): SlackFailure {
  const retryAfterS = rateLimitedFor(err);
  if (retryAfterS !== null) return { ok: false, kind: 'rate_limited', retryAfterMs: retryAfterS * 1000 };
  const upstream = platformError(err);
  if (upstream !== null && DEAD_TOKEN_ERRORS.has(upstream)) return { ok: false, kind: 'dead_token', error: upstream };
  const coded = toSlackAppError(err, method);
  const error = upstream ?? coded.message;
  return isRetryable(coded) ? { ok: false, kind: 'transient', error } : { ok: false, kind: 'refused', error };
}
