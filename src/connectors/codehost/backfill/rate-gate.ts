/**
 * The `github_general` bucket of one GitHub installation (spec §3.2, §8): the backfill
 * charges it once per page. Pure arithmetic on a plain state object, so the rate actor
 * (`actors/codehost-rate.ts`) can keep it in KV and tests can drive it with a fake clock.
 *
 * - Sized from the installation's real limit: `x-ratelimit-limit` per hour, at least 5000
 *   (GitHub's floor for App installations). Refill is that limit spread over the hour;
 *   the burst is one minute's worth, so a backfill never spends the hour in one go.
 * - The observed `x-ratelimit-remaining` / `x-ratelimit-reset` win over the estimate:
 *   once remaining falls to the reserve left for live traffic (PR summaries, slash
 *   replies, emits), the gate stays shut until the reset.
 * - A 403/429 secondary limit shuts the gate for its `retry-after`, or 60 s when it gives
 *   none (GitHub's docs: "wait for at least one minute").
 */

const MIN_HOURLY_LIMIT = 5000;
const SECONDARY_PAUSE_MIN_S = 60;
/** Share of the hourly limit the backfill leaves to live traffic. */
const RESERVE_FRACTION = 0.1;

export interface RateGateState {
  /** Requests per hour (observed, floored at 5000). */
  limit: number;
  tokens: number;
  refilledAtMs: number;
  /** Last observed remaining, less what was taken since; null when unknown or past its reset. */
  remaining: number | null;
  resetAtMs: number | null;
  pausedUntilMs: number;
}

export type Take = { ok: true } | { ok: false; retryAfterMs: number; reason: 'paused' | 'budget' | 'bucket' };

export function newGate(nowMs: number, limit = MIN_HOURLY_LIMIT): RateGateState {
  const l = Math.max(MIN_HOURLY_LIMIT, limit);
  return { limit: l, tokens: capacity(l), refilledAtMs: nowMs, remaining: null, resetAtMs: null, pausedUntilMs: 0 };
}

export function capacity(limit: number): number {
  return Math.max(1, Math.floor(limit / 60));
}

function perMs(limit: number): number {
  return limit / 3_600_000;
}

export function reserveOf(limit: number): number {
  return Math.ceil(limit * RESERVE_FRACTION);
}

/** Charge one request (one page) if the gate is open; otherwise say how long to wait. */
export function take(s: RateGateState, nowMs: number): Take {
  if (nowMs < s.pausedUntilMs) return { ok: false, retryAfterMs: s.pausedUntilMs - nowMs, reason: 'paused' };
  if (s.resetAtMs !== null && nowMs >= s.resetAtMs) {
    // The upstream window rolled over: the old remaining says nothing any more.
    s.remaining = null;
    s.resetAtMs = null;
  }
  if (s.remaining !== null && s.resetAtMs !== null && s.remaining <= reserveOf(s.limit)) {
    return { ok: false, retryAfterMs: Math.max(1, s.resetAtMs - nowMs), reason: 'budget' };
  }
  refill(s, nowMs);
  if (s.tokens < 1) return { ok: false, retryAfterMs: Math.ceil((1 - s.tokens) / perMs(s.limit)), reason: 'bucket' };
  s.tokens -= 1;
  if (s.remaining !== null) s.remaining -= 1;
  return { ok: true };
}

/** Fold in the rate headers of a response. Observations of several walkers may arrive out of order. */
export function observe(
  s: RateGateState,
  o: { limit: number; remaining: number; resetAtMs: number },
  nowMs: number,
): void {
  if (!Number.isFinite(o.limit) || !Number.isFinite(o.remaining) || !Number.isFinite(o.resetAtMs)) return;
  refill(s, nowMs);
  const limit = Math.max(MIN_HOURLY_LIMIT, Math.floor(o.limit));
  if (limit !== s.limit) {
    s.limit = limit;
    s.tokens = Math.min(s.tokens, capacity(limit));
  }
  if (o.resetAtMs <= nowMs) return;
  if (s.resetAtMs === null || o.resetAtMs > s.resetAtMs) {
    s.resetAtMs = o.resetAtMs;
    s.remaining = Math.max(0, Math.floor(o.remaining));
  } else if (o.resetAtMs === s.resetAtMs) {
    s.remaining = Math.min(s.remaining ?? Number.POSITIVE_INFINITY, Math.max(0, Math.floor(o.remaining)));
  }
}

/** A secondary (or primary) limit answered: shut the gate for its `retry-after`, else 60 s. */
export function pause(s: RateGateState, retryAfterS: number | null, nowMs: number): void {
  const given = retryAfterS !== null && Number.isFinite(retryAfterS) && retryAfterS > 0;
  const seconds = given ? retryAfterS : SECONDARY_PAUSE_MIN_S;
  s.pausedUntilMs = Math.max(s.pausedUntilMs, nowMs + seconds * 1000);
}

function refill(s: RateGateState, nowMs: number): void {
  const elapsed = Math.max(0, nowMs - s.refilledAtMs);
  s.tokens = Math.min(capacity(s.limit), s.tokens + elapsed * perMs(s.limit));
  s.refilledAtMs = Math.max(s.refilledAtMs, nowMs);
}
