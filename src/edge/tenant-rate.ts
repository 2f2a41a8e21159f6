/**
 * INTERFACE §9.2 `SERVICE_TENANT_RATE_PER_S`: requests per second per tenant on tenant
 * routes, across this node, with a burst of twice the rate. One GCRA number per tenant
 * (the theoretical arrival time of the next request), so a tenant costs 16 bytes and one
 * tenant's flood never touches another's allowance. Pure apart from the clock parameter.
 */

export type RateDecision = { ok: true } | { ok: false; retryAfterMs: number };

/** Tenants remembered at most; an idle tenant's entry is worth nothing once its burst refilled. */
const MAX_TENANTS = 100_000;

export function createTenantRate(ratePerS: number, now: () => number = Date.now) {
  const intervalMs = 1000 / ratePerS;
  const burstMs = (2 * ratePerS - 1) * intervalMs;
  const tat = new Map<string, number>();

  return {
    take(tenantId: string): RateDecision {
      const t = now();
      const base = Math.max(tat.get(tenantId) ?? t, t);
      const waitMs = base - burstMs - t;
      if (waitMs > 0) return { ok: false, retryAfterMs: waitMs };
      // Re-inserted so the map's order is least recently used first.
      tat.delete(tenantId);
      if (tat.size >= MAX_TENANTS) tat.delete(tat.keys().next().value as string);
      tat.set(tenantId, base + intervalMs);
      return { ok: true };
    },
  };
}
