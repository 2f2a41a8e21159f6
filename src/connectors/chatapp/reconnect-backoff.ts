/**
 * Socket Mode reconnect delays (spec §5): exponential from 1 s to 60 s with full jitter,
 * i.e. a uniform draw in [0, min(60 s, 1 s × 2^attempt)], so a fleet of nodes that lost
 * Slack together does not come back in lockstep (backoff.ts, the one retry policy).
 */
import { backoffMs } from '../../backoff.js';

const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_CAP_MS = 60_000;

/** `attempt` counts consecutive failures from 0; `random` is in [0, 1). */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  return backoffMs({ firstMs: RECONNECT_BASE_MS, capMs: RECONNECT_CAP_MS }, attempt + 1, random);
}
