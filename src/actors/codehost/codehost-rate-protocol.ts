/**
 * The contract of the codehost-rate actor (codehost-rate.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';
import type { Take } from '../../connectors/codehost/backfill/rate-gate.js';

export const CODEHOST_RATE_KIND = 'codehost-rate';

export interface RateReport {
  observed?: { limit: number; remaining: number; resetAtMs: number } | null;
  /** A 403/429 rate limit answered: seconds from its retry-after (null: none given). */
  limitedForS?: number | null;
}

/** `take` charges one page; `report` folds in what GitHub said without charging. */
export type CodehostRateProtocol = {
  take: { msg: { report?: RateReport }; answer: Take };
  report: { msg: { report?: RateReport }; answer: { pausedUntilMs: number } };
};

export function codehostRateKey(githubInstallationId: string | number): KeyOf<CodehostRateProtocol> {
  return { kind: CODEHOST_RATE_KIND, id: [String(githubInstallationId)] };
}
